"""The analyst SQL surface (issue 5): every query of docs/sql.md runs as an analyst role against an
org populated through the library, the key ones return what the library wrote, and the analyst
can read nothing else and write nothing."""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row
from typer.testing import CliRunner

from fabric import Fabric, roles
from fabric.write.apply import note_failure

DOC = Path(__file__).resolve().parent.parent / "docs" / "sql.md"
PLACEHOLDER = "'acme'"


def doc_queries() -> list[tuple[str, str]]:
    """Every ```sql block of docs/sql.md with the ### heading above it."""
    out, title, block = [], None, None
    for line in DOC.read_text().splitlines():
        if block is not None:
            if line.startswith("```"):
                out.append((title, "\n".join(block)))
                block = None
            else:
                block.append(line)
        elif line.startswith("### "):
            title = line[4:].strip()
        elif line.strip() == "```sql":
            block = []
    return out


QUERIES = doc_queries()
TITLES = [t for t, _ in QUERIES]


def t(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def store(fab: Fabric, database_url: str, redis_url: str):
    """One org populated through the library: every decision kind, a chain of three, a retraction,
    a pending write and a parked one; and an analyst role."""
    org = f"sql-{uuid.uuid4().hex[:10]}"

    def put(content, **kw):
        return fab.wait(fab.write(content, org=org, **kw), timeout=60)

    ids = {}
    ids["acme"] = put("Alice works at Acme.", subject="Alice", relation="employer", value="Acme",
                      valid_from=t(2021), source="hr")
    ids["dup"] = put("Alice works at Acme.", source="crm")
    ids["berlin"] = put("Alice works at Acme in the Berlin office.", source="hr")
    ids["globex"] = put("Alice works at Globex.", subject="Alice", relation="employer", value="Globex",
                        valid_from=t(2023), source="hr")
    ids["eiffel"] = put("The Eiffel Tower is in Paris.", source="wiki")
    ids["rome"] = put("Bob lives in Rome.", subject="Bob", relation="city", value="Rome", valid_from=t(2020))
    ids["madrid"] = put("Bob lives in Madrid.", subject="Bob", relation="city", value="Madrid", valid_from=t(2024))
    for year, title in ((2020, "Engineer"), (2022, "Senior Engineer"), (2024, "Staff Engineer")):
        ids[title] = put(f"Carol is a {title}.", subject="Carol", relation="title", value=title,
                         valid_from=t(year), source="hr")
    kinds = {k: p.decision for k, p in ids.items()}
    assert kinds["acme"] == "new_branch" and kinds["dup"] == "duplicate"
    assert kinds["berlin"] == "child_update" and kinds["globex"] == "contradiction_fork"
    assert kinds["madrid"] == "contradiction_fork" and kinds["Staff Engineer"] == "contradiction_fork"
    retraction = fab.retract(ids["madrid"].memory_id, org=org, reason="Bob never moved to Madrid")

    # Two writes no worker will place: a queue nobody listens to.
    with Fabric.connect(database_url, redis_url, run_worker=False,
                        queue_name=f"nobody-{uuid.uuid4().hex[:8]}") as idle:
        pending = idle.write("A note still waiting for a worker.", org=org)
        parked = idle.write("A note the validator could not place.", org=org)
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        # What the placer does when a validator's retries are spent.
        note_failure(conn, org, parked.id, "validator: no usable answer", park=True, max_attempts=1)

    name = f"ana_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url) as conn:
        roles.create_analyst(conn, name)
    yield {"org": org, "ids": ids, "retraction": retraction, "pending": pending.id, "parked": parked.id,
           "analyst_url": roles.role_url(database_url, name), "analyst": name}
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        note_failure(conn, org, pending.id, "test over", park=True, max_attempts=1)  # leave nothing pending
        roles.drop(conn, name)


def run_as_analyst(store, sql: str) -> list[dict]:
    with psycopg.connect(store["analyst_url"], row_factory=dict_row) as conn:
        return conn.execute(sql.replace(PLACEHOLDER, f"'{store['org']}'")).fetchall()


def mine(store, rows):
    return [r for r in rows if r.get("org", store["org"]) == store["org"]]


# What the key queries must return for the populated org.
def expect_true_now(store, rows):
    keys = {(r["subject"], r["relation"], r["value"]) for r in rows}
    assert {("Alice", "employer", "Globex"), ("Bob", "city", "Rome"), ("Carol", "title", "Staff Engineer")} <= keys
    assert not {("Alice", "employer", "Acme"), ("Bob", "city", "Madrid"), ("Carol", "title", "Engineer")} & keys
    assert len(rows) == 5  # + the Berlin refinement and the Eiffel Tower


def expect_current_value(store, rows):
    assert [r["value"] for r in rows] == ["Globex"]


def expect_contradictions(store, rows):
    assert sum(r["contradictions"] for r in mine(store, rows)) == 4
    assert sum(r["reverted"] for r in mine(store, rows)) == 0


def expect_superseded_within_a_day(store, rows):
    got = {(r["subject"], r["relation"], r["old_value"], r["new_value"]) for r in mine(store, rows)}
    assert got == {("Alice", "employer", "Acme", "Globex"), ("Carol", "title", "Engineer", "Senior Engineer"),
                   ("Carol", "title", "Senior Engineer", "Staff Engineer")}  # Madrid was retracted


def expect_longest_chains(store, rows):
    assert (rows[0]["subject"], rows[0]["chain_length"]) == ("Carol", 3)
    assert rows[0]["values_over_time"] == "Engineer -> Senior Engineer -> Staff Engineer"
    assert {(r["subject"], r["chain_length"]) for r in rows} == {("Carol", 3), ("Alice", 2), ("Bob", 1)}


def expect_true_on_date(store, rows):
    assert [(r["relation"], r["value"]) for r in rows] == [("employer", "Acme")]


def expect_before_after(store, rows):
    assert [(r["believed"], r["value"]) for r in rows] == [("before", "Acme"), ("after", "Globex")]


def expect_duplicate_rate(store, rows):
    by_source = {r["source"]: r for r in mine(store, rows)}
    assert (by_source["crm"]["writes"], by_source["crm"]["duplicates"]) == (1, 1)
    assert float(by_source["crm"]["duplicate_rate"]) == 1.0
    assert by_source["hr"]["duplicates"] == 0 and by_source["hr"]["writes"] == 6


def expect_duplicates(store, rows):
    assert len(rows) == 1
    r = rows[0]
    assert (r["source"], r["content"], r["duplicate_of_content"], r["duplicate_of_source"], r["validator"]) == (
        "crm", "Alice works at Acme.", "Alice works at Acme.", "hr", "pregate")


def expect_by_validator(store, rows):
    assert any(r["validator"] == "pregate" and r["kind"] == "duplicate" for r in rows)
    assert any(r["kind"] == "contradiction_fork" for r in rows)


def expect_per_depth(store, rows):
    assert {r["depth"]: r["live_memories"] for r in mine(store, rows)} == {0: 4, 1: 1}


def expect_biggest_branch(store, rows):
    assert [(r["depth"], r["content"], r["state"]) for r in rows] == [
        (0, "Alice works at Acme.", "superseded"), (1, "Alice works at Acme in the Berlin office.", "live")]


def expect_open_writes(store, rows):
    got = {(r["id"], r["status"]) for r in mine(store, rows)}
    assert got == {(store["pending"], "pending"), (store["parked"], "parked")}
    assert [r["error"] for r in mine(store, rows) if r["status"] == "parked"] == ["validator: no usable answer"]


def expect_retractions(store, rows):
    assert [(r["action"], r["reason"], r["content"]) for r in rows] == [
        ("retract", "Bob never moved to Madrid", "Bob lives in Madrid.")]


EXPECT = {
    "What is true now": expect_true_now,
    "Current value of a key": expect_current_value,
    "Contradictions per org per week": expect_contradictions,
    "Facts superseded within a day of being written": expect_superseded_within_a_day,
    "The longest supersession chains": expect_longest_chains,
    "What was true about a subject on a given date": expect_true_on_date,
    "What the store believed before it was corrected": expect_before_after,
    "Duplicate rate by source": expect_duplicate_rate,
    "The duplicates, with what they repeat": expect_duplicates,
    "Decisions by validator and confidence": expect_by_validator,
    "Live memories per branch depth": expect_per_depth,
    "The biggest branch, walked through superseded nodes": expect_biggest_branch,
    "Writes still pending or parked": expect_open_writes,
    "Retractions and reverts, with their reasons": expect_retractions,
}


def test_the_doc_has_the_queries_the_issue_asks_for():
    assert len(QUERIES) >= 8
    assert set(EXPECT) == set(TITLES), "every documented query has an expectation, and no expectation is stale"


@pytest.mark.parametrize("title,sql", QUERIES, ids=TITLES)
def test_documented_query_runs_as_analyst(store, title, sql):
    rows = run_as_analyst(store, sql)
    EXPECT[title](store, rows)


def test_library_and_sql_answer_alike(store, fab):
    org, ids = store["org"], store["ids"]
    lib = fab.current_value("Alice", "employer", org=org)
    sql = run_as_analyst(store, "SELECT id FROM fabric_api.current_value('acme', 'Alice', 'employer')")
    assert [r["id"] for r in sql] == [lib.id]
    root = ids["acme"].memory_id
    lib_walk = [m.id for m in fab.walk(root, org=org, include_superseded=True)]
    sql_walk = run_as_analyst(store, f"SELECT id FROM fabric_api.walk('acme', '{root}', true)")
    assert [r["id"] for r in sql_walk] == lib_walk and len(lib_walk) == 2
    lib_live = {m.id for m in fab.belief_state(org=org)}
    sql_live = run_as_analyst(store, "SELECT id FROM fabric_api.live_memories WHERE org = 'acme'")
    assert {r["id"] for r in sql_live} == lib_live and len(lib_live) == 5


TABLES = ("orgs", "writes", "decisions", "memories", "memory_versions", "tenant_grants")


def test_analyst_reads_nothing_outside_the_surface(store):
    with psycopg.connect(store["analyst_url"], autocommit=True) as conn:
        for table in TABLES:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"SELECT * FROM fabric.{table}")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(f"SELECT count(*) FROM fabric.{table}")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT embedding FROM fabric.memories")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT fabric.tenant_org()")
        # Every org is readable through the surface (analysts query across tenants).
        assert conn.execute("SELECT count(*) FROM fabric_api.orgs WHERE org = %s",
                            (store["org"],)).fetchone()[0] == 1


def test_no_embedding_is_exposed(pg):
    rows = pg.execute("SELECT table_name, column_name FROM information_schema.columns "
                      "WHERE table_schema = 'fabric_api' AND (udt_name = 'vector' OR column_name = 'embedding')"
                      ).fetchall()
    assert rows == []


def test_analyst_writes_nothing(store):
    org = store["org"]
    attempts = [
        ("INSERT INTO fabric_api.orgs (org, created_at) VALUES ('evil', now())", None),
        ("UPDATE fabric_api.writes SET content = 'changed' WHERE org = %s", (org,)),
        ("DELETE FROM fabric_api.decisions WHERE org = %s", (org,)),
        ("UPDATE fabric_api.memory_nodes SET content = 'changed' WHERE org = %s", (org,)),
        ("INSERT INTO fabric.orgs (org) VALUES ('evil')", None),
        ("UPDATE fabric.memory_versions SET expired_at = now() WHERE org = %s", (org,)),
        ("CREATE TABLE public.analyst_scratch (x int)", None),
        ("CREATE VIEW fabric_api.analyst_view AS SELECT 1 AS x", None),
    ]
    with psycopg.connect(store["analyst_url"], autocommit=True) as conn:
        assert conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
        conn.execute("SET default_transaction_read_only = off")  # even so, no privilege allows it
        for sql, params in attempts:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql, params)
    rows = run_as_analyst(store, "SELECT count(*) AS n FROM fabric_api.writes WHERE org = 'acme' "
                                 "AND content = 'changed'")
    assert rows[0]["n"] == 0


def test_every_analyst_object_is_commented(pg):
    undocumented = pg.execute("""
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'fabric_api' AND c.relkind = 'v' AND obj_description(c.oid, 'pg_class') IS NULL
        UNION ALL
        SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'fabric_api' AND obj_description(p.oid, 'pg_proc') IS NULL
        UNION ALL
        SELECT c.relname || '.' || a.attname FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'fabric_api' AND c.relkind = 'v' AND a.attnum > 0 AND NOT a.attisdropped
          AND col_description(c.oid, a.attnum) IS NULL
    """).fetchall()
    assert undocumented == []
    views = {r[0] for r in pg.execute("SELECT viewname FROM pg_views WHERE schemaname = 'fabric_api'")}
    assert {"live_memories", "memory_versions", "memory_nodes", "decisions", "duplicates", "writes",
            "open_writes", "supersessions", "orgs"} <= views
    # Every view in the doc's table of objects exists, and every view is in the doc.
    doc = DOC.read_text()
    assert all(f"`fabric_api.{v}`" in doc for v in views)


def test_cli_creates_lists_and_drops_an_analyst(database_url):
    from fabric.cli import app

    runner = CliRunner()
    env = {"DATABASE_URL": database_url}
    name = f"ana_{uuid.uuid4().hex[:8]}"
    res = runner.invoke(app, ["roles", "create-analyst", name, "--json"], env=env)
    assert res.exit_code == 0, res.output
    created = json.loads(res.stdout)
    assert (created["name"], created["kind"], created["login"]) == (name, "analyst", True)
    org = f"ana-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as owner:
        owner.execute("INSERT INTO fabric.orgs (org) VALUES (%s)", (org,))
    try:
        with psycopg.connect(created["conninfo"]) as conn:
            # The new analyst logs in and reads the surface across tenants: the org just made is there.
            assert conn.execute("SELECT org FROM fabric_api.orgs WHERE org = %s", (org,)).fetchall() == [(org,)]
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT * FROM fabric.memories")
        res = runner.invoke(app, ["roles", "list", "--json"], env=env)
        assert res.exit_code == 0
        assert {"name": name, "kind": "analyst", "login": True, "orgs": []} in json.loads(res.stdout)
        res = runner.invoke(app, ["roles", "create-analyst", name], env=env)
        assert res.exit_code == 1 and "already exists" in res.output
    finally:
        res = runner.invoke(app, ["roles", "drop", name], env=env)
    assert res.exit_code == 0, res.output
    assert runner.invoke(app, ["roles", "drop", name], env=env).exit_code == 3


@pytest.mark.parametrize("name,message", [
    ("Bad-Name", "not a plain lower-case identifier"),
    ("1abc", "not a plain lower-case identifier"),
    ('x"; DROP TABLE fabric.memories; --', "not a plain lower-case identifier"),
    ("pg_reader", "reserved by PostgreSQL"),
    ("fabric_analyst", "reserved"),
    ("a" * 64, "longer than 63 bytes"),
])
def test_cli_refuses_bad_role_names(database_url, name, message):
    from fabric.cli import app

    res = CliRunner().invoke(app, ["roles", "create-analyst", name], env={"DATABASE_URL": database_url})
    assert res.exit_code == 2
    assert "invalid name" in res.output and message in re.sub(r"\s+", " ", res.output)


# ---------------------------------------------------------------------------------------------- surface files

SURFACE_DEFINITIONS = """
    SELECT c.relname AS name, pg_get_viewdef(c.oid) AS definition
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'fabric_api' AND c.relkind = 'v'
    UNION ALL
    SELECT p.proname, pg_get_functiondef(p.oid)
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'fabric_api'
"""


def surface_definitions(conn: psycopg.Connection) -> dict[str, str]:
    """Each fabric_api view and function as PostgreSQL prints it, whitespace runs collapsed (a function's
    body is kept as written, so its indentation in a migration must not count)."""
    return {name: " ".join(text.split()) for name, text in conn.execute(SURFACE_DEFINITIONS).fetchall()}


def test_surface_files_hold_the_migrated_definitions(database_url):
    from fabric.sql import surface

    with psycopg.connect(database_url) as conn:
        migrated = surface_definitions(conn)
        assert sorted(migrated) == surface.names(), "one file per fabric_api view and function"
        for name in surface.names():   # CREATE OR REPLACE each from its file: nothing may change
            conn.execute(surface.definition(name))
        assert surface_definitions(conn) == migrated
        # The comparison sees a change of body: walk's order reversed is another definition.
        changed = surface.definition("walk").replace("ORDER BY w.hops,", "ORDER BY w.hops DESC,")
        assert changed != surface.definition("walk")
        conn.execute(changed)
        assert surface_definitions(conn)["walk"] != migrated["walk"]
        conn.rollback()   # the shared database keeps its definitions
    with psycopg.connect(database_url) as conn:
        assert surface_definitions(conn) == migrated


FUNCTION_BODIES = """
    SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'fabric_api'
"""


def test_a_fresh_migration_loads_the_files_and_a_round_trip_keeps_them(scratch_db):
    from fabric.db import migrate
    from fabric.sql import surface

    migrate(scratch_db)
    with psycopg.connect(scratch_db) as conn:
        fresh = surface_definitions(conn)
        bodies = dict(conn.execute(FUNCTION_BODIES).fetchall())
    assert sorted(fresh) == surface.names()
    # Each function's body is its file's text to the character: the migrations load the files (a copy
    # of the body inside a migration, even one differing only in indentation, would not match).
    for name, body in bodies.items():
        text = surface.definition(name)
        assert body == text[text.index("AS $$") + len("AS $$"):text.rindex("$$")], name
    # Down past each revision that loads a file (0003 restores walk's older body; 0002 drops its views;
    # 0001 keeps its own) and up again: the same definitions.
    for revision in ("0003", "0002", "0001"):
        migrate(scratch_db, revision=revision, downgrade=True)
        migrate(scratch_db)
        with psycopg.connect(scratch_db) as conn:
            assert surface_definitions(conn) == fresh, revision
    migrate(scratch_db, revision="0002", downgrade=True)
    with psycopg.connect(scratch_db) as conn:   # the round trip above did go through the older walk
        assert "root_id" not in surface_definitions(conn)["walk"]
