"""Indexes the planner really uses for queries that run on a schedule (checked with EXPLAIN on a
table big enough that a sequential scan would be the planner's choice without them)."""

from __future__ import annotations

import itertools
import re
from datetime import datetime, timedelta, timezone

import psycopg

from fabric.bench import scale as sc
from fabric.db import migrate
from fabric.read.search import (EXACT_SQL, SEARCH_SQL, org_size, search, search_params, search_plan,
                                 search_settings)
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


def _plan_section(plan: list[str], cte: str) -> str:
    """The lines of one CTE's subtree in an EXPLAIN (the CTE line up to the next one at its depth)."""
    start = next(i for i, line in enumerate(plan) if line.strip() == f"CTE {cte}")
    depth = len(plan[start]) - len(plan[start].lstrip())
    end = next((i for i in range(start + 1, len(plan))
                if len(plan[i]) - len(plan[i].lstrip()) <= depth and plan[i].strip()), len(plan))
    return "\n".join(plan[start:end])


def test_hybrid_search_of_a_small_share_reads_only_its_tenants_rows(database_url):
    """The lexical leg counts the memories that hold (its N, up to df_cap). With one org holding 60% of
    the rows, a sequential scan reached a 4% org's rows only after reading past the large org's (18 ms at
    100k memories): the count must go through the primary key, in the org's key order. df_cap 10 against
    the medium org's ~150 rows that hold is the ratio of 100 to ~3,000 at 100k, where the planner chose
    the sequential scan."""
    c = sc.build_corpus(sc.QUICK_SIZE, seed=5)
    db = sc.BenchDatabase(database_url, "ix")
    db.create()
    try:
        sc.bulk_load(db, c, lambda msg: None)
        medium = sc.MEDIUM_ORG_INDEX
        member = int(c.org_memories(medium)[7])
        now = datetime.now(timezone.utc)
        for valid_at in (now, now - timedelta(days=200)):   # current state and time travel
            params = search_params(org=c.orgs[medium], text=f"{c.content[member]}", vector=c.vectors[member],
                                   mode="hybrid", k=10, valid_at=valid_at, known_at=now,
                                   current=valid_at == now, df_cap=10)
            with db.connect() as conn, conn.transaction():
                for stmt, args in search_settings(params, ef_search=100, iterative=True):
                    conn.execute(stmt, args)
                for statement in (SEARCH_SQL, EXACT_SQL):   # both count N in `holding`
                    plan = [next(iter(r.values())) for r in conn.execute("EXPLAIN " + statement, params)]
                    holding = _plan_section(plan, "holding")
                    assert "memory_versions" in holding and "Seq Scan" not in holding, holding
    finally:
        db.drop()


def test_an_org_with_its_own_hnsw_index_is_searched_through_it(database_url):
    """`fabric index orgs` builds a partial HNSW index per qualifying org (fabric/read/indexes.py); the
    current-state, time-travel and hybrid statements must really use it for that org (EXPLAIN), and
    another org must still use the shared index. A re-plan drops the index of an org that no longer
    qualifies. 15k memories: the medium org's ~450 current rows are enough for the planner to prefer an
    index to sorting them all in hybrid search (at 5k, ~150 rows, it sorts them: exact and cheap)."""
    from fabric.read import indexes
    from fabric.read.search import VECTOR_AT_SQL, VECTOR_CURRENT_SQL

    c = sc.build_corpus(15_000, seed=5)
    db = sc.BenchDatabase(database_url, "orgix")
    db.create()
    try:
        sc.bulk_load(db, c, lambda msg: None)
        medium, large = c.orgs[sc.MEDIUM_ORG_INDEX], c.orgs[c.large_org]
        size = len(c.org_memories(sc.MEDIUM_ORG_INDEX))
        others = ("SELECT indexname FROM pg_indexes WHERE schemaname = 'fabric' "
                  "AND tablename IN ('memories', 'current_embeddings') ORDER BY 1")
        with psycopg.connect(db.url, autocommit=True) as conn:
            before = [r[0] for r in conn.execute(others)]
            assert "ix_memories_org_root_id" in before   # a migration's index, named ix_memories_org_ too
            p = indexes.plan(conn, min_rows=size, max_share=0.5)
            assert (("current_embeddings", medium, indexes.org_index_name("current_embeddings", medium))
                    in p.create), p
            assert all(o != large for _, o, _ in p.create), p   # 60% of the store: the shared graph
            indexes.apply(conn, p, concurrently=True)
            names = {r["name"] for r in indexes.list_indexes(conn)}
        own = {t: indexes.org_index_name(t, medium) for t in indexes.TABLES}
        assert set(own.values()) <= names
        member = int(c.org_memories(sc.MEDIUM_ORG_INDEX)[7])
        now = datetime.now(timezone.utc)
        cases = [(VECTOR_CURRENT_SQL, "vector", True, own["current_embeddings"]),
                 (VECTOR_AT_SQL, "vector", False, own["memories"]),
                 (SEARCH_SQL, "hybrid", True, own["current_embeddings"]),
                 (SEARCH_SQL, "hybrid", False, own["memories"])]
        for stmt, mode, current, index in cases:
            for org, expect in ((medium, index), (large, None)):
                params = search_params(org=org, text="what about the ledger", vector=c.vectors[member], mode=mode,
                                       k=10, valid_at=now if current else now - timedelta(days=200), known_at=now,
                                       current=current)
                with db.connect() as conn, conn.transaction():
                    for s, args in search_settings(params, ef_search=100, iterative=True):
                        conn.execute(s, args)
                    plan = "\n".join(next(iter(r.values())) for r in conn.execute("EXPLAIN " + stmt, params))
                if expect:
                    assert expect in plan, (mode, current, plan)
                else:
                    assert "_embedding_org_" not in plan, (mode, current, plan)
        # A current-state search (hybrid, and vector mode's index-scan statement) runs with one generic
        # plan per org (generic_statement): after 6 runs through the library the server holds it
        # prepared, and the plan it executes is generic and still walks the org's own index (a plan of
        # `org = $1` could not match the index's `WHERE org = '...'`).
        # A time-travel hybrid search too (planned with enable_sort off for an org of MIN_ROWS memories or
        # more, search.avoids_sorts): its held plan walks the shared index of every memory for the large
        # org, where a generic plan with sorts sorted the whole org by distance; and vector mode's
        # time-travel statement, search_vector_at, of that org (an org of MIN_ROWS memories or more). A small
        # org's search_vector_at runs the plan all small orgs share (the org a parameter): it sorts the
        # org's memories exactly, it does not walk the graph of every memory.
        modes = (("hybrid", "%lex_leg%"), ("vector", "%NULL::bigint AS lexical_rank%"))
        runs = [(mode, marker, True, org, expect)
                for (mode, marker), (org, expect) in itertools.product(modes, ((medium, own["current_embeddings"]),
                                                                               (large, None)))]
        runs.append(("hybrid", "%lex_leg%", False, large, "ix_memories_embedding_hnsw"))
        runs.append(("vector", "%a.superseded_by, a.placement%", False, large, "ix_memories_embedding_hnsw"))
        small = c.orgs[c.small_org]
        runs.append(("vector", "%a.superseded_by, a.placement%", False, small, "exact"))
        assert len(c.org_memories(c.large_org)) >= indexes.MIN_ROWS
        with db.connect() as conn:
            org_rows = {o: org_size(conn, o) for o in (medium, large, small)}
        assert org_rows == {medium: indexes.MIN_ROWS, large: indexes.MIN_ROWS,   # its own graph; counted
                            small: len(c.org_memories(c.small_org))}
        for mode, marker, current, org, expect in runs:
            valid_at = now if current else now - timedelta(days=200)
            settings, stmt, params = search_plan(org=org, text="what about the ledger", vector=c.vectors[member],
                                                 mode=mode, k=10, valid_at=valid_at, known_at=now, current=current,
                                                 iterative=True, org_rows=org_rows[org])
            assert stmt not in (SEARCH_SQL, VECTOR_CURRENT_SQL, VECTOR_AT_SQL)
            assert (f"'{org}'" in stmt) == (org != small)
            with db.connect() as conn:
                for _ in range(6):
                    with conn.transaction():
                        rows = search(conn, org=org, text="what about the ledger", vector=c.vectors[member],
                                      mode=mode, k=10, valid_at=valid_at, known_at=now, current=current)
                assert rows
                with conn.transaction():
                    for s, args in settings:
                        conn.execute(s, args)
                    held = conn.execute("SELECT name, generic_plans, custom_plans, parameter_types::text[] AS types "
                                        "FROM pg_prepared_statements "
                                        "WHERE statement LIKE %s", (marker,)).fetchall()
                    assert len(held) == 1 and held[0]["generic_plans"] >= 1 and held[0]["custom_plans"] == 0, held
                    order = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", stmt)))
                    args = ", ".join(f"%({n})s::{t}" for n, t in zip(order, held[0]["types"]))
                    explain = f"EXPLAIN EXECUTE {held[0]['name']}({args})"
                    # parameters of a utility statement cannot be bound: written in as literals
                    cur = psycopg.ClientCursor(conn).execute(explain, params)
                    plan = "\n".join(next(iter(r.values())) for r in cur)
            if expect == "exact":
                assert "Sort" in plan and "hnsw" not in plan, plan
            elif expect:
                assert expect in plan, plan
            else:
                assert "_embedding_org_" not in plan and "ix_current_embeddings_embedding_hnsw" in plan, plan
            if not current and mode == "hybrid":   # the index scan is in `ann`, not a sort of the org's rows
                ann = _plan_section(plan.splitlines(), "ann")
                assert expect in ann and "Seq Scan" not in ann, ann
        with psycopg.connect(db.url, autocommit=True) as conn:
            again = indexes.plan(conn, min_rows=size + 1, max_share=0.5)   # the medium org no longer qualifies
            assert set(own.values()) <= set(again.drop), again
            indexes.apply(conn, again, concurrently=False)
            assert not set(own.values()) & {r["name"] for r in indexes.list_indexes(conn)}
            # every other index is as it was: the command drops only partial HNSW indexes of its own
            assert [r[0] for r in conn.execute(others) if r[0] not in again.keep] == before
    finally:
        db.drop()


def test_fabric_index_orgs_builds_lists_and_refuses_bad_input(database_url):
    """The admin command: --dry-run builds nothing, a run builds the qualifying org's two indexes,
    `list` shows them with their predicate, and a bad option is a usage error naming the field."""
    import json

    from typer.testing import CliRunner

    from fabric.cli import app
    from fabric.read import indexes

    c = sc.build_corpus(sc.QUICK_SIZE, seed=5)
    db = sc.BenchDatabase(database_url, "orgcli")
    db.create()
    try:
        sc.bulk_load(db, c, lambda msg: None)
        medium = c.orgs[sc.MEDIUM_ORG_INDEX]
        size = str(len(c.org_memories(sc.MEDIUM_ORG_INDEX)))
        runner, env = CliRunner(), {"DATABASE_URL": db.url}
        res = runner.invoke(app, ["index", "orgs", "--min-rows", size, "--dry-run", "--json"], env=env)
        assert res.exit_code == 0, res.output
        planned = {r["index"] for r in json.loads(res.stdout)["created"]}
        assert {indexes.org_index_name(t, medium) for t in indexes.TABLES} <= planned
        res = runner.invoke(app, ["index", "list", "--json"], env=env)
        assert json.loads(res.stdout) == []          # the dry run built nothing
        res = runner.invoke(app, ["index", "orgs", "--min-rows", size, "--json"], env=env)
        assert res.exit_code == 0, res.output
        listed = {r["name"]: r for r in json.loads(runner.invoke(app, ["index", "list", "--json"], env=env).stdout)}
        assert set(listed) == planned
        own = listed[indexes.org_index_name("memories", medium)]
        assert own["predicate"] == f"(org = '{medium}'::text)" and own["rows"] == int(size)
        assert own["valid"] is True
        with psycopg.connect(db.url, autocommit=True) as conn:   # a build that failed half way
            conn.execute(f"UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'fabric.{own['name']}'::regclass")
            again = indexes.plan(conn, min_rows=int(size))
        assert own["name"] in again.drop and own["name"] in {n for _, _, n in again.create}, again
        res = runner.invoke(app, ["index", "orgs", "--max-share", "1.5"], env=env)
        assert res.exit_code == 2 and "max_share" in res.output
    finally:
        db.drop()
