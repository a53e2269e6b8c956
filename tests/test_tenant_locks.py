"""A service role cannot take another org's placement locks (issue 15, migration 0005)."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.rows import dict_row

from fabric import roles


@pytest.fixture(scope="module")
def service(database_url):
    tag = uuid.uuid4().hex[:8]
    a, b = f"lock-a-{tag}", f"lock-b-{tag}"
    name = f"svc_lock_{tag}"
    with psycopg.connect(database_url) as conn:
        conn.execute("INSERT INTO fabric.orgs (org) VALUES (%s), (%s) ON CONFLICT DO NOTHING", (a, b))
        roles.create_service(conn, name, orgs=[a])
    yield {"a": a, "b": b, "url": roles.role_url(database_url, name)}
    with psycopg.connect(database_url) as conn:
        roles.drop(conn, name)


def connect_as(service, org: str) -> psycopg.Connection:
    conn = psycopg.connect(service["url"], row_factory=dict_row)
    conn.execute("SELECT set_config('fabric.org', %s, false)", (org,))
    conn.commit()
    return conn


@pytest.mark.parametrize("call", [
    "SELECT pg_advisory_xact_lock(hashtextextended('fabric.place:' || %(b)s, 0))",
    "SELECT pg_advisory_lock(hashtextextended('fabric.place:' || %(b)s, 0))",
    "SELECT pg_try_advisory_xact_lock_shared(1)",
    "SELECT pg_advisory_xact_lock(1, 2)",
])
def test_service_role_cannot_call_advisory_locks_directly(service, call):
    with connect_as(service, service["a"]) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(call, {"b": service["b"]})


def test_lock_function_takes_only_the_org_the_role_acts_for(service, database_url):
    a, b = service["a"], service["b"]
    with connect_as(service, a) as conn:
        conn.execute("SELECT fabric.lock_placement(%s)", (a,))  # its own org
        conn.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="may not take placement locks"):
            conn.execute("SELECT fabric.lock_placement(%s)", (b,))
        conn.rollback()
    with connect_as(service, b) as conn:  # setting fabric.org to an org it was not granted does not help
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT fabric.lock_placement(%s)", (b,))


def test_holding_its_own_org_lock_does_not_stall_another_org(service, fab):
    a, b = service["a"], service["b"]
    with connect_as(service, a) as holder:
        holder.execute("SELECT fabric.lock_placement(%s)", (a,))  # held until rollback
        placed = fab.wait(fab.write("The Gdansk depot opens at six.", org=b), timeout=30)
        assert placed.decision == "new_branch"
        holder.rollback()
