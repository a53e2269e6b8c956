"""Hybrid retrieval (issue 7): lexical + vector in one statement, names first, branch context."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone

import numpy as np
import pytest
from pgvector.psycopg import register_vector

from fabric.bench.retrieval import Row, bulk_load, generate
from fabric.errors import ValidationError
from fabric.read.search import (SEARCH_SQL, generic_statement, named_words, raw_params, search, search_params,
                                session_settings)
from fabric.types import utcnow


def T(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, tzinfo=timezone.utc)


def insert(pg, org, items):
    """Memories straight into the tables. Each item: dict(content, vec, parent=None, valid_from, valid_to,
    state='live', recorded_at=None, expired_at=None). Returns their ids in order."""
    register_vector(pg)
    did = uuid.uuid4()
    pg.execute("INSERT INTO fabric.orgs (org) VALUES (%s) ON CONFLICT DO NOTHING", (org,))
    pg.execute("INSERT INTO fabric.decisions (org, id, action, reason) VALUES (%s, %s, 'place', 'test')", (org, did))
    ids, depth, roots = [], {}, {}
    for it in items:
        mid = uuid.uuid4()
        parent = it.get("parent")
        if parent and parent not in depth:
            depth[parent], roots[parent] = pg.execute(
                "SELECT depth, root_id FROM fabric.memories WHERE org = %s AND id = %s", (org, parent)).fetchone()
        depth[mid] = depth[parent] + 1 if parent else 0
        roots[mid] = roots[parent] if parent else mid
        pg.execute("INSERT INTO fabric.memories (org, id, parent_id, root_id, depth, content, placement, embedding, "
                   "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, now())",
                   (org, mid, parent, roots[mid], depth[mid], it["content"],
                    "child_update" if parent else "new_branch", it["vec"]))
        pg.execute("INSERT INTO fabric.memory_versions (org, memory_id, version, valid_from, valid_to, state, "
                   "decision_id, recorded_at, expired_at) VALUES (%s, %s, 1, %s, %s, %s, %s, %s, %s)",
                   (org, mid, it.get("valid_from", T(2020)), it.get("valid_to"), it.get("state", "live"), did,
                    it.get("recorded_at") or utcnow(), it.get("expired_at")))
        ids.append(mid)
    return ids


def embedded(fab, texts, **common):
    vecs = fab.embedder.embed(list(texts))
    return [dict(content=t, vec=v, **common) for t, v in zip(texts, vecs)]


def near(rng, q, sim):
    """A unit vector at cosine `sim` from q."""
    noise = rng.normal(size=q.shape[0]).astype(np.float32)
    noise -= noise @ q * q
    noise /= np.linalg.norm(noise)
    v = sim * q + np.sqrt(1 - sim * sim) * noise
    return (v / np.linalg.norm(v)).astype(np.float32)


# ------------------------------------------------------------------------------------------- modes


def test_hybrid_is_the_default_and_every_mode_works(fab, org):
    receipts = fab.write_many([
        {"content": "Corin Lindqvist reaches for Julia when writing code.", "org": org},
        {"content": "The preferred programming language of Corin Galloway is Scala.", "org": org},
        {"content": "Maren Lindqvist keeps bees on the roof of her flat in Ghent.", "org": org},
    ])
    ids = [fab.wait(r, 60).memory_id for r in receipts]
    q = "Which programming language does Corin Lindqvist prefer?"
    default = fab.search(q, org=org, k=3, explain=True)
    hybrid = fab.search(q, org=org, k=3, mode="hybrid", explain=True)
    assert [m.id for m in default] == [m.id for m in hybrid]
    assert [m.score for m in default] == pytest.approx([m.score for m in hybrid])
    assert default[0].id == ids[0]                       # the fact about the person the query names
    assert default[0].ranks["lexical"] is not None and default[0].ranks["vector"] is not None
    vector = fab.search(q, org=org, k=3, mode="vector", explain=True)
    assert {m.id for m in vector} == set(ids)
    assert all(m.ranks["lexical"] is None for m in vector)
    assert [m.ranks["vector"] for m in vector] == [1, 2, 3]
    assert all(-1 <= m.score <= 1 for m in vector)
    assert vector == sorted(vector, key=lambda m: -m.score)
    lexical = fab.search(q, org=org, k=3, mode="lexical", explain=True)
    assert lexical[0].id == ids[0] and all(m.ranks["vector"] is None for m in lexical)
    assert ids[1] in {m.id for m in lexical}             # shares "Corin", "programming", "language"
    # Without explain there are no ranks; the hybrid score is named matches + the fused reciprocal ranks.
    assert all(m.ranks is None for m in fab.search(q, org=org, k=3))
    top = default[0]
    assert top.score == pytest.approx(2 + 1 / (60 + top.ranks["vector"]) + 1 / (60 + top.ranks["lexical"]))


def test_bad_arguments_name_the_field(fab, org):
    for kw, field in [(dict(mode="semantic"), "mode"), (dict(mode=None), "mode"), (dict(mode=["hybrid"]), "mode"),
                      (dict(context=-1), "context"), (dict(context=1.5), "context"), (dict(context=True), "context"),
                      (dict(explain="yes"), "explain"), (dict(k=0), "k"), (dict(k=True), "k"),
                      (dict(valid_at=datetime(2020, 1, 1)), "valid_at")]:
        with pytest.raises(ValidationError) as err:
            fab.search("anything", org=org, **kw)
        assert err.value.field == field, kw
        assert field in str(err.value)


def test_awkward_query_text_is_plain_text(fab, org):
    fab.wait(fab.write("Rust and C++ are both 'systems' languages: fast & low-level.", org=org), 60)
    for q in ["C++ & Rust: what's 'best'? \\ | ! <-> :*", "''", "the of and", "!!!", "a:b:c 'x' \"y\" (z"]:
        for mode in ("hybrid", "lexical", "vector"):
            fab.search(q, org=org, mode=mode)  # no syntax error from the text-search parser
    assert fab.search("who is it?", org=org, mode="lexical") == []          # only stop words: no lexical hit
    assert len(fab.search("who is it?", org=org, mode="hybrid")) == 1       # the vector leg still answers
    assert fab.search("C++ & Rust: what's 'best'?", org=org, mode="lexical")[0].content.startswith("Rust and C++")


def test_named_words():
    assert named_words("Which programming language does Corin Lindqvist prefer?") == "Corin Lindqvist"
    assert named_words("Corin Lindqvist prefers which language?") == "Corin Lindqvist"
    assert named_words("Where does Ada live? Ask Bob.") == "Ada Bob"
    assert named_words("Ada lives where?") == ""          # a lone sentence-initial word is not taken for a name
    assert named_words("what does corin lindqvist like?") == ""
    # a generic head is no part of the name: a memory saying "Lanternfish" names it all
    assert named_words("Who leads Project Lanternfish now?") == "Lanternfish"
    assert named_words("Is Team Kestrel on call? Ask the Project.") == "Kestrel Project"


# ------------------------------------------------------------------------------------------- time and tenant


def test_raw_statement_numbers_each_name_once_and_keeps_literals():
    """The search statement goes to the server with $n placeholders (psycopg's RawCursor): one number per
    name, reused where the name recurs; a literal's doubled percent signs become one again, and a
    literal that looks like a placeholder stays text."""
    raw, args = raw_params("SELECT %(a)s, %(b)s, %(a)s, 'x%%y', '%%(c)s' WHERE 1 %% 2 = 1", {"a": 1, "b": 2, "c": 3})
    assert raw == "SELECT $1, $2, $1, 'x%y', '%(c)s' WHERE 1 % 2 = 1" and args == [1, 2]
    params = search_params(org="50% %(query)s", text="q", vector=np.zeros(3), mode="hybrid", k=5,
                           valid_at=utcnow(), known_at=utcnow(), current=True)
    raw, args = raw_params(generic_statement(SEARCH_SQL, params), params)
    assert "'50% %(query)s'" in raw and "%(" not in raw.replace("%(query)s'", "")
    numbers = {int(n) for n in re.findall(r"\$(\d+)", raw)}
    assert numbers == set(range(1, len(args) + 1))


def test_time_filters_and_tenant_in_hybrid_and_lexical(fab, pg, org):
    other = f"o-{uuid.uuid4().hex[:10]}"
    q = "Where does Orla Quinn live?"
    rows = embedded(fab, ["Orla Quinn lives in Dublin.", "Orla Quinn lives in Cork.", "Orla Quinn lives in Sligo."])
    rows[0].update(valid_from=T(2018), valid_to=T(2021), recorded_at=T(2017))   # true 2018-2021
    rows[1].update(valid_from=T(2021), recorded_at=T(2017))                     # true since 2021
    rows[2].update(valid_from=T(2021), recorded_at=T(2020), expired_at=T(2022))  # believed in 2020-2022 only
    dublin, cork, sligo = insert(pg, org, rows)
    insert(pg, other, embedded(fab, ["Orla Quinn lives in Galway."], valid_from=T(2010)))
    for mode in ("hybrid", "lexical", "vector"):
        def ids(mode=mode, **kw):
            return {m.id for m in fab.search(q, org=org, k=10, mode=mode, **kw)}
        assert ids(valid_at=T(2019)) == {dublin}, mode
        assert ids(valid_at=T(2023)) == {cork}, mode
        assert ids(valid_at=T(2021, 6), known_at=T(2021, 6)) == {cork, sligo}, mode   # as believed back then
        assert ids(valid_at=T(2019), include_superseded=True) == {dublin, cork}, mode  # any valid time, believed now
        assert ids(known_at=T(2016)) == set(), mode                                  # nothing recorded yet
        assert all(m.org == org for m in fab.search(q, org=org, k=10, mode=mode, include_superseded=True))
        galway = fab.search(q, org=other, k=10, mode=mode)
        assert [m.content for m in galway] == ["Orla Quinn lives in Galway."], mode


def test_no_dilution_in_either_leg(fab, pg, org):
    """The best qualifying memory hides behind 300 memories that do not hold at the asked time and beat
    it in both legs: closer embeddings, and every word of the query."""
    q = "Which harbour does Captain Ysolde Marrak sail from?"
    qv = fab.embedder.embed([q])[0]
    rng = np.random.default_rng(11)
    rows = [dict(content=f"Captain Ysolde Marrak sails from the harbour of Port {i}, which harbour she loves.",
                 vec=near(rng, qv, 0.99 - i * 1e-4), valid_from=T(2030)) for i in range(300)]
    rows.append(dict(content="Ysolde Marrak sails from the harbour at Tromso.", vec=near(rng, qv, 0.8),
                     valid_from=T(2020)))
    rows += [dict(content=f"Ysolde Marrak wrote logbook page {i}.", vec=near(rng, qv, 0.5 - i * 0.01),
                  valid_from=T(2020)) for i in range(20)]
    insert(pg, org, rows)
    pg.execute("ANALYZE fabric.memories")
    pg.execute("ANALYZE fabric.memory_versions")
    expected = ["Ysolde Marrak sails from the harbour at Tromso."] + [f"Ysolde Marrak wrote logbook page {i}."
                                                                       for i in range(9)]
    for mode in ("hybrid", "lexical", "vector"):
        hits = fab.search(q, org=org, k=10, valid_at=T(2025), mode=mode)
        assert len(hits) == 10, mode
        assert hits[0].content == expected[0], mode
        assert all(h.valid_from == T(2020) for h in hits), mode
        if mode != "lexical":   # the logbook pages tie lexically; the vector orders them
            assert [h.content for h in hits] == expected, mode
    # Through the index paths explicitly: both indexes used, and the answer unchanged.
    with fab.pool.connection() as conn:
        conn.execute("SET LOCAL enable_seqscan = off")   # small table: make the planner take the indexes
        conn.execute("SET LOCAL enable_sort = off")
        now = utcnow()
        params = search_params(org=org, text=q, vector=qv, mode="hybrid", k=10, valid_at=T(2025), known_at=now)
        for stmt, args in session_settings(ef_search=40):
            conn.execute(stmt, args)
        plan = "\n".join(r["QUERY PLAN"] for r in conn.execute("EXPLAIN " + SEARCH_SQL, params).fetchall())
        assert "ix_memories_embedding_hnsw" in plan and "ix_memories_search_text" in plan, plan
        for mode in ("hybrid", "lexical"):
            hits = search(conn, org=org, text=q, vector=qv, mode=mode, k=10, valid_at=T(2025), known_at=now,
                          ef_search=40)
            assert len(hits) == 10 and hits[0]["content"] == expected[0], mode
    # When the decoys do hold, they win, as they should.
    assert fab.search(q, org=org, k=3, valid_at=T(2031))[0].content.startswith("Captain Ysolde Marrak")


# ------------------------------------------------------------------------------------------- near-twins


def test_named_entity_beats_its_near_twins(fab, pg, org):
    corpus = generate(entities=48, relations_per_entity=5, questions=120, lowercase=0.0, seed=23)
    vecs = fab.embedder.embed([f.text for f in corpus.facts])
    with fab.pool.connection() as conn:
        bulk_load(conn, org, [Row(f.id, f.text) for f in corpus.facts], vecs, recorded_at=T(2024),
                  valid_from=T(2024))
    subject = {f.id: f.subject for f in corpus.facts}
    twin_ahead = {"vector": 0, "hybrid": 0}
    found = 0
    for q in corpus.questions:
        for mode in twin_ahead:
            ids = [m.id for m in fab.search(q.text, org=org, k=5, mode=mode)]
            ahead = ids[:ids.index(q.answer)] if q.answer in ids else ids
            twin_ahead[mode] += any(subject[i] != q.subject for i in ahead)
            found += mode == "hybrid" and q.answer in ids
    # Shared first names, shared surnames one letter apart and shared templates do fool the embedding ...
    assert twin_ahead["vector"] > 0
    # ... but never the hybrid ranking: nothing about another person comes before the named person's fact.
    assert twin_ahead["hybrid"] == 0
    assert found >= 0.95 * len(corpus.questions)


def test_the_motivating_example(fab, pg, org):
    facts = ["The preferred programming language of Corin Galloway is Scala.",
             "Corin Lindqvist reaches for Julia when writing code.",
             "The preferred programming language of Corin Calloway is Rust.",
             "The preferred programming language of Maren Lindquist is Go.",
             "Corin Lindström prefers Haskell for programming.",
             "Corin Lindqvist lives in Oslo."]
    ids = insert(pg, org, embedded(fab, facts))
    hits = fab.search("Which programming language does Corin Lindqvist prefer?", org=org, k=6, explain=True)
    assert hits[0].id == ids[1]
    assert {h.id for h in hits[:2]} == {ids[1], ids[5]}   # both facts about Corin Lindqvist come first
    assert hits[0].score > 2 > hits[2].score                # two named terms matched, then at most one


# ------------------------------------------------------------------------------------------- context


def test_context_walks_through_superseded_nodes(fab, pg, org):
    texts = ["Kestrel kickoff: the Kestrel project starts in Lisbon.",        # a  (root)
             "Kestrel kickoff moved: the project starts in Porto.",            # b  child of a, superseded
             "Kestrel hires Dana Ferreira as lead engineer.",                  # c  child of b
             "Kestrel's first release ships in June.",                         # d  child of c
             "Kestrel budget approved by the board.",                          # e  child of a
             "Kestrel retrospective notes from the Porto offsite."]            # f  child of b, superseded
    rows = embedded(fab, texts)
    a, = insert(pg, org, rows[:1])
    b, = insert(pg, org, [{**rows[1], "parent": a, "state": "superseded", "valid_to": T(2021)}])
    c, = insert(pg, org, [{**rows[2], "parent": b}])
    d, = insert(pg, org, [{**rows[3], "parent": c}])
    e, = insert(pg, org, [{**rows[4], "parent": a}])
    f, = insert(pg, org, [{**rows[5], "parent": b, "state": "superseded", "valid_to": T(2021)}])
    by_id = {a: "a", b: "b", c: "c", d: "d", e: "e", f: "f"}

    def ctx(query, n, **kw):
        hits = fab.search(query, org=org, k=1, context=n, **kw)
        return by_id[hits[0].id], [by_id[m.id] for m in hits[0].context], hits[0].context

    hit, near_a, _ = ctx("Where does the Kestrel project start, Lisbon?", 5)
    assert hit == "a" and near_a == ["e", "c", "d"]          # e (1 hop), c (2 hops, through b), d (3 hops)
    hit, near_c, mems = ctx("Who did Kestrel hire as lead engineer?", 5)
    assert hit == "c" and near_c == ["d", "a"]               # d below; a above, through b (e is a's, not c's)
    assert all(m.state == "live" and m.valid_to is None for m in mems)
    assert ctx("Who did Kestrel hire as lead engineer?", 1)[1] == ["d"]
    hit, with_sup, _ = ctx("Who did Kestrel hire as lead engineer?", 5, include_superseded=True)
    assert with_sup == ["b", "d", "a"]                     # the superseded parent is returned when asked
    assert all(m.context == [] for m in fab.search("Kestrel", org=org, k=3))   # no context unless asked


def test_context_through_the_write_path(fab, org):
    root = fab.wait(fab.write("Project Heron is a data platform.", org=org,
                              subject="Project Heron", relation="description", value="data platform"), 60)
    child = fab.wait(fab.write("Project Heron is a data platform built on Postgres.", org=org,
                               subject="Project Heron", relation="description", value="data platform"), 60)
    assert child.decision == "child_update" and child.target_id == root.memory_id
    hits = fab.search("Is Project Heron built on Postgres?", org=org, k=1, context=2)
    assert hits[0].id == child.memory_id
    assert [m.id for m in hits[0].context] == [root.memory_id]


def test_an_org_name_with_quotes_and_percent_signs_is_searched_as_written(fab, org):
    """A current-state hybrid search writes the org into its statement as a literal (one plan per org):
    quotes, backslashes and psycopg's own placeholder syntax in the name stay plain text."""
    odd = f"{org} o'brien \\ 50% %(text)s %s"
    fab.wait(fab.write("Ines Varga keeps her kayak at the Lakeside boathouse.", org=odd), 60)
    fab.wait(fab.write("Ines Varga keeps her kayak at the Lakeside boathouse.", org=org), 60)
    for mode in ("hybrid", "lexical", "vector"):
        hits = fab.search("Where does Ines Varga keep her kayak?", org=odd, mode=mode)
        assert [m.content for m in hits] == ["Ines Varga keeps her kayak at the Lakeside boathouse."]
        assert all(m.org == odd for m in hits)
