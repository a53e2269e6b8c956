"""Property-based tier (hypothesis) over the public API and the CLI: whatever a caller passes, a call
either succeeds or raises `ValidationError` naming the field, and a refused write leaves nothing.

Accepted writes are checked to be stored verbatim. The size scales with FABRIC_FUZZ_EXAMPLES (examples
per property; default 40)."""

from __future__ import annotations

import os
import subprocess
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric import Fabric
from fabric.errors import ValidationError

EXAMPLES = int(os.environ.get("FABRIC_FUZZ_EXAMPLES", "40"))
fuzz = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# ----------------------------------------------------------------- strategies

NASTY = ["", " ", "\x00", "a\x00b", "\ud800", "x\udcff", "\udcc3\udca9", "\u0000key", "é", "\U0001f600",
         "'; DROP TABLE fabric.writes; --", "%(org)s", "{}", "\\", "\n\t"]
# Any code point, surrogates included (what undecodable bytes in argv become), plus known troublemakers.
any_char = st.characters(exclude_categories=[])
texts = st.one_of(st.text(any_char, max_size=40), st.sampled_from(NASTY),
                  st.builds(lambda a, b, c: a + b + c, st.text(max_size=10), st.sampled_from(NASTY),
                            st.text(max_size=10)))
opt_texts = st.one_of(st.none(), texts)
zones = st.sampled_from([timezone.utc, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)),
                         timezone(timedelta(hours=5, minutes=30))])
times = st.one_of(st.none(), st.datetimes(timezones=zones), st.datetimes(),  # naive ones too
                  st.sampled_from([datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
                                   datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-12))),
                                   datetime(9999, 12, 1, tzinfo=timezone.utc)]),
                  st.sampled_from(["2024-01-01", 20240101, True]))


def nested(depth: int) -> Any:
    out: Any = "leaf"
    for _ in range(depth):
        out = {"a": out}
    return out


json_leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                        texts)
metadata = st.one_of(
    st.none(),
    st.dictionaries(texts, st.recursive(json_leaves, lambda kids: st.lists(kids, max_size=3)
                                        | st.dictionaries(texts, kids, max_size=3), max_leaves=8), max_size=4),
    st.sampled_from([nested(3000), nested(10), {"n": float("nan")}, {"x": float("inf")}, {"o": object()},
                     {"b": b"bytes"}, {"s": {1, 2}}, {1: "int key"}, {"k\x00": 1}, {"v": "a\x00"},
                     {"t": datetime(2024, 1, 1)}, ["not", "a", "mapping"], "text"]))

WRITE_FIELDS = {"content", "org", "subject", "relation", "value", "valid_from", "valid_to", "source", "kind",
                "durability", "metadata"}


def field_root(field: str) -> str:
    """'items[3].metadata.a[0]' -> 'metadata'; 'metadata key ...' -> 'metadata'."""
    name = field.split("].", 1)[1] if field.startswith("items[") and "]." in field else field
    for sep in (".", "[", " "):
        name = name.split(sep, 1)[0]
    return name


# ----------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def fz(database_url, redis_url):
    """A Fabric with no worker on a queue of its own: fuzzed writes are accepted, never placed."""
    f = Fabric.connect(database_url, redis_url, run_worker=False, auto_migrate=False,
                       queue_name=f"fabric-fuzz-{uuid.uuid4().hex[:8]}")
    f.fuzz_orgs = set()
    yield f
    with f.pool.connection() as conn:  # leave nothing for the other tests to trip on
        orgs = list(f.fuzz_orgs)
        conn.execute("DELETE FROM fabric.writes WHERE org = ANY(%s)", (orgs,))
        conn.execute("DELETE FROM fabric.orgs o WHERE org = ANY(%s) AND NOT EXISTS "
                     "(SELECT 1 FROM fabric.memories m WHERE m.org = o.org)", (orgs,))
        conn.commit()
    f.close()


@pytest.fixture(scope="module")
def placed(fab):
    """One placed memory to walk from, and a decision to list."""
    org = f"fz-read-{uuid.uuid4().hex[:8]}"
    p = fab.wait(fab.write("The Vilnius office has a rooftop garden.", org=org, subject="Vilnius office",
                           relation="feature", value="rooftop garden"), timeout=60)
    return org, p.memory_id


def total_writes(fab) -> int:
    with fab.pool.connection() as conn:
        return conn.execute("SELECT count(*) AS n FROM fabric.writes").fetchone()["n"]


def stored(fab, org: str, write_id) -> dict:
    with fab.pool.connection() as conn:
        return conn.execute("SELECT * FROM fabric.writes WHERE org = %s AND id = %s", (org, write_id)).fetchone()


orgs = st.one_of(st.uuids().map(lambda u: f"fz-{u.hex[:10]}"), texts)


# ----------------------------------------------------------------- the library

@fuzz
@given(content=texts, org=orgs, key=st.tuples(opt_texts, opt_texts, opt_texts), valid_from=times, valid_to=times,
       source=opt_texts, kind=st.one_of(opt_texts, st.just("episodic")), durability=opt_texts, meta=metadata)
def test_write_accepts_verbatim_or_names_the_field(fz, content, org, key, valid_from, valid_to, source, kind,
                                                   durability, meta):
    before = total_writes(fz)
    subject, relation, value = key
    try:
        receipt = fz.write(content, org=org, subject=subject, relation=relation, value=value, valid_from=valid_from,
                           valid_to=valid_to, source=source, kind=kind, durability=durability, metadata=meta)
    except ValidationError as exc:
        assert field_root(exc.field) in WRITE_FIELDS, exc.field
        assert total_writes(fz) == before, "a refused write left something behind"
        return
    fz.fuzz_orgs.add(org)
    row = stored(fz, org, receipt.id)
    assert row["content"] == content.strip() and row["status"] == "pending"
    assert (row["subject"], row["value"], row["source"]) == (
        subject.strip() if subject else None, value.strip() if value else None, source)
    assert row["metadata"] == (meta or {})
    if valid_from is not None:
        assert row["valid_from"] == valid_from
    assert total_writes(fz) == before + 1


batches = st.one_of(
    st.sampled_from([None, 5, "abc", b"abc", [None], [5], ["abc"], {"content": "a mapping, not a list"},
                     [{"content": "ok"}, {"content": None}], [{1: "x"}], [{"content": "ok", "bogus": 1}]]),
    st.lists(st.fixed_dictionaries({"content": texts}, optional={"metadata": metadata, "valid_from": times,
                                                                 "kind": opt_texts}), max_size=4))


@fuzz
@given(items=batches)
def test_write_many_accepts_all_or_nothing(fz, items):
    before = total_writes(fz)
    org = f"fz-{uuid.uuid4().hex[:10]}"
    if isinstance(items, list):
        items = [dict(it, org=org) if isinstance(it, dict) and all(isinstance(k, str) for k in it) else it
                 for it in items]
    try:
        receipts = fz.write_many(items)
    except ValidationError as exc:
        assert exc.field == "items" or exc.field.startswith("items["), exc.field
        assert total_writes(fz) == before
        return
    fz.fuzz_orgs.add(org)
    assert total_writes(fz) == before + len(receipts) == before + len(items)


@fuzz
@given(query=texts, k=st.one_of(st.integers(), st.booleans()), mode=st.one_of(st.sampled_from(
    ["hybrid", "vector", "lexical"]), texts), context=st.integers(-5, 200), valid_at=times, known_at=times)
def test_search_answers_or_names_the_field(fz, placed, query, k, mode, context, valid_at, known_at):
    org, _ = placed
    try:
        hits = fz.search(query, org=org, k=k, mode=mode, context=context, valid_at=valid_at, known_at=known_at)
    except ValidationError as exc:
        assert exc.field in {"query", "k", "mode", "context", "valid_at", "known_at"}, exc.field
        return
    assert len(hits) <= k


@fuzz
@given(subject=texts, relation=texts, org=orgs, valid_at=times, known_at=times)
def test_current_value_answers_or_names_the_field(fz, subject, relation, org, valid_at, known_at):
    try:
        fz.current_value(subject, relation, org=org, valid_at=valid_at, known_at=known_at)
    except ValidationError as exc:
        assert exc.field in {"subject", "relation", "org", "valid_at", "known_at"}, exc.field


@fuzz
@given(max_depth=st.one_of(st.none(), st.integers(), st.booleans(), st.sampled_from([10 ** 12, 2 ** 31, -1, 1.5])),
       valid_at=times, include_superseded=st.booleans())
def test_walk_answers_or_names_the_field(fz, placed, max_depth, valid_at, include_superseded):
    org, root = placed
    try:
        nodes = fz.walk(root, org=org, max_depth=max_depth, valid_at=valid_at, include_superseded=include_superseded)
    except ValidationError as exc:
        assert exc.field in {"max_depth", "valid_at"}, exc.field
        return
    assert all(n.org == org for n in nodes)


@fuzz
@given(limit=st.one_of(st.integers(), st.booleans()), kind=opt_texts, action=opt_texts, since=times)
def test_decisions_answer_or_name_the_field(fz, placed, limit, kind, action, since):
    org, _ = placed
    try:
        rows = fz.decisions(org=org, limit=limit, kind=kind, action=action, since=since)
    except ValidationError as exc:
        assert exc.field in {"limit", "kind", "action", "since"}, exc.field
        return
    assert len(rows) <= limit


@fuzz
@given(valid_at=times, known_at=times, org=orgs)
def test_belief_state_answers_or_names_the_field(fz, valid_at, known_at, org):
    try:
        fz.belief_state(org=org, valid_at=valid_at, known_at=known_at)
    except ValidationError as exc:
        assert exc.field in {"org", "valid_at", "known_at"}, exc.field


# ----------------------------------------------------------------- the CLI

iso_times = st.one_of(st.none(), st.datetimes(timezones=zones).map(datetime.isoformat), texts,
                      st.sampled_from(["9999-12-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "2024-01-01",
                                       "9999-12-31T23:00:00-12:00"]))


@pytest.fixture(scope="module")
def cli_env(fz, database_url, redis_url):
    return {"DATABASE_URL": database_url, "REDIS_URL": redis_url, "FABRIC_QUEUE_NAME": fz.settings.queue_name,
            "FABRIC_RUN_WORKER": "false"}


@settings(fuzz, max_examples=max(5, EXAMPLES // 2))
@given(content=texts, valid_from=iso_times, kind=st.one_of(st.none(), st.just("episodic"), texts))
def test_cli_write_exits_0_or_2(fz, cli_env, monkeypatch, content, valid_from, kind):
    from typer.testing import CliRunner

    from fabric.cli import app

    for name, value in cli_env.items():
        monkeypatch.setenv(name, value)
    org = f"fz-{uuid.uuid4().hex[:10]}"
    args = ["write", content, "--org", org, "--no-wait", "--json"]
    args += ["--valid-from", valid_from] if valid_from is not None else []
    args += ["--kind", kind] if kind is not None else []
    before = total_writes(fz)
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    fz.fuzz_orgs.add(org)
    assert total_writes(fz) == before + (result.exit_code == 0)


def test_cli_refuses_undecodable_arguments_and_year_9999_episodic_with_exit_2(fz, cli_env):
    """As a shell passes them: raw bytes that are not UTF-8, through the real `fabric` command."""
    env = dict(os.environ, **cli_env)
    org = f"fz-{uuid.uuid4().hex[:10]}"
    before = total_writes(fz)
    bad = subprocess.run([b"fabric", b"write", b"caf\xe9 \xff\xfe", b"--org", org.encode(), b"--no-wait"],
                         env=env, capture_output=True, timeout=300)
    assert bad.returncode == 2, bad.stderr
    assert b"invalid content" in bad.stderr and b"Traceback" not in bad.stderr
    bad_org = subprocess.run([b"fabric", b"write", b"fine", b"--org", b"\xff", b"--no-wait"], env=env,
                             capture_output=True, timeout=300)
    assert bad_org.returncode == 2 and b"invalid org" in bad_org.stderr, bad_org.stderr
    late = subprocess.run(["fabric", "write", "A note.", "--org", org, "--kind", "episodic", "--no-wait",
                           "--valid-from", "9999-12-01T00:00:00Z"], env=env, capture_output=True, timeout=300)
    assert late.returncode == 2 and b"invalid valid_from" in late.stderr, late.stderr
    assert total_writes(fz) == before
