"""Indexes the planner really uses for queries that run on a schedule (checked with EXPLAIN on a
table big enough that a sequential scan would be the planner's choice without them)."""

from __future__ import annotations

import psycopg

from fabric.db import migrate
from fabric.sql import q


def test_counting_parked_writes_uses_its_partial_index(scratch_db):
    migrate(scratch_db)
    with psycopg.connect(scratch_db, autocommit=True) as conn:
        conn.execute(q("ensure_org"), {"org": "big"})
        # 30,000 settled writes and 5 parked ones: a scrape must not read the settled ones.
        conn.execute("""
            INSERT INTO fabric.writes (org, id, content, valid_from, metadata, status, attempts, received_at)
            SELECT 'big', gen_random_uuid(), 'fact ' || i, now(), '{}',
                   CASE WHEN i % 6000 = 0 THEN 'parked' ELSE 'placed' END, 1, now()
            FROM generate_series(1, 30000) AS i""")
        conn.execute("ANALYZE fabric.writes")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + q("metrics_open_writes")).fetchall())
        counts = {(r[0], r[1]): r[2] for r in conn.execute(q("metrics_open_writes")).fetchall()}
    assert "ix_writes_parked" in plan, plan
    assert "ix_writes_pending" in plan, plan
    assert counts == {("big", "parked"): 5}
