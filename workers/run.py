"""The worker entry point: `fabric worker` (or `python -m workers.run`).

A SimpleWorker (no fork per job: the embedding model stays loaded) on fabric's queue. It
reconciles on start and every `reconcile_interval` seconds, and, when started for a parent
process (the embedded default), exits when that parent is gone."""

from __future__ import annotations

import argparse
import logging
import os
import stat
import sys

from rq import SimpleWorker

from fabric import embedded, metrics
from fabric import queue as fq
from fabric.config import Settings
from fabric.db import make_pool, migrate
from fabric.write.placer import Placer

from . import jobs
from .reconcile import reconcile

log = logging.getLogger("workers.run")


class FabricWorker(SimpleWorker):
    """Adds the reconciler (and a parent-process check) to RQ's periodic maintenance."""

    fabric_reconcile = None
    parent_pid: int | None = None

    def run_maintenance_tasks(self):
        super().run_maintenance_tasks()
        if self.parent_pid and not _alive(self.parent_pid):
            log.info("parent process gone; worker exits")
            self.request_stop(None, None)
            return
        if self.fabric_reconcile is not None:
            try:
                self.fabric_reconcile()
            except Exception:  # the worker must outlive a failed reconcile pass
                log.exception("reconcile failed")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _drop_inherited_sockets() -> None:
    """Runs in every child forked from the worker (RQ's scheduler is one): close the sockets it
    inherited. Otherwise the child keeps the worker's Postgres sessions open after the worker dies,
    and a killed worker's transaction - with its locks - never ends. The child opens its own."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: scan the usual range
        fds = list(range(3, 1024))
    for fd in fds:
        if fd <= 2:
            continue
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fabric worker", description="Run a fabric placement worker.")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    parser.add_argument("--parent-pid", type=int, default=None, help="exit when this process is gone")
    parser.add_argument("--name", default=None, help="worker name (default: RQ's)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="serve Prometheus metrics on this port (default: FABRIC_METRICS_PORT)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("FABRIC_LOG_LEVEL", "WARNING"),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    return run(Settings.from_env(metrics_port=args.metrics_port), burst=args.burst, parent_pid=args.parent_pid,
               name=args.name)


def run(settings: Settings, *, burst: bool = False, parent_pid: int | None = None, name: str | None = None) -> int:
    os.register_at_fork(after_in_child=_drop_inherited_sockets)
    db_url, rd_url, db_emb, _ = embedded.resolve(settings.database_url, settings.redis_url, settings.data_dir)
    if db_emb:
        migrate(db_url, embedding_dim=settings.embedding_dim)
    pool = make_pool(db_url, min_size=1, max_size=2)
    placer = Placer(settings, pool)
    jobs.install(placer)
    conn = fq.connect(rd_url)
    queue = fq.make_queue(conn, settings.queue_name)
    if settings.metrics_port:
        metrics.serve(settings.metrics_port, pool=pool, redis_client=conn, org_label=settings.metrics_org_label)

    def do_reconcile() -> None:
        reconcile(pool, conn, queue, settings, grace=settings.reconcile_grace)

    do_reconcile()  # on start: pick up what was lost while no worker ran
    worker = FabricWorker([queue], connection=conn, name=name,
                          worker_ttl=max(settings.reconcile_interval + 15, 20),
                          maintenance_interval=settings.reconcile_interval)
    worker.fabric_reconcile = do_reconcile
    worker.parent_pid = parent_pid
    try:
        worker.work(burst=burst, logging_level=os.environ.get("FABRIC_LOG_LEVEL", "WARNING"),
                    with_scheduler=True)
    finally:
        pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
