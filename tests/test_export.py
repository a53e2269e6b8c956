"""Export / import (issue 13): an org moved to a fresh database answers every read the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from fabric import Fabric
from fabric.export import ExportFormatError, ImportRefused, export_org, import_org
from fabric.types import utcnow


def T(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, tzinfo=timezone.utc)


def put(fab, org, text, key, valid_from):
    s, r, v = key
    return fab.wait(fab.write(text, org=org, subject=s, relation=r, value=v, valid_from=valid_from), 60)


def build_history(fab: Fabric, org: str) -> list[datetime]:
    """Forks, a refinement, a duplicate, an out-of-order fact, a retraction and a revert; returns the
    moments between the steps (the known_at checkpoints)."""
    marks = [utcnow()]

    def mark():
        time.sleep(0.01)
        marks.append(utcnow())
        time.sleep(0.01)

    put(fab, org, "Ada Moreau works at Northwind.", ("Ada Moreau", "employer", "Northwind"), T(2021, 3))
    mark()
    ref = put(fab, org, "Ada Moreau works at Northwind on the payments team.",
              ("Ada Moreau", "employer", "Northwind"), T(2021, 3))
    assert ref.decision == "child_update"
    dup = put(fab, org, "Ada Moreau works at Northwind.", ("Ada Moreau", "employer", "Northwind"), T(2021, 3))
    assert dup.decision == "duplicate"
    mark()
    fork = put(fab, org, "Ada Moreau works at Contoso.", ("Ada Moreau", "employer", "Contoso"), T(2024, 6))
    assert fork.decision == "contradiction_fork"
    mark()
    late = put(fab, org, "Ada Moreau works at Fabrikam.", ("Ada Moreau", "employer", "Fabrikam"), T(2019))
    assert late.decision == "contradiction_fork" and late.out_of_order
    mark()
    city1 = put(fab, org, "Ben Okafor lives in Lagos.", ("Ben Okafor", "city", "Lagos"), T(2018))
    city2 = put(fab, org, "Ben Okafor lives in Accra.", ("Ben Okafor", "city", "Accra"), T(2022))
    assert city2.decision == "contradiction_fork"
    mark()
    fab.revert(city2.decision_id, org=org, reason="test: the move never happened")
    mark()
    fab.retract(ref.memory_id, org=org, reason="test: wrong team")
    mark()
    put(fab, org, "Cleo Tran likes sailing.", ("Cleo Tran", "hobby", "sailing"), T(2020))
    mark()
    assert city1.memory_id
    return marks


def answers(fab: Fabric, org: str, marks: list[datetime]) -> dict:
    """Every read of the org at several valid / known times, as plain data."""
    valid_times = [T(2018, 6), T(2020), T(2022, 6), T(2025), utcnow()]
    out: dict = {}
    for k, known in enumerate(marks):
        for v, valid in enumerate(valid_times):
            for s, r in (("Ada Moreau", "employer"), ("Ben Okafor", "city"), ("Cleo Tran", "hobby")):
                m = fab.current_value(s, r, org=org, valid_at=valid, known_at=known)
                out[f"current {s} {r} v{v} k{k}"] = m.to_dict() if m else None
            out[f"belief v{v} k{k}"] = sorted((m.to_dict() for m in fab.belief_state(
                org=org, valid_at=valid, known_at=known)), key=lambda d: str(d["id"]))
    for m in fab.belief_state(org=org, valid_at=T(2019, 6)) + fab.belief_state(org=org):
        out[f"history {m.id}"] = [h.to_dict() for h in fab.history(m.id, org=org)]
        out[f"walk {m.root_id}"] = [w.to_dict() for w in fab.walk(m.root_id, org=org, include_superseded=True)]
    out["decisions"] = [d for d in fab.decisions(org=org, limit=1000)]
    hits = fab.search("Where does Ada Moreau work?", org=org, k=5, include_superseded=True)
    out["search"] = [(h.id, round(h.score, 6)) for h in hits]
    return out


def test_export_import_round_trip_answers_every_read_the_same(fab, org, scratch_db, redis_url, tmp_path):
    marks = build_history(fab, org)
    before = answers(fab, org, marks)
    ada = {json.dumps(before[k], default=str) for k in before if k.startswith("current Ada")}
    assert len(ada) >= 4, "the checkpoints must see different answers (Northwind, Contoso, Fabrikam, none)"
    path = tmp_path / "org.jsonl"
    with fab.pool.connection() as conn, path.open("w") as out:
        counts = export_org(conn, org, out)
    assert counts["memories"] == 7 and counts["writes"] == 8 and counts["orgs"] == 1  # one write a duplicate
    assert counts["decisions"] == 8 + 2  # eight placements, a revert and a retraction
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + sum(counts.values())
    header = json.loads(lines[0])
    assert "search_text" not in header["tables"]["memories"]  # generated: recomputed on import
    assert "embedding" in header["tables"]["memories"]

    with Fabric.connect(scratch_db, redis_url, run_worker=False, queue_name="export-test") as target:
        with target.pool.connection() as conn, path.open() as f:
            imported = import_org(conn, f)
        assert imported == counts
        after = answers(target, org, marks)
        assert after.keys() == before.keys()
        for key in before:
            assert after[key] == before[key], key
        # Nothing half-imported, and no second import into the same org.
        with target.pool.connection() as conn, path.open() as f, pytest.raises(ImportRefused, match="already has rows"):
            import_org(conn, f)
        # Renamed on the way in: the same answers under another org.
        with target.pool.connection() as conn, path.open() as f:
            import_org(conn, f, org=org + "-copy")
        cur = target.current_value("Ada Moreau", "employer", org=org + "-copy", valid_at=T(2022), known_at=marks[2])
        assert cur.value == "Northwind"


def test_corrupt_lines_are_named_and_nothing_is_imported(fab, org, scratch_db, redis_url, tmp_path):
    put(fab, org, "Dina Sol speaks Basque.", ("Dina Sol", "language", "Basque"), T(2020))
    put(fab, org, "Dina Sol speaks Basque and Catalan.", ("Dina Sol", "language", "Basque"), T(2020))
    path = tmp_path / "org.jsonl"
    with fab.pool.connection() as conn, path.open("w") as out:
        export_org(conn, org, out)
    lines = path.read_text().splitlines()
    memory_line = next(i for i, line in enumerate(lines) if line.startswith('{"table": "memories"'))

    def attempt(mutated: list[str], match: str) -> None:
        with Fabric.connect(scratch_db, redis_url, run_worker=False, queue_name="export-test") as target:
            with target.pool.connection() as conn, pytest.raises(ExportFormatError, match=match):
                import_org(conn, mutated)
            with target.pool.connection() as conn:
                n = conn.execute("SELECT count(*) AS n FROM fabric.orgs WHERE org = %s", (org,)).fetchone()["n"]
            assert n == 0, "a failed import must leave nothing behind"

    broken = list(lines)
    broken[memory_line] = broken[memory_line][:40]
    attempt(broken, f"line {memory_line + 1}: not JSON")
    bad_uuid = list(lines)
    row = json.loads(bad_uuid[memory_line])
    row["row"]["parent_id"] = "not-a-uuid"
    bad_uuid[memory_line] = json.dumps(row)
    attempt(bad_uuid, f"line {memory_line + 1}: memories: invalid input syntax for type uuid")
    attempt(lines[:-1], "the file ends early")


def run_cli(*args: str, database_url: str, redis_url: str, data_dir: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=redis_url, FABRIC_DATA_DIR=str(data_dir),
               FABRIC_RUN_WORKER="false")
    fabric_cmd = str(Path(sys.executable).parent / "fabric")  # the venv's `fabric` command
    return subprocess.run([fabric_cmd, *args], env=env, capture_output=True, text=True,
                          timeout=240)


def test_cli_export_and_import(fab, org, database_url, scratch_db, redis_url, data_dir, tmp_path):
    put(fab, org, "Eli Ward drives a tram.", ("Eli Ward", "job", "tram driver"), T(2020))
    path = tmp_path / "cli.jsonl"
    done = run_cli("export", "--org", org, "--out", str(path), database_url=database_url, redis_url=redis_url,
                   data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    assert path.read_text().count("\n") == 1 + 1 + 1 + 1 + 1 + 1  # header, org, write, decision, memory, version
    done = run_cli("import", str(path), database_url=scratch_db, redis_url=redis_url, data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    assert "memories" in done.stdout
    with psycopg.connect(scratch_db) as conn:
        value = conn.execute("SELECT value FROM fabric_api.current_value(%s, 'Eli Ward', 'job')", (org,)).fetchone()
    assert value == ("tram driver",)
    path.write_text(path.read_text().replace('"table": "decisions"', '"table": "nope"'))
    done = run_cli("import", str(path), "--org", "other", database_url=scratch_db, redis_url=redis_url,
                   data_dir=data_dir)
    assert done.returncode == 2 and "line 4" in done.stderr and "not in the header" in done.stderr
    missing = run_cli("export", "--org", "no-such-org", "--out", str(tmp_path / "x.jsonl"),
                      database_url=database_url, redis_url=redis_url, data_dir=data_dir)
    # Not found (3), as `fabric decisions` / `stats` say it, in one line: no blank line from the bars.
    assert missing.returncode == 3
    assert missing.stderr == "not found: no org 'no-such-org': nothing was ever written to it\n"
    assert not (tmp_path / "x.jsonl").exists()
