"""`fabric bench chains`: the blind temporal chains through fabric, text only, beside flat pgvector.

`tests/data/temporal_chains_v3.jsonl` holds fact chains written by hand, before and apart from the
placement code, the way people restate a fact that changed: each version in other words (the
value leading, passive voice, synonyms), with distractor memories (the same relation about other
subjects, other attributes of the same subject) and, per chain, the expected current value and
the value as of a date between two versions. Nobody tunes on it: it is a held-out set.

Every chain is written twice, each time into an org of its own: in valid_from order, and out of
order (the newest version first, then the others oldest first). Versions go in one at a time
(each placed before the next is written); the distractors go in with the first. Then:

  current        `search(question)`: is the top live hit the version valid now?
  as of          `search(question, valid_at=mid)`: is it the version valid at the chain's mid date?
  key: current   `current_value(subject, relation)` on the key fabric extracted from the text (the
  key: as of     key the newest version's memory carries, else an older version's): the right
                 version? A chain whose versions got no key counts as wrong.

"Stale" is a current question answered with an older version of the same fact. The baseline is a
flat pgvector table per chain (same embeddings, top-1 cosine over every version, no time: what a
plain vector memory returns), run in the same call. The scoring is the temporal benchmark's own
(`fabric.bench.temporal.evaluate`, with its backends), so both benchmarks score alike."""

from __future__ import annotations

import logging
import re
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import ValidationError
from ..types import utcnow
from .labelled import records
from .temporal import (
    LAST_PHASE, TOP_K, WAIT_TIMEOUT, Case, FabricBackend, Fact, Query, _same, evaluate, expected_value,
    pgvector_backend,
)

log = logging.getLogger(__name__)

DEFAULT_CHAINS = Path(__file__).resolve().parents[2] / "tests" / "data" / "temporal_chains_v3.jsonl"
ORDERS = ("in_order", "out_of_order")
BACKENDS = ("fabric-text", "pgvector")
QUESTIONS = ("current", "as_of", "key: current", "key: as_of")


@dataclass(frozen=True)
class Version:
    text: str
    valid_from: datetime
    value: str


@dataclass(frozen=True)
class Chain:
    id: str
    subject: str
    relation: str
    question: str
    versions: tuple[Version, ...]  # oldest first
    current: str
    as_of: datetime
    as_of_value: str
    distractors: tuple[str, ...] = ()
    split: str | None = None


def _date(value: Any, where: str) -> datetime:
    try:
        d = datetime.fromisoformat(str(value))
    except ValueError:
        raise ValidationError(where, f"{value!r} is not an ISO date") from None
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def _text(rec: dict[str, Any], key: str, where: str) -> str:
    v = rec.get(key)
    if not isinstance(v, str) or not v.strip():
        raise ValidationError(f"{where}.{key}", "a non-empty string is required")
    return v


def parse_chain(rec: Any, where: str) -> Chain:
    """One chain from its JSON record; `where` names it in errors ("chains line 3")."""
    if not isinstance(rec, dict):
        raise ValidationError(where, "not a JSON object")
    raw = rec.get("versions")
    if not isinstance(raw, list) or not 2 <= len(raw) <= LAST_PHASE:
        raise ValidationError(f"{where}.versions", f"a list of 2 to {LAST_PHASE} versions is required")
    versions = []
    for n, v in enumerate(raw):
        at = f"{where}.versions[{n}]"
        if not isinstance(v, dict):
            raise ValidationError(at, "not a JSON object")
        versions.append(Version(_text(v, "text", at), _date(v.get("valid_from"), f"{at}.valid_from"),
                                _text(v, "value", at)))
    if [v.valid_from for v in versions] != sorted(v.valid_from for v in versions):
        raise ValidationError(f"{where}.versions", "must be listed oldest first")
    as_of = rec.get("as_of")
    if not isinstance(as_of, dict):
        raise ValidationError(f"{where}.as_of", "an object {date, value} is required")
    distractors = rec.get("distractors", [])
    if not isinstance(distractors, list) or not all(isinstance(d, str) and d.strip() for d in distractors):
        raise ValidationError(f"{where}.distractors", "a list of non-empty strings is required")
    texts = [v.text for v in versions]
    if len(set(texts + distractors)) != len(texts) + len(distractors):
        raise ValidationError(f"{where}.distractors", "every version and distractor text must differ")
    chain = Chain(id=_text(rec, "id", where), subject=_text(rec, "subject", where),
                  relation=_text(rec, "relation", where), question=_text(rec, "question", where),
                  versions=tuple(versions), current=_text(rec, "current", where),
                  as_of=_date(as_of.get("date"), f"{where}.as_of.date"),
                  as_of_value=_text(as_of, "value", f"{where}.as_of"), distractors=tuple(distractors),
                  split=rec.get("split"))
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,28}", chain.id):  # it names the flat baseline's table
        raise ValidationError(f"{where}.id", f"{chain.id!r}: use 1-28 letters, digits, '-' or '_'")
    # The stated answers must be what the timeline says (a hand-written set checks itself).
    case = to_case(chain, "in_order")
    checks: tuple[tuple[str, datetime | None, str], ...] = (
        ("current", None, chain.current), ("as_of.value", chain.as_of, chain.as_of_value))
    for field, when, stated in checks:
        derived = expected_value(case, chain.subject, chain.relation, when)
        if not _same(derived, stated):
            raise ValidationError(f"{where}.{field}", f"{stated!r}, but the versions say {derived!r}")
    return chain


def load_chains(path: str | Path | None = None) -> list[Chain]:
    p = Path(path) if path else DEFAULT_CHAINS
    chains = [parse_chain(rec, where) for where, rec in records(p, "chains", "chain set")]
    if not chains:
        raise ValidationError("chains", f"{p} holds no chains")
    ids = [c.id for c in chains]
    if len(set(ids)) != len(ids):
        raise ValidationError("chains.id", "ids must be unique")
    return chains


def write_order(chain: Chain, order: str) -> list[int]:
    """Version indexes in the order they are written: oldest first, or the newest first then the rest."""
    n = len(chain.versions)
    if order == "in_order":
        return list(range(n))
    if order == "out_of_order":
        return [n - 1, *range(n - 1)]
    raise ValidationError("order", f"{order!r}: choose from {', '.join(ORDERS)}")


def to_case(chain: Chain, order: str) -> Case:
    """The chain as a temporal-benchmark case: one phase per version (distractors in phase 1), a
    current and an as-of question."""
    cid = f"{chain.id}-{'in' if order == 'in_order' else 'ooo'}"
    case = Case(cid, order, subjects=(chain.subject,), phrasing="rephrased")
    for phase, n in enumerate(write_order(chain, order), 1):
        v = chain.versions[n]
        fid = f"{cid}.v{n + 1}"
        case.facts[fid] = Fact(fid, chain.subject, chain.relation, v.value, v.text, v.valid_from, "version", 0)
        case.phases.setdefault(phase, []).append(fid)
    before = chain.versions[0].valid_from - timedelta(days=30)  # valid throughout the chain
    for n, text in enumerate(chain.distractors, 1):
        fid = f"{cid}.d{n}"
        case.facts[fid] = Fact(fid, f"{cid} distractor {n}", "distractor", text, text, before, "distractor", 0)
        case.phases[1].append(fid)
    case.queries.append(Query(f"{cid}.current", chain.question, chain.subject, chain.relation))
    case.queries.append(Query(f"{cid}.as_of", chain.question, chain.subject, chain.relation, valid_at=chain.as_of))
    return case


def key_answers(fab: Any, backend: FabricBackend, case: Case, chain: Chain) -> list[dict[str, Any]]:
    """`current_value` on the key fabric extracted from the chain's text, now and at the mid date."""
    org = backend.org(case)
    newest_first = sorted((f for f in case.facts.values() if f.role == "version"), key=lambda f: f.valid_from,
                          reverse=True)
    key = None
    for f in newest_first:
        m = fab.get(backend.memory_of[(case.cid, f.fid)], org=org)
        if m.subject and m.relation:
            key = (m.subject, m.relation)
            break
    versions = {f.fid: f for f in newest_first}
    recs = []
    questions: tuple[tuple[str, datetime | None], ...] = (("now", None), ("valid_at", chain.as_of))
    for asked, at in questions:
        expected = expected_value(case, chain.subject, chain.relation, at)
        cv = fab.current_value(*key, org=org, valid_at=at) if key else None
        fid = backend.texts[case.cid].get(cv.content) if cv else None
        got = versions.get(fid) if fid is not None else None
        correct = got is not None and _same(got.value, expected)
        recs.append({"backend": backend.name, "kind": case.kind, "case": case.cid, "asked": asked,
                     "question": "key: current" if asked == "now" else "key: as_of", "key": key,
                     "expected": expected, "got": got.value if got else (cv.value if cv else None),
                     "correct": correct, "stale": asked == "now" and got is not None and not correct})
    return recs


def ask_chain(fab: Any, b: Any, chain: Chain, case: Case) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """One written chain's questions on one backend, scored; for fabric also the key questions and
    how the chain ended up (its live versions, its placements)."""
    recs = []
    for q in case.queries:
        rec = evaluate(b, case, q)
        rec["question_text"] = q.text
        rec["question"] = "current" if q.asked == "now" else "as_of"
        # Asked once more for the whole page: is the right version anywhere in the top k?
        hits = b.ask(case, q.text, q.valid_at, None)
        rec["in_top_k"] = any(case.facts[h.fid].role == "version" and _same(case.facts[h.fid].value, rec["expected"])
                              for h in hits if h.fid is not None)
        recs.append(rec)
    if not isinstance(b, FabricBackend):
        return recs, None
    recs += key_answers(fab, b, case, chain)
    live = [fid for fid in b.live(case, chain.question) if fid and case.facts[fid].role == "version"]
    return recs, {"backend": b.name, "case": case.cid, "live_versions": len(live),
                  "placements": b.stats.placements.get(case.cid, [])}


def run(fab: Any, chains: Sequence[Chain], *, backends: Sequence[str] = BACKENDS,
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write every chain in both orders to each backend, ask, and score. Needs a placement worker."""
    say = progress or log.info
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown or not backends:
        raise ValidationError("backends", f"{unknown[0] if unknown else 'none'!r}: choose from {', '.join(BACKENDS)}")
    if not chains:
        raise ValidationError("chains", "no chains to run")
    run_id = f"{utcnow():%y%m%d%H%M%S}{secrets.token_hex(2)}"
    t0 = time.perf_counter()
    cases = [(chain, to_case(chain, order)) for order in ORDERS for chain in chains]
    say(f"run {run_id}: {len(chains)} chains x {len(ORDERS)} write orders, "
        f"{sum(len(c.facts) for _, c in cases)} writes per backend, backends {', '.join(backends)}")
    active: list[Any] = []
    conn = None
    records: list[dict[str, Any]] = []
    written: list[dict[str, Any]] = []  # per chain written to fabric: its live versions at the end, its placements
    try:
        for name in backends:
            if name == "fabric-text":
                active.append(FabricBackend(fab, keyed=False, run_id=run_id))
            else:
                backend, conn = pgvector_backend(fab, run_id)
                active.append(backend)
        fab.embedder.embed(["warm up"])
        if "fabric-text" in backends:  # the worker loads its model before the first timed write
            fab.wait(fab.write("Warm-up note for the benchmark.", org=f"bench-{run_id}-warmup"), timeout=WAIT_TIMEOUT)
        last_phase = max(len(chain.versions) for chain in chains)
        for b in active:
            bt = time.perf_counter()
            only_cases = [c for _, c in cases]
            for phase in range(1, last_phase + 1):
                b.ingest(phase, only_cases)
            for chain, case in cases:
                recs, state = ask_chain(fab, b, chain, case)
                records.extend(recs)
                if state is not None:
                    written.append(state)
            rs = [r for r in records if r["backend"] == b.name]
            say(f"{b.name}: {sum(r['correct'] for r in rs)}/{len(rs)} right ({time.perf_counter() - bt:.1f}s)")
    finally:
        for b in active:
            b.close()
        if conn is not None:
            conn.close()
    return {"benchmark": "chains", "run_id": run_id, "chains": len(chains),
            "versions": {str(n): sum(len(c.versions) == n for c in chains)
                         for n in sorted({len(c.versions) for c in chains})},
            "backends": list(backends), "elapsed_s": round(time.perf_counter() - t0, 1),
            **summarise(records, written, active, [c for _, c in cases]), "queries": records, "written": written}


def summarise(records: Sequence[dict[str, Any]], written: Sequence[dict[str, Any]], backends: Sequence[Any],
              cases: Sequence[Case]) -> dict[str, Any]:
    """Right / total per backend, write order and question; stale answers; how later versions were placed."""
    rows = []
    for b in backends:
        for order in ORDERS:
            for question in QUESTIONS:
                rs = [r for r in records if r["backend"] == b.name and r["kind"] == order and r["question"] == question]
                if rs:
                    rows.append({"backend": b.name, "order": order, "question": question, "total": len(rs),
                                 "right": sum(r["correct"] for r in rs),
                                 "in_top_k": sum(r["in_top_k"] for r in rs) if "in_top_k" in rs[0] else None,
                                 "stale": sum(bool(r.get("stale")) for r in rs)})
    per_backend = {}
    for b in backends:
        rs = [r for r in records if r["backend"] == b.name and not r["question"].startswith("key")]
        now = [r for r in rs if r["asked"] == "now"]
        entry: dict[str, Any] = {"right": sum(r["correct"] for r in rs), "total": len(rs),
                                 "in_top_k": sum(r["in_top_k"] for r in rs), "top_k": TOP_K,
                                 "stale_returned": sum(bool(r.get("stale")) for r in now),
                                 "current_questions": len(now)}
        if isinstance(b, FabricBackend):
            # Every version written after the first of its chain should be a contradiction fork.
            later = [p["decision"] for c in cases for p in b.stats.placements.get(c.cid, [])[1:]
                     if c.facts[p["fid"]].role == "version"]
            entry["later_versions"] = {d: later.count(d) for d in sorted(set(later))}
            entry["one_live_version"] = sum(w["live_versions"] == 1 for w in written if w["backend"] == b.name)
            entry["keyed_chains"] = sum(r["key"] is not None for r in records
                                        if r["backend"] == b.name and r["question"] == "key: current")
            entry["validator_calls_per_write"] = round(b.stats.validator_calls / max(b.stats.writes, 1), 2)
        per_backend[b.name] = entry
    return {"rows": rows, "by_backend": per_backend}


def markdown(results: dict[str, Any], command: str) -> str:
    """The figures as a markdown table (one column per backend)."""
    names = results["backends"]
    cell = {(r["backend"], r["order"], r["question"]): r for r in results["rows"]}
    lines = [f"`{command}` — {results['chains']} chains "
             f"({', '.join(f'{k} versions: {v}' for k, v in results['versions'].items())}), run {results['run_id']}, "
             f"{results['elapsed_s']:.0f} s", "",
             f"Right answers / questions (top-1 live hit; in brackets: the right version anywhere in the top "
             f"{TOP_K}).", "",
             "| write order | question | " + " | ".join(names) + " |", "|---|---|" + "---:|" * len(names)]
    for order in ORDERS:
        for question in QUESTIONS:
            cols = [cell.get((n, order, question)) for n in names]
            if any(cols):
                lines.append(f"| {order.replace('_', ' ')} | {question} | " + " | ".join(
                    "—" if c is None else f"{c['right']}/{c['total']}"
                    + (f" ({c['in_top_k']})" if c["in_top_k"] is not None else "") for c in cols) + " |")
    by = results["by_backend"]
    lines.append("| | **stale returned as current** (search) | " + " | ".join(
        f"**{by[n]['stale_returned']}**/{by[n]['current_questions']}" for n in names) + " |")
    for n in names:
        if "later_versions" in by[n]:
            lines += ["", f"{n}: versions after a chain's first placed as "
                      + ", ".join(f"{k} {v}" for k, v in by[n]["later_versions"].items())
                      + f"; {by[n]['one_live_version']} of {results['chains'] * len(ORDERS)} written chains end with "
                        f"one live version; {by[n]['keyed_chains']} of {results['chains'] * len(ORDERS)} "
                        f"written chains carry a key; "
                        f"{by[n]['validator_calls_per_write']} validator calls per write"]
    return "\n".join(lines) + "\n"
