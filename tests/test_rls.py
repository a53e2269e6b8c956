"""Tenancy enforced by PostgreSQL (issue 5): a service role granted org A, with hand-written SQL,
cannot read or change org B's rows in any table, and `SET fabric.org = B` does not help; the
library connected as that role works for A and finds nothing of B; its reads keep their indexes."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import dict_row
from typer.testing import CliRunner

from fabric import Fabric, roles
from fabric.db import embedding_dim_of
from fabric.errors import NotFound
from fabric.read.search import ANN_SQL
from fabric.errors import TenantAccessDenied
from fabric.sql import q

TABLES = ("orgs", "writes", "decisions", "memories", "memory_versions")
VIEWS = ("orgs", "writes", "decisions", "memory_nodes", "memory_versions", "live_memories", "supersessions",
         "duplicates", "open_writes")


def t(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def tenants(fab: Fabric, database_url: str):
    """Orgs A and B populated by the owner (a fact, its correction, a duplicate), and a service role
    granted A only."""
    tag = uuid.uuid4().hex[:8]
    a, b = f"rls-a-{tag}", f"rls-b-{tag}"
    placed = {}
    for org in (a, b):
        first = fab.wait(fab.write("Dana works at Initech.", org=org, subject="Dana", relation="employer",
                                   value="Initech", valid_from=t(2020)), timeout=60)
        fix = fab.wait(fab.write("Dana works at Hooli.", org=org, subject="Dana", relation="employer",
                                 value="Hooli", valid_from=t(2024)), timeout=60)
        dup = fab.wait(fab.write("Dana works at Hooli.", org=org), timeout=60)
        assert (first.decision, fix.decision, dup.decision) == ("new_branch", "contradiction_fork", "duplicate")
        placed[org] = {"first": first, "fix": fix, "dup": dup}
    name = f"svc_{tag}"
    with psycopg.connect(database_url) as conn:
        roles.create_service(conn, name, orgs=[a])
    yield {"a": a, "b": b, "placed": placed, "role": name, "url": roles.role_url(database_url, name)}
    with psycopg.connect(database_url) as conn:
        roles.drop(conn, name)


def svc_conn(tenants, org: str | None):
    conn = psycopg.connect(tenants["url"], autocommit=True, row_factory=dict_row)
    if org is not None:
        conn.execute("SELECT set_config('fabric.org', %s, false)", (org,))
    return conn


def count_by_org(conn, relation: str) -> dict[str, int]:
    rows = conn.execute(sql.SQL("SELECT org, count(*) AS n FROM {} GROUP BY org").format(
        sql.Identifier(*relation.split(".")))).fetchall()
    return {r["org"]: r["n"] for r in rows}


def fingerprint(pg, org: str) -> dict[str, str]:
    """What the owner sees of an org, table by table (to prove nothing changed)."""
    out = {}
    for table in TABLES:
        out[table] = pg.execute(sql.SQL(
            "SELECT count(*)::text || ':' || coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '') "
            "FROM {} x WHERE org = %s").format(sql.Identifier("fabric", table)), (org,)).fetchone()[0]
    return out


def test_owner_sees_every_org(pg, tenants):
    for table in TABLES:
        seen = {r[0] for r in pg.execute(sql.SQL("SELECT DISTINCT org FROM {}").format(
            sql.Identifier("fabric", table)))}
        assert {tenants["a"], tenants["b"]} <= seen, table


@pytest.mark.parametrize("relation", [f"fabric.{t}" for t in TABLES] + [f"fabric_api.{v}" for v in VIEWS])
def test_service_reads_only_its_org(tenants, relation):
    a, b = tenants["a"], tenants["b"]
    with svc_conn(tenants, a) as conn:
        seen = count_by_org(conn, relation)
        assert b not in seen and set(seen) <= {a}
        if relation != "fabric_api.open_writes":  # (A has no unsettled write)
            assert seen.get(a, 0) > 0  # it does see its own rows
    # Setting the org by hand to one it was not granted opens nothing, of either org.
    with svc_conn(tenants, b) as conn:
        assert count_by_org(conn, relation) == {}
        conn.execute(f"SET fabric.org = {psycopg.sql.quote(b)}")  # the plain SET form too
        assert count_by_org(conn, relation) == {}
        assert conn.execute(sql.SQL("SELECT count(*) AS n FROM {} WHERE org = %s").format(
            sql.Identifier(*relation.split("."))), (b,)).fetchone()["n"] == 0
    with svc_conn(tenants, None) as conn:  # no org set: nothing
        assert count_by_org(conn, relation) == {}


def test_service_reads_no_other_org_through_the_functions(tenants):
    a, b = tenants["a"], tenants["b"]
    root_b = tenants["placed"][b]["first"].memory_id
    with svc_conn(tenants, b) as conn:  # even with B set by hand
        assert conn.execute("SELECT * FROM fabric_api.current_value(%s, 'Dana', 'employer')", (b,)).fetchall() == []
        assert conn.execute("SELECT * FROM fabric_api.walk(%s, %s, true)", (b, root_b)).fetchall() == []
        assert conn.execute("SELECT * FROM fabric_api.belief_state(%s)", (b,)).fetchall() == []
        assert conn.execute("SELECT * FROM fabric_api.history(%s, %s)", (b, root_b)).fetchall() == []
    with svc_conn(tenants, a) as conn:
        rows = conn.execute("SELECT value FROM fabric_api.current_value(%s, 'Dana', 'employer')", (a,)).fetchall()
        assert [r["value"] for r in rows] == ["Hooli"]
        assert conn.execute("SELECT * FROM fabric_api.current_value(%s, 'Dana', 'employer')", (b,)).fetchall() == []


def _inserts(tenants, pg, org: str) -> dict[str, tuple[str, dict]]:
    """One INSERT per table for `org`, valid except for tenancy (ids that exist, a real embedding)."""
    b_mem = tenants["placed"][tenants["b"]]["first"]
    return {
        "orgs": ("INSERT INTO fabric.orgs (org) VALUES (%(org)s)", {}),
        "writes": ("INSERT INTO fabric.writes (org, id, content, valid_from) "
                   "VALUES (%(org)s, gen_random_uuid(), 'planted', now())", {}),
        "decisions": ("INSERT INTO fabric.decisions (org, id, action, reason) "
                      "VALUES (%(org)s, gen_random_uuid(), 'retract', 'planted')", {}),
        "memories": ("INSERT INTO fabric.memories (org, id, root_id, content, placement, embedding, created_at) "
                     "SELECT %(org)s, x.id, x.id, 'planted', 'new_branch', %(emb)s::vector, now() "
                     "FROM (SELECT gen_random_uuid() AS id) x", {"emb": str([0.1] * embedding_dim_of(pg))}),
        "memory_versions": ("INSERT INTO fabric.memory_versions (org, memory_id, version, valid_from, state, "
                            "decision_id, recorded_at) VALUES (%(org)s, %(mid)s, 99, now(), 'live', %(did)s, now())",
                            {"mid": b_mem.memory_id, "did": b_mem.decision_id}),
    }


UPDATES = {
    "orgs": "UPDATE fabric.orgs SET created_at = created_at WHERE org = %(org)s",
    "writes": "UPDATE fabric.writes SET error = 'planted' WHERE org = %(org)s",
    "decisions": "UPDATE fabric.decisions SET reason = 'planted' WHERE org = %(org)s",
    "memories": "UPDATE fabric.memories SET content = 'planted' WHERE org = %(org)s",
    "memory_versions": "UPDATE fabric.memory_versions SET expired_at = now() WHERE org = %(org)s "
                       "AND expired_at IS NULL",
}


@pytest.mark.parametrize("set_org", ["a", "b"])
def test_service_cannot_write_another_orgs_rows(pg, tenants, set_org):
    a, b = tenants["a"], tenants["b"]
    before = fingerprint(pg, b)
    with svc_conn(tenants, tenants[set_org]) as conn:
        for stmt, extra in _inserts(tenants, pg, b).values():
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security|permission"):
                conn.execute(stmt, {"org": b, "a": a, **extra})
        for table, stmt in UPDATES.items():
            try:
                cur = conn.execute(stmt, {"org": b})
            except psycopg.errors.InsufficientPrivilege:
                continue  # orgs and memories: services have no UPDATE at all
            assert cur.rowcount == 0, table
        for table in TABLES:  # no DELETE privilege for services
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.SQL("DELETE FROM {} WHERE org = %s").format(sql.Identifier("fabric", table)), (b,))
    assert fingerprint(pg, b) == before


def test_row_level_security_alone_holds_when_privileges_widen(pg, tenants):
    """Grant the service every privilege on the tables for a moment: RLS still keeps it out of B."""
    a, b, role = tenants["a"], tenants["b"], tenants["role"]
    before_a, before_b = fingerprint(pg, a), fingerprint(pg, b)
    tables = sql.SQL(", ").join(sql.Identifier("fabric", t) for t in TABLES)
    pg.execute(sql.SQL("GRANT UPDATE, DELETE ON {} TO {}").format(tables, sql.Identifier(role)))
    try:
        with svc_conn(tenants, b) as conn:  # B set by hand
            for table, stmt in UPDATES.items():
                assert conn.execute(stmt, {"org": b}).rowcount == 0, table
            for table in TABLES:
                assert conn.execute(sql.SQL("DELETE FROM {} WHERE org = %s").format(
                    sql.Identifier("fabric", table)), (b,)).rowcount == 0, table
        with svc_conn(tenants, a) as conn:
            # Moving its own rows into B is refused by WITH CHECK.
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute("UPDATE fabric.writes SET org = %s WHERE org = %s", (b, a))
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute("UPDATE fabric.memories SET org = %s WHERE org = %s", (b, a))
    finally:
        pg.execute(sql.SQL("REVOKE UPDATE, DELETE ON {} FROM {}").format(tables, sql.Identifier(role)))
    assert fingerprint(pg, b) == before_b and fingerprint(pg, a) == before_a


def test_service_cannot_grant_itself_an_org_or_dodge_rls(tenants):
    b, role = tenants["b"], tenants["role"]
    with svc_conn(tenants, b) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO fabric.tenant_grants (role, org) VALUES (current_user, %s)", (b,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE fabric.tenant_grants SET org = %s", (b,))
        assert [r["org"] for r in conn.execute("SELECT org FROM fabric.tenant_grants")] == [tenants["a"]]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SET ROLE fabric_reader")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("ALTER TABLE fabric.memories DISABLE ROW LEVEL SECURITY")
        conn.execute("SET row_security = off")  # fails closed: an error, never a bypass
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("SELECT count(*) FROM fabric.memories")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("SELECT count(*) FROM fabric_api.memory_nodes")
    assert role != "fabric_reader"


# ------------------------------------------------------------------------------- the library as a service


@pytest.fixture(scope="module")
def svc(tenants, fab, redis_url, data_dir):
    """The library connected with the service role's credentials, on the session worker's queue."""
    f = Fabric.connect(tenants["url"], redis_url, run_worker=False, queue_name=fab.settings.queue_name,
                       data_dir=data_dir)
    yield f
    f.close()


def test_library_as_service_works_for_its_org(svc, tenants):
    a = tenants["a"]
    p = svc.wait(svc.write("Dana works at Hooli in Palo Alto.", org=a, source="svc"), timeout=60)
    assert p.decision == "child_update"
    assert svc.current_value("Dana", "employer", org=a).value == "Hooli"
    assert [m.content for m in svc.walk(p.target_id, org=a)] == ["Dana works at Hooli.",
                                                                 "Dana works at Hooli in Palo Alto."]
    assert svc.search("Where does Dana work?", org=a, k=1)[0].content.startswith("Dana works at Hooli")
    assert [m.value for m in svc.history(tenants["placed"][a]["fix"].memory_id, org=a)] == ["Initech", "Hooli"]
    assert svc.drain(org=a, timeout=30) == 0
    assert any(d.kind == "child_update" for d in svc.decisions(org=a))
    retraction = svc.retract(p.memory_id, org=a, reason="not in Palo Alto")
    with pytest.raises(NotFound):
        svc.get(p.memory_id, org=a)  # retracted: no current version
    assert [d.id for d in svc.decisions(org=a, action="retract")] == [retraction]


def test_library_as_service_reverts_in_its_org(svc, pg, tenants):
    """A revert writes to every table but orgs (a memory, its version, a decision, the write)."""
    a, dup = tenants["a"], tenants["placed"][tenants["a"]]["dup"]
    event = svc.revert(dup.decision_id, org=a, reason="not a duplicate after all")
    row = pg.execute("SELECT status, memory_id FROM fabric.writes WHERE org = %s AND id = %s",
                     (a, dup.write_id)).fetchone()
    assert row[0] == "placed" and row[1] != dup.memory_id
    assert svc.get(row[1], org=a).content == "Dana works at Hooli."
    assert pg.execute("SELECT reverted_by FROM fabric.decisions WHERE org = %s AND id = %s",
                      (a, dup.decision_id)).fetchone()[0] == event


def test_library_as_service_gets_nothing_of_another_org(svc, tenants):
    b = tenants["b"]
    placed_b = tenants["placed"][b]
    assert svc.current_value("Dana", "employer", org=b) is None
    assert svc.search("Where does Dana work?", org=b, k=3) == []
    assert svc.belief_state(org=b) == []
    assert svc.decisions(org=b) == []
    with pytest.raises(NotFound):
        svc.walk(placed_b["first"].memory_id, org=b)
    with pytest.raises(NotFound):
        svc.history(placed_b["fix"].memory_id, org=b)
    with pytest.raises(NotFound):
        svc.get(placed_b["fix"].memory_id, org=b)
    with pytest.raises(NotFound):
        svc.wait(placed_b["fix"].write_id, org=b, timeout=1)
    with pytest.raises(NotFound):
        svc.retract(placed_b["fix"].memory_id, org=b, reason="hostile")
    with pytest.raises(NotFound):
        svc.revert(placed_b["fix"].decision_id, org=b)
    with pytest.raises(NotFound):
        svc.revert(placed_b["fix"].decision_id)  # without an org: no org set, nothing visible
    with pytest.raises(TenantAccessDenied, match=b):
        svc.write("Planted in B.", org=b)


def test_write_many_sets_each_org_and_is_refused_whole(svc, pg, tenants, database_url):
    a, b, role = tenants["a"], tenants["b"], tenants["role"]
    a2 = f"{a}-second"
    before = pg.execute("SELECT count(*) FROM fabric.writes WHERE org = %s", (a,)).fetchone()[0]
    with pytest.raises(TenantAccessDenied, match=b):
        svc.write_many([{"content": "Fine for A.", "org": a}, {"content": "Planted in B.", "org": b}])
    assert pg.execute("SELECT count(*) FROM fabric.writes WHERE org = %s", (a,)).fetchone()[0] == before
    with psycopg.connect(database_url) as conn:
        roles.grant(conn, role, orgs=[a2])
    receipts = svc.write_many([{"content": "Erin works at Umbrella.", "org": a},
                               {"content": "Frank works at Vandelay.", "org": a2}])
    assert {r.org for r in receipts} == {a, a2}
    placements = [svc.wait(r, timeout=60) for r in receipts]
    assert all(p.decision == "new_branch" for p in placements)


def test_library_reads_keep_their_indexes_under_rls(tenants):
    """EXPLAIN the library's own reads as the service role: no sequential scan of a fabric table is
    needed (enable_seqscan = off would leave one in the plan if no index could serve it)."""
    a = tenants["a"]
    p = tenants["placed"][a]["fix"]
    now = datetime.now(timezone.utc)
    params = {"org": a, "subject": "Dana", "relation": "employer", "valid_at": now, "known_at": now,
              "root": p.memory_id, "id": p.memory_id, "include_superseded": False, "max_depth": None}
    with psycopg.connect(tenants["url"]) as conn:
        register_vector(conn)
        conn.execute("SELECT set_config('fabric.org', %s, true)", (a,))
        conn.execute("SET LOCAL enable_seqscan = off")
        for name in ("current_value", "walk", "history", "belief_state", "memory_exists", "memory_current",
                     "write_status", "list_decisions"):
            extra = {"id": p.write_id} if name == "write_status" else {}
            extra |= {"since": None, "kind": None, "action": None, "limit": 10} if name == "list_decisions" else {}
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + q(name), params | extra))
            assert "Seq Scan" not in plan, f"{name}:\n{plan}"
            assert "Index" in plan, f"{name}:\n{plan}"
        # The vector search still walks the HNSW index (sorting forbidden: only the index can order).
        conn.execute("SET LOCAL enable_sort = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + ANN_SQL, {
            "org": a, "q": np.full(384, 0.1, dtype=np.float32), "k": 5, "valid_at": now, "known_at": now,
            "include_superseded": False, "live_only": False, "current": True, "scan_limit": 10,
            "pool": 5, "mode": "vector", "subject_prefix": None}))
        assert "ix_current_embeddings_embedding_hnsw" in plan, plan


def test_cli_creates_a_service_role_and_grants(database_url, tenants):
    from fabric.cli import app

    runner, env = CliRunner(), {"DATABASE_URL": database_url}
    name = f"svc_cli_{uuid.uuid4().hex[:6]}"
    res = runner.invoke(app, ["roles", "create-service", name, "--org", tenants["a"], "--json"], env=env)
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    assert (info["kind"], info["orgs"]) == ("service", [tenants["a"]])
    try:
        res = runner.invoke(app, ["roles", "grant", name, "--org", tenants["b"], "--json"], env=env)
        assert json.loads(res.stdout)["orgs"] == sorted([tenants["a"], tenants["b"]])
        with psycopg.connect(info["conninfo"]) as conn:  # now it may read B (with B set)
            conn.execute("SELECT set_config('fabric.org', %s, true)", (tenants["b"],))
            assert conn.execute("SELECT count(*) FROM fabric.memories").fetchone()[0] > 0
        res = runner.invoke(app, ["roles", "revoke", name, "--org", tenants["b"], "--json"], env=env)
        assert json.loads(res.stdout)["orgs"] == [tenants["a"]]
        assert runner.invoke(app, ["roles", "revoke", name, "--org", tenants["b"]], env=env).exit_code == 3
        with psycopg.connect(info["conninfo"]) as conn:  # and now it may not
            conn.execute("SELECT set_config('fabric.org', %s, true)", (tenants["b"],))
            assert conn.execute("SELECT count(*) FROM fabric.memories").fetchone()[0] == 0
        res = runner.invoke(app, ["roles", "create-service", f"{name}_x"], env=env)
        assert res.exit_code == 2  # --org is required
        res = runner.invoke(app, ["roles", "grant", "no_such_role_here", "--org", "x"], env=env)
        assert res.exit_code == 3
    finally:
        assert runner.invoke(app, ["roles", "drop", name], env=env).exit_code == 0


def test_downgrade_to_0001_and_back(scratch_db):
    from fabric.db import migrate

    migrate(scratch_db)
    with psycopg.connect(scratch_db) as conn:
        # the five tables of 0001, tenant_grants (0002), current_embeddings and term_counts (0006)
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'fabric' AND rowsecurity"
                            ).fetchone()[0] == 8
    migrate(scratch_db, revision="0001", downgrade=True)
    with psycopg.connect(scratch_db) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'fabric' AND rowsecurity"
                            ).fetchone()[0] == 0
        assert conn.execute("SELECT to_regclass('fabric.tenant_grants')").fetchone()[0] is None
        views = {r[0] for r in conn.execute("SELECT viewname FROM pg_views WHERE schemaname = 'fabric_api'")}
        assert views == {"memory_nodes", "memory_versions"}
        assert conn.execute("SELECT DISTINCT viewowner FROM pg_views WHERE schemaname = 'fabric_api'"
                            ).fetchone()[0] == conn.execute("SELECT current_user").fetchone()[0]
    migrate(scratch_db)
    with psycopg.connect(scratch_db) as conn:
        assert conn.execute("SELECT DISTINCT viewowner FROM pg_views WHERE schemaname = 'fabric_api'"
                            ).fetchall() == [("fabric_reader",)]
