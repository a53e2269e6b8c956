"""How long fabric takes to start: whole processes (interpreter start included) and
`Fabric.connect()` in-process, each the median of N runs, beside baselines measured in the same run.

    python scripts/start_time.py [--runs 7]

Uses DATABASE_URL / REDIS_URL, or the embedded servers in FABRIC_DATA_DIR (migrated first).
On a shared machine quote the CPU seconds as well as the wall seconds, with the load average."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def run_process(argv: list[str]) -> tuple[float, float]:
    """(wall s, cpu s) of one process, its children that it waited for included."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime


def timed_in_process(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def median_of(runs: int, measure) -> tuple[float, float]:
    measure()  # warm-up: page cache, embedded servers started
    samples = [measure() for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs

    from fabric import Fabric, db

    fabric_cmd = shutil.which("fabric") or sys.exit("the `fabric` command is not on PATH")
    with Fabric.connect(run_worker=False) as fab:  # starts / migrates the database the runs use
        url = fab.database_url
    head = db.head_revision() or sys.exit("the migration scripts do not name one head")

    def connect_only() -> None:
        Fabric.connect(run_worker=False).close()

    def connect_with_alembic() -> None:  # what every connect did before: a full Alembic run
        # A revision named, not "head": migrate() skips Alembic only for "head" at head.
        db.migrate(url, revision=head)
        Fabric.connect(run_worker=False, auto_migrate=False).close()

    rows = [
        ("python -c pass (baseline: the interpreter)", lambda: run_process([sys.executable, "-c", "pass"])),
        ("python -c 'import fabric'", lambda: run_process([sys.executable, "-c", "import fabric"])),
        ("fabric --help", lambda: run_process([fabric_cmd, "--help"])),
        ("fabric current SUBJECT RELATION", lambda: run_process([fabric_cmd, "current", "nobody", "employer"])),
        ("Fabric.connect() + close(), migrated database", lambda: timed_in_process(connect_only)),
        ("  the same with an Alembic run (baseline)", lambda: timed_in_process(connect_with_alembic)),
    ]
    print(f"median of {runs} runs; load average {os.getloadavg()[0]:.2f} at start")
    print(f"{'':48} {'wall s':>8} {'cpu s':>8}")
    for name, measure in rows:
        wall, cpu = median_of(runs, measure)
        print(f"{name:48} {wall:8.3f} {cpu:8.3f}")
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
