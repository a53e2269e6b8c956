"""Placement in chunks (fabric/write/apply.py: place_locked): a write's candidates are read once per chunk
and brought up to date in memory with what its job-mates placed (`catch_up`). The decisions must be the
ones the database would give when asked afresh before every write."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import psycopg

from fabric.api import Fabric
from fabric.write import apply
from fabric.write.placer import Placer


def T(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=timezone.utc)


def stream() -> list[dict]:
    """Keyed facts changing value several times (each change supersedes the live version, often a
    neighbour of later writes), out-of-order history, repeats, added detail and unrelated notes."""
    items: list[dict] = []
    cities = ["Lisbon", "Tallinn", "Osaka", "Quito", "Bergen"]
    for n, name in enumerate(["Ada Moreau", "Bram Ilves", "Chen Wu"]):
        for step, city in enumerate(cities[n:] + cities[:n]):
            items.append({"content": f"{name} lives in {city}.", "subject": name, "relation": "home_city",
                          "value": city, "valid_from": T(2015 + step)})
        items.append({"content": f"{name} lives in {cities[n]}.", "subject": name, "relation": "home_city",
                      "value": cities[n], "valid_from": T(2012)})  # history before the first
        items.append({"content": f"{name} lives in {cities[n - 1]}.", "valid_from": T(2019)})  # a repeat, as text
        items.append({"content": f"{name} lives in {cities[n - 1]}, near the old harbour.", "valid_from": T(2020)})
        items.append({"content": f"{name} keeps bees on the roof.", "valid_from": T(2020)})
    items += [{"content": "The build farm runs on twelve runners.", "valid_from": T(2021)},
              {"content": "The build farm runs on twelve runners.", "valid_from": T(2021)},
              {"content": "The build farm now runs on twenty runners.", "valid_from": T(2023)}]
    return items


def placed(conn: psycopg.Connection, org: str) -> list[tuple]:
    """Per write, in order: its decision, the content of its target, and its memory's current version."""
    return conn.execute("""
        SELECT w.content, w.status, d.kind, t.content, v.state, v.valid_to, m.depth
        FROM fabric.writes w
        JOIN fabric.decisions d ON d.org = w.org AND d.id = w.decision_id
        LEFT JOIN fabric.memories t ON t.org = d.org AND t.id = d.target_id
        LEFT JOIN fabric.memories m ON m.org = w.org AND m.id = w.memory_id
        LEFT JOIN fabric.memory_versions v ON v.org = w.org AND v.memory_id = w.memory_id AND v.expired_at IS NULL
        WHERE w.org = %s ORDER BY w.received_at, w.id""", (org,)).fetchall()


def test_a_chunk_decides_as_if_the_database_were_asked_before_every_write(database_url, redis_url, monkeypatch):
    fab = Fabric.connect(database_url, redis_url, run_worker=False, auto_migrate=False,
                         queue_name=f"fabric-t-{uuid.uuid4().hex[:8]}")
    calls: list[int] = []
    gather = apply.gather_batch

    def counted(conn, writes, *args, **kwargs):
        calls.append(len(writes))
        return gather(conn, writes, *args, **kwargs)

    monkeypatch.setattr(apply, "gather_batch", counted)
    try:
        # Two neighbours only, so job-mates' supersessions leave some writes too few known candidates
        # (the database is asked again) and others enough (caught up in memory).
        placer = Placer(fab.settings.model_copy(update={"neighbours_k": 2}), fab.pool)
        results = {}
        for chunk in (len(stream()), 1):
            org = f"t-{uuid.uuid4().hex[:12]}"
            receipts = fab.write_many([{**item, "org": org} for item in stream()])
            monkeypatch.setattr(apply, "LOCKED_CHUNK", chunk)
            calls.clear()
            placer.place(org, [r.id for r in receipts])
            results[chunk] = (org, list(calls))
        with psycopg.connect(database_url) as conn:
            chunked, one_by_one = (placed(conn, results[c][0]) for c in (len(stream()), 1))
            # each write its own transaction time, in the order the writes came
            settled = [r[0] for r in conn.execute("SELECT settled_at FROM fabric.writes WHERE org = %s "
                                                  "ORDER BY received_at, id", (results[len(stream())][0],))]
    finally:
        fab.close()
    assert len(chunked) == len(stream())
    assert chunked == one_by_one
    assert all(a < b for a, b in zip(settled, settled[1:]))
    kinds = [row[2] for row in chunked]
    assert kinds.count("contradiction_fork") >= 9 and "duplicate" in kinds
    # The chunk read its candidates once for all, and again for a few writes only.
    assert results[1][1] == [1] * len(stream())
    assert results[len(stream())][1][0] == len(stream()) and len(results[len(stream())][1]) < len(stream()) // 2


def test_a_call_interleaving_orgs_gets_full_jobs_in_turns():
    from fabric.calls import plan_accept
    from fabric.types import WriteRequest

    reqs = [WriteRequest(content=f"fact {i}", org=f"org-{i % 4}") for i in range(300)]
    rows, jobs, orgs = plan_accept(reqs, 64)
    assert [r for _, r, _ in rows] == reqs  # receipts in the order of the call
    assert orgs == ["org-0", "org-1", "org-2", "org-3"]
    # 75 writes per org: a job of 64 and one of 11 each (cut per batch of the call, jobs held 16)
    assert [(org, len(ids)) for _, org, ids in jobs] == [(f"org-{o}", 64) for o in range(4)] + \
        [(f"org-{o}", 11) for o in range(4)]
    position = {str(wid): n for n, (wid, _, _) in enumerate(rows)}
    job_of = {str(wid): job for wid, _, job in rows}
    for job_id, org, ids in jobs:
        assert all(job_of[i] == job_id for i in ids)
        assert {reqs[position[i]].org for i in ids} == {org}
        assert [position[i] for i in ids] == sorted(position[i] for i in ids)  # in the order they came


class FailsOnBoom:
    """A rule-speed validator (no model: placed in chunks) that gives up on one write."""

    name = "boom"
    model = None

    def decide(self, write, candidates):
        from fabric.errors import ValidatorError
        from fabric.placement.validator import Decision

        if "Boom" in write.content:
            raise ValidatorError("cannot read this one")
        return Decision("new_branch", None, "a branch of its own", 0.5, self.name)


def test_a_write_failing_in_a_chunk_does_not_undo_its_job_mates(database_url, redis_url, org, caplog):
    """The chunk is first applied in one pipelined go; the failure undoes it, and it is placed again write
    by write in savepoints: the failing write is parked, the others placed once each."""
    fab = Fabric.connect(database_url, redis_url, run_worker=False, auto_migrate=False,
                         queue_name=f"fabric-t-{uuid.uuid4().hex[:8]}")
    try:
        city = {"subject": "Ada Moreau", "relation": "home_city"}
        receipts = fab.write_many([
            {"content": "Ada Moreau lives in Lisbon.", **city, "value": "Lisbon", "org": org},
            {"content": "Ada Moreau lives in Porto.", **city, "value": "Porto", "org": org},
            {"content": "Ada Moreau lives in Boom.", **city, "value": "Boom", "org": org},
            {"content": "Ada Moreau lives in Faro.", **city, "value": "Faro", "org": org}])
        with caplog.at_level("INFO", logger="fabric.write.apply"):
            stats = Placer(fab.settings, fab.pool, validator=FailsOnBoom()).place(org, [r.id for r in receipts])
        actions = [r.__dict__.get("action") for r in caplog.records if r.name == "fabric.write.apply"]
        assert actions == ["chunk_fallback"]
        assert (stats.placed, stats.parked) == (3, 1)
        with psycopg.connect(database_url) as conn:
            status = dict(conn.execute("SELECT content, status FROM fabric.writes WHERE org = %s", (org,)).fetchall())
            logged = conn.execute("SELECT count(*), count(DISTINCT write_id) FROM fabric.decisions "
                                  "WHERE org = %s AND action = 'place'", (org,)).fetchone()
            memories = conn.execute("SELECT count(*) FROM fabric.memories WHERE org = %s", (org,)).fetchone()[0]
    finally:
        fab.close()
    assert status["Ada Moreau lives in Boom."] == "parked"
    assert [s for c, s in status.items() if "Boom" not in c] == ["placed"] * 3
    assert logged == (3, 3) and memories == 3
