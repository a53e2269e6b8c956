"""The placement pipeline: real RQ workers over real Redis, the embedded Postgres (issue 3)."""

from __future__ import annotations

import signal
import time
import uuid
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from fabric import Fabric
from fabric.api import terminate_worker
from fabric.errors import PlacementTimeout
from fabric.types import utcnow
from fabric.write.placer import Placer
from tests.fix_services import start_worker


def T(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=timezone.utc)


def put(fab, org, text, *, key=None, **kw):
    s, r, v = key if key else (None, None, None)
    return fab.wait(fab.write(text, org=org, subject=s, relation=r, value=v, **kw), 60)


def live_count(pg, org, subject, relation) -> int:
    return pg.execute(
        "SELECT count(*) FROM fabric_api.current_value(%s, %s, %s) UNION ALL "
        "SELECT count(*) FROM fabric_api.belief_state(%s) WHERE subject = %s AND relation = %s",
        (org, subject, relation, org, subject, relation)).fetchall()[1][0]


# --------------------------------------------------------------- each decision, unkeyed text (rules)

def test_each_decision_from_text_alone(fab, org):
    a = put(fab, org, "The Tallinn office opens at 9 am.", valid_from=T(2020))
    assert a.decision == "new_branch"
    dup = put(fab, org, "the Tallinn office opens at 9 AM!", valid_from=T(2021))
    assert dup.decision == "duplicate" and dup.memory_id == a.memory_id
    upd = put(fab, org, "The Tallinn office opens at 9 am and closes at 6 pm.", valid_from=T(2020))
    assert upd.decision == "child_update" and upd.target_id == a.memory_id
    fork = put(fab, org, "The Tallinn office opens at 10 am.", valid_from=T(2023))
    assert fork.decision == "contradiction_fork" and fork.target_id == a.memory_id
    other = put(fab, org, "Marta prefers green tea in the afternoon.")
    assert other.decision == "new_branch"
    # The superseded root stays walkable; its live child is still returned.
    walked = {m.id: m for m in fab.walk(a.memory_id, org=org, include_superseded=True)}
    assert walked[a.memory_id].state == "superseded" and walked[a.memory_id].superseded_by == fork.memory_id
    assert walked[a.memory_id].valid_to == T(2023)
    assert upd.memory_id in {m.id for m in fab.walk(a.memory_id, org=org)}
    hits = fab.search("When does the Tallinn office open?", org=org, k=3)
    assert hits[0].id == fork.memory_id
    assert a.memory_id not in {h.id for h in hits}


def test_out_of_order_fact_is_history_not_correction(fab, org):
    new = put(fab, org, "Rafe Dunn is the treasurer.", key=("club", "treasurer", "Rafe Dunn"), valid_from=T(2024))
    old = put(fab, org, "Iris Vale is the treasurer.", key=("club", "treasurer", "Iris Vale"), valid_from=T(2019))
    assert old.decision == "contradiction_fork"
    assert fab.current_value("club", "treasurer", org=org).value == "Rafe Dunn"
    assert fab.current_value("club", "treasurer", org=org, valid_at=T(2020)).value == "Iris Vale"
    late = fab.get(old.memory_id, org=org)
    assert late.valid_to == T(2024) and late.superseded_by == new.memory_id
    assert fab.get(new.memory_id, org=org).state == "live"
    # Between two known versions: the middle one slots in and trims its predecessor.
    mid = put(fab, org, "Oona Hart is the treasurer.", key=("club", "treasurer", "Oona Hart"), valid_from=T(2021))
    assert fab.current_value("club", "treasurer", org=org, valid_at=T(2020)).value == "Iris Vale"
    assert fab.current_value("club", "treasurer", org=org, valid_at=T(2022)).value == "Oona Hart"
    assert fab.current_value("club", "treasurer", org=org).value == "Rafe Dunn"
    assert [m.value for m in fab.history(new.memory_id, org=org)] == ["Iris Vale", "Oona Hart", "Rafe Dunn"]
    assert mid.decision == "contradiction_fork"


def test_revert_a_fork_and_a_duplicate(fab, org):
    a = put(fab, org, "Ana Ruiz works in Lisbon.", key=("Ana Ruiz", "city", "Lisbon"), valid_from=T(2020))
    b = put(fab, org, "Ana Ruiz works in Madrid.", key=("Ana Ruiz", "city", "Madrid"), valid_from=T(2022))
    assert fab.current_value("Ana Ruiz", "city", org=org).value == "Madrid"
    before = utcnow()
    fab.revert(b.decision_id, org=org, reason="wrong fork")
    assert fab.current_value("Ana Ruiz", "city", org=org).value == "Lisbon"
    assert fab.current_value("Ana Ruiz", "city", org=org, known_at=before).value == "Madrid"
    d = put(fab, org, "Ana Ruiz works in Lisbon.", key=("Ana Ruiz", "city", "Lisbon"), valid_from=T(2020))
    assert d.decision == "duplicate" and d.memory_id == a.memory_id
    fab.revert(d.decision_id, org=org)
    placed = fab.wait(d.write_id, org=org)
    assert placed.decision == "new_branch" and placed.memory_id != a.memory_id
    log = {r.action for r in fab.decisions(org=org)}
    assert {"place", "revert"} <= log
    with pytest.raises(Exception, match="already reverted"):
        fab.revert(b.decision_id, org=org)


# --------------------------------------------------------------- idempotency, crashes, Redis down

def test_a_job_run_twice_places_once(fab, database_url, org):
    receipts = fab.write_many([{"content": f"Sensor {i} sits in hall {i}.", "org": org} for i in range(5)])
    fab.drain(org=org, timeout=60)
    placer = Placer(fab.settings, fab.pool)
    stats = placer.place(org, [r.id for r in receipts])  # the same job again, as after a crash
    assert stats.placed == 0 and stats.skipped == 5
    with psycopg.connect(database_url) as conn:
        n = conn.execute("SELECT count(*) FROM fabric.memories WHERE org = %s", (org,)).fetchone()[0]
    assert n == 5


def test_redis_down_at_write_time_is_placed_later(fab, database_url, org):
    down = Fabric.connect(database_url, "redis://127.0.0.1:1/0", run_worker=False, auto_migrate=False,
                          queue_name=fab.settings.queue_name)
    try:
        receipt = down.write("The Oslo data centre runs on hydro power.", org=org)
        assert receipt.enqueued is False
    finally:
        down.close()
    # The session worker's reconciler (every 2 s, grace 5 s) finds it in Postgres and queues it.
    p = fab.wait(receipt, timeout=40)
    assert p.decision == "new_branch"


def test_wait_timeout_says_no_worker_listens(bare, org):
    r = bare.write("Nobody will place this one.", org=org)
    with pytest.raises(PlacementTimeout, match="no worker is listening"):
        bare.wait(r, timeout=0.5)


def test_killed_worker_loses_nothing_and_places_nothing_twice(bare, database_url, redis_url, queue_name, org):
    receipts = bare.write_many([{"content": f"Invoice batch {i} was approved by team {i % 7}.", "org": org}
                                for i in range(150)])
    w1 = start_worker(database_url, redis_url, queue_name)
    try:
        deadline = time.monotonic() + 60
        with psycopg.connect(database_url, autocommit=True) as conn:
            while time.monotonic() < deadline:
                placed = conn.execute("SELECT count(*) FROM fabric.writes WHERE org = %s AND status <> 'pending'",
                                      (org,)).fetchone()[0]
                if placed >= 10:
                    break
                time.sleep(0.05)
        w1.send_signal(signal.SIGKILL)  # mid-job: the batch it holds is cut short
        w1.wait(10)
        assert 10 <= placed < 150
        w2 = start_worker(database_url, redis_url, queue_name)
        try:
            bare.drain(org=org, timeout=300)
        finally:
            terminate_worker(w2)
    finally:
        if w1.poll() is None:
            w1.kill()
    with psycopg.connect(database_url) as conn:
        statuses = dict(conn.execute("SELECT status, count(*) FROM fabric.writes WHERE org = %s GROUP BY status",
                                     (org,)).fetchall())
        per_write = conn.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM fabric.memories WHERE org = %s "
                                 "GROUP BY write_id) s", (org,)).fetchone()[0]
        decisions = conn.execute("SELECT count(*), count(DISTINCT write_id) FROM fabric.decisions "
                                 "WHERE org = %s AND action = 'place'", (org,)).fetchone()
    assert statuses.get("pending", 0) == 0 and statuses.get("parked", 0) == 0
    assert sum(statuses.values()) == len(receipts) == 150
    assert per_write == 1                      # nothing placed twice
    assert decisions[0] == decisions[1] == 150  # one decision per write


# --------------------------------------------------------------- concurrency

def test_parallel_conflicting_writes_leave_one_live_version(bare, database_url, redis_url, queue_name, pg):
    workers = [start_worker(database_url, redis_url, queue_name) for _ in range(2)]
    try:
        orgs = []
        for rep in range(15):
            org = f"race-{uuid.uuid4().hex[:8]}"
            orgs.append(org)
            when = T(2020) + timedelta(days=rep)
            # Separate write() calls -> separate jobs -> both workers take them at the same moment.
            for value in ("Amber", "Birch", "Cedar", "Delta"):
                bare.write(f"The release codename is {value}.", org=org, subject="release", relation="codename",
                           value=value, valid_from=when)
            # And unkeyed: one attribute the rules read, with different values.
            for value in ("Ana Birch", "Cedric Moss", "Dalia Ortiz"):
                bare.write(f"The chief executive of Halcyon Robotics is {value}.", org=org, valid_from=when)
        for org in orgs:
            bare.drain(org=org, timeout=120)
        for org in orgs:
            keyed = pg.execute("SELECT count(*) FROM fabric_api.belief_state(%s) WHERE subject = 'release' "
                               "AND relation = 'codename'", (org,)).fetchone()[0]
            unkeyed = pg.execute("SELECT count(*) FROM fabric_api.belief_state(%s) WHERE content LIKE "
                                 "'The chief executive of Halcyon%%'", (org,)).fetchone()[0]
            assert keyed == 1, org
            assert unkeyed == 1, org
    finally:
        for w in workers:
            terminate_worker(w)
