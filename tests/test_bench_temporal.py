"""`fabric bench temporal` (issues 4 and 10): the quick benchmark on the real services, fabric's bar
on same-template and rephrased cases, the conversational stream, the outputs, the flat baselines,
and the generator's anti-cheat rules."""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from datetime import timedelta

import numpy as np
import pytest
from typer.testing import CliRunner

from fabric.bench import temporal as tb
from fabric.bench.flat import ChromaFlat, FlatPgvector, chroma_available
from fabric.cli import app

# The quick run takes about a minute on an idle 2-core machine; leave room for a busy one.
pytestmark = pytest.mark.timeout(900)


# ------------------------------------------------------------------------------ the quick run


@pytest.fixture(scope="module")
def quick(fab, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-temporal")
    return tb.run(fab, quick=True, seed=0, out=out), out


def _rows(results, backend, phrasing="same"):
    return {r["kind"]: r for r in results["by_kind"] if r["backend"] == backend and r["phrasing"] == phrasing}


# Where a column does not reach the bar yet, the test is a strict xfail naming what was measured:
# it shows in every run, and passing it (XPASS) fails, so the mark goes when the bar is reached.
# None today: measured 2026-11-30 after issue 10's alignment (align.py), every column meets it.
BAR_NOT_MET: dict[tuple[str, str], str] = {}


def _bar_cases():
    for backend in ("fabric-keys", "fabric-text"):
        for phrasing in tb.PHRASINGS:
            why = BAR_NOT_MET.get((backend, phrasing))
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            yield pytest.param(backend, phrasing, marks=marks, id=f"{backend}-{phrasing}")


@pytest.mark.parametrize("backend, phrasing", list(_bar_cases()))
def test_fabric_meets_its_bar(quick, backend, phrasing):
    """100% on every starred kind, no stale fact returned as current, no escalation: with keys and
    text only, on same-template and on rephrased cases."""
    results, _ = quick
    rows = _rows(results, backend, phrasing)
    assert set(rows) == set(tb.KINDS)
    mine = [q for q in results["queries"] if q["backend"] == backend and q["phrasing"] == phrasing]
    for kind in tb.MUST_KINDS:
        assert rows[kind]["queries"] >= tb.CASES_QUICK
        wrong = [(q["case"], q["asked"], q["question"], "expected", q["expected"], "got", q["got"])
                 for q in mine if q["kind"] == kind and not q["correct"]]
        assert not wrong, f"{backend} ({phrasing}) wrong on {kind}: {wrong}"
    assert sum(r["stale"] for r in rows.values()) == 0, "stale facts returned as current"
    assert sum(r["escalations"] for r in rows.values()) == 0
    assert sum(r["false_approvals"] for r in rows.values()) == 0
    summary = results["by_backend"][backend]
    assert summary["validator_calls_per_write"] is not None and summary["validator_calls_per_write"] <= 1
    assert summary["ingest_ms_per_write"] > 0 and summary["query_p95_ms"] >= summary["query_p50_ms"] > 0
    # Every as-of question of fabric was answered right.
    asof = [q for q in mine if q["asked"] != "now" and q["kind"] in tb.MUST_KINDS]
    assert asof and all(q["correct"] for q in asof)


def test_the_conversational_stream_is_not_collapsed(quick):
    """Distinct facts about the same people: at most 1% recorded as duplicates or superseded."""
    results, _ = quick
    c = results["conversation"]
    assert c["collapsed_share"] <= 0.01, c["examples"]


def test_the_conversational_stream_is_measured(quick):
    """The figure itself, whatever it is: every turn placed, collapsed turns named with the reason."""
    results, _ = quick
    c = results["conversation"]
    assert c["turns"] == tb.TURNS_QUICK and sum(c["decisions"].values()) == c["turns"]
    assert c["collapsed"] == c["duplicates"] + c["superseded"] and len(c["examples"]) == c["collapsed"]
    assert c["collapsed_share"] == c["collapsed"] / c["turns"] and c["validator_calls_per_write"] <= 1


def test_the_stream_alone(fab, tmp_path):
    """--stream-only: no cases, no questions, only the conversational stream and its table."""
    from fabric.errors import ValidationError

    results = tb.run(fab, stream_only=True, turns=6, backends="fabric-text,pgvector", out=tmp_path)
    assert results["stream_only"] and results["queries"] == [] and results["cases"] == []
    assert results["conversation"]["turns"] == 6 and results["conversation_llm"] is None
    assert results["by_backend"]["fabric-text"]["writes"] == 0
    md = (tmp_path / "temporal.md").read_text()
    assert "Conversational stream" in md and "Accuracy by kind" not in md
    assert not (tmp_path / "temporal.png").exists()
    for kw in (dict(turns=0, backends="fabric-text"), dict(turns=6, backends="pgvector")):
        with pytest.raises(ValidationError):
            tb.run(fab, stream_only=True, out=None, **kw)


def test_flat_baselines_are_measured_in_the_same_run(quick):
    results, _ = quick
    flats = ["pgvector"] + (["chroma"] if chroma_available()[0] else [])
    assert [b for b in results["backends"] if b in ("pgvector", "chroma")] == flats
    for backend in flats:
        for phrasing in tb.PHRASINGS:
            rows = _rows(results, backend, phrasing)
            assert set(rows) == set(tb.KINDS)
            for r in rows.values():
                assert 0.0 <= r["accuracy"] <= 1.0 and r["queries"] > 0
        s = results["by_backend"][backend]
        assert s["writes"] == results["by_backend"]["fabric-keys"]["writes"]
        assert s["escalation_rate"] is not None and s["stale_rate"] is not None
        assert s["validator_calls_per_write"] is None
    # Same questions for every backend.
    qids = {b: sorted(q["qid"] for q in results["queries"] if q["backend"] == b) for b in results["backends"]}
    assert len({tuple(v) for v in qids.values()}) == 1
    if not chroma_available()[0]:
        assert "chroma" in results["notes"]


def test_outputs_are_written(quick):
    results, out = quick
    data = json.loads((out / "temporal.json").read_text())
    assert data["run_id"] == results["run_id"] and data["quick"] is True
    assert {r["backend"] for r in data["by_kind"]} == set(results["backends"])
    assert len(data["queries"]) == len(results["queries"]) and data["cases"]
    assert [b["behaviour"] for b in data["behaviours"]] == [b[0] for b in tb.BEHAVIOURS]
    png = (out / "temporal.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    md = (out / "temporal.md").read_text()
    assert "| staleness * |" in md and "| staleness * ~r |" in md and "fabric-text" in md
    assert "Conversational stream" in md and data["conversation"]["turns"] == tb.TURNS_QUICK


def test_the_cli_runs_a_flat_only_benchmark(database_url, redis_url, tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    res = CliRunner().invoke(app, ["bench", "temporal", "--backends", "pgvector", "--per-kind", "1",
                                   "--no-worker", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["backends"] == ["pgvector"] and data["bar"] == {}
    assert (tmp_path / "temporal.json").is_file() and (tmp_path / "temporal.png").is_file()
    bad = CliRunner().invoke(app, ["bench", "temporal", "--backends", "pgvector,nosuch", "--no-worker"])
    assert bad.exit_code == 2 and "backends" in bad.output


def test_the_llm_backends_run_beside_the_rules_in_one_run(fab, tmp_path):
    """fabric-text-llm and fabric-keys-llm beside fabric-text (the rules), on the same cases: their
    writes are placed by a second worker whose validator asks a scripted OpenAI-compatible server on
    127.0.0.1 through the real openai client; the rules' backend never reaches it."""
    from tests.openai_stub import OpenAIStub, answer

    stub = OpenAIStub(model="stub-model")
    try:
        stub.script(default=answer("new_branch", reason="scripted: not sure"))
        results = tb.run(fab, per_kind=1, phrasings=("rephrased",), turns=6, out=tmp_path,
                         backends="fabric-text,fabric-text-llm,fabric-keys-llm",
                         llm=tb.LLMEndpoint(stub.base_url, "stub-model", "k"))
    finally:
        stub.close()
    pb = results["by_backend"]
    assert results["backends"] == ["fabric-text", "fabric-text-llm", "fabric-keys-llm"]
    assert "llm" not in pb["fabric-text"]["validators"] and pb["fabric-text"]["llm_calls_per_write"] is None
    for b in tb.LLM_BACKENDS:
        assert pb[b]["writes"] == pb["fabric-text"]["writes"] and pb[b]["llm_calls_per_write"] is not None
    # Every request the stub saw is a placement the model decided for an LLM backend (or its stream).
    model_placed = [p for b in tb.LLM_BACKENDS for ps in results["placements"][b].values() for p in ps
                    if p["validator"] == "llm"]
    conv = results["conversation_llm"]
    assert stub.count == len(model_placed) + round(conv["llm_calls_per_write"] * conv["turns"])
    assert results["conversation"]["turns"] == conv["turns"] == 6
    md = (tmp_path / "temporal.md").read_text()
    assert "LLM calls / write" in md and "| conversational stream | fabric-text | fabric-text-llm |" in md


def test_an_llm_backend_asks_the_model_where_the_rules_are_unsure(fab):
    """Two writes the rules cannot settle ("a night owl" / "a morning person": no lexicon frame, no
    alignment, no closed scale of values; "single" / "married" the rules now read themselves) go to the
    model; its scripted answer is what is placed, and the call's time comes from the decision log."""
    from tests.openai_stub import OpenAIStub, answer

    stub = OpenAIStub(model="stub-model")
    run_id = uuid.uuid4().hex[:8]
    t0 = tb.EPOCH
    case = tb.Case("c1", "staleness", facts={
        "a": tb.Fact("a", "Carlos", "chronotype", "night owl", "Carlos is a night owl.", t0, "version", 0),
        "b": tb.Fact("b", "Carlos", "chronotype", "morning person", "Carlos is a morning person.",
                     t0 + timedelta(days=400), "version", 1)}, phases={1: ["a"], 2: ["b"]})
    fab_llm = tb.llm_fabric(fab, tb.LLMEndpoint(stub.base_url, "stub-model", "k"), run_id)
    try:
        # The validator applies a correction only when the old value the model names is in the target.
        morning = answer("contradiction_fork", target="m1", subject="Carlos", relation="chronotype",
                         value="morning person", target_value="night owl", reason="scripted: an early riser now")
        stub.script(default=lambda body: morning)
        backend = tb.FabricBackend(fab_llm, keyed=False, run_id=run_id, llm=True)
        for phase in (1, 2):
            backend.ingest(phase, [case])
        backend.read_llm_latency([case])
    finally:
        fab_llm.close()
        stub.close()
    st = backend.stats
    assert backend.name == "fabric-text-llm" and st.writes == 2
    assert stub.count == st.llm_calls == 1 and len(st.llm_ms) == 1 and st.llm_ms[0] > 0
    placed = st.placements["c1"][1]
    assert placed["validator"] == "llm" and placed["decision"] == "contradiction_fork"
    assert "scripted: an early riser now" in placed["reason"]
    assert [m.content for m in fab.belief_state(org=backend.org(case))] == ["Carlos is a morning person."]


def test_an_llm_backend_without_an_endpoint_is_refused(monkeypatch):
    with pytest.raises(tb.ValidationError) as err:
        tb.run(None, backends="fabric-text,fabric-text-llm")
    assert err.value.field == "llm-url"
    for name in ("OPENAI_BASE_URL", "FABRIC_LLM_MODEL", "FABRIC_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    res = CliRunner().invoke(app, ["bench", "temporal", "--backends", "fabric-text-llm", "--no-worker"])
    assert res.exit_code == 2 and "--llm-url" in res.output
    res = CliRunner().invoke(app, ["bench", "temporal", "--backends", "llm", "--llm-url", "http://127.0.0.1:9/v1",
                                   "--no-worker"])
    assert res.exit_code == 2 and "--llm-model" in res.output


def test_the_llm_backends_are_opt_in():
    assert tb.parse_backends("all") == list(tb.ALL_BACKENDS) and not set(tb.LLM_BACKENDS) & set(tb.ALL_BACKENDS)
    assert tb.parse_backends("fabric,llm") == ["fabric-keys", "fabric-text", "fabric-keys-llm", "fabric-text-llm"]


def test_a_worker_gets_the_endpoint_it_was_given_over_the_environment():
    """spawn_worker names OPENAI_BASE_URL itself: the environment's value must not win over the
    LLM backends' endpoint in their worker."""
    from fabric.api import _env_name

    assert _env_name("openai_base_url") == "OPENAI_BASE_URL" and _env_name("openai_api_key") == "OPENAI_API_KEY"
    assert _env_name("queue_name") == "FABRIC_QUEUE_NAME"


def test_retracting_the_middle_of_three_versions_keeps_the_last_one_current(fab, org):
    """The minimal form of the benchmark's middle-retraction case (retraction, odd cases): after
    retracting V2 of V1 -> V2 -> V3, V1 held until V3's valid_from, and only V3 holds now."""
    from datetime import datetime, timezone

    def put(year, city):
        return fab.wait(fab.write(f"Ada Moreau lives in {city}.", org=org, subject="Ada Moreau",
                                  relation="home_city", value=city,
                                  valid_from=datetime(year, 1, 1, tzinfo=timezone.utc)), 60)

    v1, v2, v3 = put(2018, "Lyon"), put(2020, "Porto"), put(2022, "Tallinn")
    fab.retract(v2.memory_id, org=org, reason="Porto was wrong")
    held_now = sorted(m.value for m in fab.belief_state(org=org))
    assert held_now == ["Tallinn"], f"held now after retracting the middle version: {held_now}"
    first = fab.get(v1.memory_id, org=org)
    assert first.valid_to == datetime(2022, 1, 1, tzinfo=timezone.utc) and first.superseded_by == v3.memory_id


# ------------------------------------------------------------------------------ the generator


def test_cases_are_reproducible_from_the_seed():
    a, b, c = tb.generate(7, 3), tb.generate(7, 3), tb.generate(8, 3)
    texts = lambda cases: [f.text for case in cases for f in case.facts.values()]  # noqa: E731
    assert texts(a) == texts(b) and texts(a) != texts(c)
    assert [k for k in tb.KINDS] == sorted({x.kind for x in a}, key=tb.KINDS.index)
    full = tb.generate(0, tb.CASES_FULL)
    assert len(full) == tb.CASES_FULL * len(tb.KINDS) * len(tb.PHRASINGS)
    for phrasing in tb.PHRASINGS:
        relations = {f.relation for case in full if case.phrasing == phrasing for f in case.facts.values()}
        assert relations == set(tb.REL), phrasing


def test_rephrasings_move_subject_and_value():
    """At least 8 relations, at least 4 rephrasings each, the value leading in one and following the
    subject in another; in rephrased cases no two versions of a fact share a style."""
    assert len(tb.RELATIONS) >= 8
    from fabric.placement.facts import RELATIONS as LEXICON

    # some the rule validator's lexicon does not know: read by aligning names and values (align.py)
    assert len({r.name for r in tb.RELATIONS} - {r.name for r in LEXICON}) >= 2
    for rel in tb.RELATIONS:
        assert len(set(rel.rephrasings)) >= 4, rel.name
        leads = {"value" if t.index("{v") < t.index("{s}") else "subject" for t in rel.rephrasings}
        assert leads == {"value", "subject"}, rel.name
    for case in tb.generate(1, 3, phrasings=("rephrased",)):
        by_key = {}
        for f in case.facts.values():
            if f.role == "version":
                by_key.setdefault((f.subject, f.relation), []).append(f)
        for vs in by_key.values():
            assert len({v.template for v in vs}) == len(vs) and len({v.text for v in vs}) == len(vs)
    # numbers are written in digits and in words
    texts = [f.text for c in tb.generate(0, 6, phrasings=("rephrased",)) for f in c.facts.values()
             if f.relation == "headcount"]
    assert any(tb.number_words(int(f)) in t for t in texts for f in tb.HEADCOUNTS)
    assert tb.number_words(345) == "three hundred and forty-five" and tb.number_words(40) == "forty"


def test_the_conversation_is_distinct_facts_about_one_cast():
    turns = tb.conversation_turns(0, tb.TURNS_FULL)
    assert len(turns) == len(set(turns)) == tb.TURNS_FULL
    assert turns == tb.conversation_turns(0, tb.TURNS_FULL) != tb.conversation_turns(1, tb.TURNS_FULL)
    for person in tb.STREAM_PEOPLE:  # the same people come back again and again
        assert sum(person in t for t in turns) >= 10
    # a symmetric relation with its two names swapped is the same fact, not a second turn
    cast = "|".join(tb.STREAM_PEOPLE + tb.STREAM_COMPANIES)
    symmetric = [(frozenset(re.findall(cast, t)), re.sub(cast, "#", t)) for t in turns
                 if "supply contract" in t or "hiking trip" in t]
    assert symmetric and len(symmetric) == len(set(symmetric))


def test_anti_cheat_refuses_surface_cues():
    cases = tb.generate(0, 2)
    tb.check_anti_cheat(cases)  # the generated cases pass
    case = next(c for c in cases if c.kind == "staleness")
    fid = case.phases[2][0]
    f = case.facts[fid]
    for text in (f.text[:-1] + " now.", f.text[:-1] + " since 2021.", "Currently, " + f.text,
                 f.text[:-1] + " in March."):
        case.facts[fid] = dataclasses.replace(f, text=text)
        with pytest.raises(tb.BenchmarkError, match="recency word or date"):
            tb.check_anti_cheat([case])
    # A version in another style than its sibling is refused too.
    other = tb.REL[f.relation].templates[(f.template + 1) % 3].format(s=f.subject, v=f.value)
    case.facts[fid] = dataclasses.replace(f, text=other)
    with pytest.raises(tb.BenchmarkError, match="differ in style"):
        tb.check_anti_cheat([case])
    case.facts[fid] = f
    # Every org holds facts of the same relation about other subjects.
    for d in [x for x in case.facts.values() if x.role == "distractor"][:2]:
        del case.facts[d.fid]
    with pytest.raises(tb.BenchmarkError, match="other subjects"):
        tb.check_anti_cheat([case])


def test_the_oracle_reads_the_timeline():
    cases = {c.kind: c for c in tb.generate(3, 1)}
    ooo = cases["out_of_order"]
    versions = sorted((f for f in ooo.facts.values() if f.role == "version"), key=lambda f: f.valid_from)
    now_q, then_q = ooo.queries
    assert ooo.phases[1][-1] == versions[1].fid  # the newer one is written first
    assert tb.expected_value(ooo, now_q.subject, now_q.relation) == versions[1].value
    assert tb.expected_value(ooo, then_q.subject, then_q.relation, then_q.valid_at) == versions[0].value
    ret = cases["retraction"]
    old, correction = sorted((f for f in ret.facts.values() if f.role == "version"), key=lambda f: f.valid_from)
    s, r = old.subject, old.relation
    assert tb.expected_value(ret, s, r) == old.value
    assert tb.expected_value(ret, s, r, known_phase=2) == correction.value


# ------------------------------------------------------------------------------ the flat stores


def _store_roundtrip(store):
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(4, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store.add(["a", "b", "c", "d"], ["A", "B", "C", "D"], vecs,
              [{"n": i, "valid_from": "2020-01-01T00:00:00+00:00"} for i in range(4)])
    assert store.count() == 4
    hits = store.query(vecs[2], k=2)
    assert [h.id for h in hits][0] == "c" and hits[0].text == "C" and hits[0].metadata["n"] == 2
    assert abs(hits[0].score - 1.0) < 1e-4 and hits[0].score >= hits[1].score
    store.delete(["c"])
    assert "c" not in [h.id for h in store.query(vecs[2], k=4)] and store.count() == 3
    with pytest.raises(Exception, match="dimension"):
        store.query(np.zeros(5, dtype=np.float32), k=1)
    store.drop()


def test_flat_pgvector_interface(database_url, pg):
    name = f"t_{uuid.uuid4().hex[:10]}"
    store = FlatPgvector(database_url, name, dim=8)
    assert store.table == f"fabric_bench.flat_{name}"
    idx = pg.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = 'fabric_bench' AND tablename = %s",
                     (f"flat_{name}",)).fetchall()
    assert any("hnsw" in r[0] and "vector_cosine_ops" in r[0] for r in idx)
    # The top-k query is one the HNSW index can serve (no tie-breaker forcing a scan and a sort).
    from psycopg import sql

    from fabric.sql import q

    with pg.transaction():
        pg.execute("SET LOCAL enable_seqscan = off")
        table = sql.Identifier("fabric_bench", f"flat_{name}")
        plan = pg.execute(sql.SQL("EXPLAIN " + q("flat_query")).format(table=table),
                          {"q": "[" + ",".join(["0.1"] * 8) + "]", "k": 3}).fetchall()
    assert f"flat_{name}_hnsw" in " ".join(r[0] for r in plan)
    _store_roundtrip(store)
    assert pg.execute("SELECT to_regclass(%s)", (store.table,)).fetchone()[0] is None


def test_chroma_flat_interface():
    if not chroma_available()[0]:
        pytest.skip("chromadb not installed (the optional bench extra)")
    _store_roundtrip(ChromaFlat(f"t_{uuid.uuid4().hex[:10]}", dim=8))
