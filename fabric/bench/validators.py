"""Validator accuracy on labelled sets of existing/new pairs (tests/data/placement_pairs*.jsonl).

Each pair is run through the real placement decision path (`fabric.write.apply.decide`: the
pre-gates, then the validator, then `check_decision`), with candidates built by embedding the
existing text(s) with the real embedder: the pair's `existing` memory is the expected target,
and any `context` memories are distractors. The rule validator is the baseline, measured in the
same run as the LLM validator (when an endpoint is configured).

A decision is correct when its kind matches the label and, for anything but a new branch, its
target is the pair's `existing` memory. A validator that gives up (ValidatorError: the write
would be parked) counts as wrong, under the kind "error".

The second set (placement_pairs_v2.jsonl) restates facts the way people do and holds traps whose
right answer is new_branch (name twins, sister companies, manager chains, other attributes of the
same subject, multi-valued facts). A trap decided as contradiction_fork is a WRONG INVALIDATION:
placement would supersede a fact that is still true. Each v2 pair carries a split, "tune" (what
prompt work may look at) or "holdout" (what it may not): both are reported."""

from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import ValidationError, ValidatorError
from ..placement.validator import Candidate, IncomingWrite, Validator, check_decision, pregate
from ..types import DECISION_KINDS
from .labelled import records

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
DEFAULT_PAIRS = DATA / "placement_pairs.jsonl"
REPHRASED_PAIRS = DATA / "placement_pairs_v2.jsonl"
# written before the rule fixes that followed it, half held out (users' wording: chat style, casing, numbers)
USER_WORDING_PAIRS = DATA / "placement_pairs_v4.jsonl"
DEFAULT_SETS = (REPHRASED_PAIRS, USER_WORDING_PAIRS, DEFAULT_PAIRS)
SPLITS = ("tune", "holdout")
T_EXISTING = datetime(2024, 1, 1, tzinfo=timezone.utc)
T_NEW = datetime(2024, 6, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Pair:
    id: str
    label: str
    existing: str
    new: str
    note: str = ""
    context: tuple[str, ...] = ()
    split: str | None = None  # tune | holdout (None: a set without splits)


@dataclass(frozen=True)
class Case:
    pair: Pair
    write: IncomingWrite
    candidates: tuple[Candidate, ...]
    target_id: uuid.UUID  # the `existing` memory's id


def load_pairs(path: str | Path | None = None) -> list[Pair]:
    p = Path(path) if path else DEFAULT_PAIRS
    pairs = []
    for where, rec in records(p, "pairs", "labelled set"):
        try:
            pair = Pair(id=str(rec["id"]), label=rec["label"], existing=rec["existing"], new=rec["new"],
                        note=rec.get("note", ""), context=tuple(rec.get("context", ())), split=rec.get("split"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValidationError(where, f"not a labelled pair: {exc}") from None
        if pair.label not in DECISION_KINDS:
            raise ValidationError(f"{where}.label", f"{pair.label!r} is not one of {DECISION_KINDS}")
        if pair.split is not None and pair.split not in SPLITS:
            raise ValidationError(f"{where}.split", f"{pair.split!r} is not one of {SPLITS}")
        pairs.append(pair)
    if not pairs:
        raise ValidationError("pairs", f"{p} holds no pairs")
    return pairs


def stored_key(text: str, *, near_similarity: float) -> tuple[str | None, str | None, str | None]:
    """The (subject, relation, value) a text-only memory would carry once placed: a first write with
    nothing near is placed by the pre-gate, which gives it the key its sentence states (if any)."""
    d = pregate(IncomingWrite(id=uuid.uuid4(), org="bench", content=text, valid_from=T_EXISTING), [],
                near_similarity=near_similarity)
    return (d.subject, d.relation, d.value) if d is not None else (None, None, None)


def build_cases(pairs: Sequence[Pair], embedder: Any, *, near_similarity: float = 0.55) -> list[Case]:
    """Embed every text once (one batch) and build each pair's write and candidates, as placement
    gathers them: each existing memory with the key it was stored under, and `key_match` when that
    is the key the new sentence states (placement looks those up beyond the nearest neighbours)."""
    texts: list[str] = []
    for pr in pairs:
        texts += [pr.new, pr.existing, *pr.context]
    vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
    cases, i = [], 0
    for pr in pairs:
        new_vec = vecs[i]
        new_key = stored_key(pr.new, near_similarity=near_similarity)[:2]
        olds = [pr.existing, *pr.context]
        cands = []
        for j, text in enumerate(olds):
            cid = uuid.uuid4()
            sim = float(np.dot(new_vec, vecs[i + 1 + j]))
            subject, relation, value = stored_key(text, near_similarity=near_similarity)
            cands.append(Candidate(id=cid, content=text, similarity=sim, valid_from=T_EXISTING, valid_to=None,
                                   parent_id=None, root_id=cid, depth=0, version=1, subject=subject,
                                   relation=relation, value=value,
                                   key_match=subject is not None and (subject, relation) == new_key))
        i += 1 + len(olds)
        cands.sort(key=lambda c: -c.similarity)  # as gather_candidates orders them
        target = next(c.id for c in cands if c.content == pr.existing)
        write = IncomingWrite(id=uuid.uuid4(), org="bench", content=pr.new, valid_from=T_NEW)
        cases.append(Case(pr, write, tuple(cands), target))
    return cases


def score(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy per decision kind and overall, and the wrong invalidations, of some decided rows."""
    per_kind = {}
    for k in DECISION_KINDS:
        of_kind = [r for r in rows if r["label"] == k]
        ok = sum(r["correct"] for r in of_kind)
        per_kind[k] = {"n": len(of_kind), "correct": ok, "accuracy": ok / len(of_kind) if of_kind else None}
    ok = sum(r["correct"] for r in rows)
    unrelated = [r for r in rows if r["label"] == "new_branch"]
    invalidated = sum(r["predicted"] == "contradiction_fork" for r in unrelated)
    return {"pairs": len(rows), "correct": ok, "accuracy": ok / len(rows) if rows else None, "per_kind": per_kind,
            "unrelated": len(unrelated), "wrong_invalidations": invalidated,
            "wrong_invalidations_per_50": 50 * invalidated / len(unrelated) if unrelated else None,
            # a still-true fact superseded by any pair that is not a real correction
            "superseded_wrongly": sum(r["predicted"] == "contradiction_fork" and r["label"] != r["predicted"]
                                      for r in rows),
            "unrelated_lost_as_duplicate": sum(r["predicted"] == "duplicate" for r in unrelated)}


@dataclass
class Run:
    validator: str
    model: str | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        kinds = list(DECISION_KINDS)
        confusion = {k: {p: 0 for p in [*kinds, "error"]} for k in kinds}
        for r in self.rows:
            confusion[r["label"]][r["predicted"]] += 1
        consulted = [r for r in self.rows if r["by"] != "pregate"]  # reached the validator
        # what the validator decided itself: for the LLM validator the requests to the model, not the
        # writes its rules settled first
        called = [r for r in consulted if r["called"]] if self.validator == "llm" else consulted
        lat = [r["latency_ms"] for r in called if r["latency_ms"] is not None]
        splits = {sp: score([r for r in self.rows if r["split"] == sp]) for sp in SPLITS
                  if any(r["split"] == sp for r in self.rows)}
        return {
            "validator": self.validator, "model": self.model, **score(self.rows), "splits": splits,
            "confusion": confusion,
            "wrong_target": sum(1 for r in self.rows if r["predicted"] == r["label"] and not r["correct"]),
            "errors": sum(1 for r in self.rows if r["predicted"] == "error"),
            "pregated": sum(1 for r in self.rows if r["by"] == "pregate"),
            # decided by the rule validator inside the LLM validator (rules first), with no request
            "ruled": len(consulted) - len(called),
            "validator_calls": len(called),
            "requests": sum(r["requests"] for r in self.rows),
            "prompt_tokens": sum(r["prompt_tokens"] or 0 for r in self.rows),
            "completion_tokens": sum(r["completion_tokens"] or 0 for r in self.rows),
            "calls_per_pair": len(called) / len(self.rows) if self.rows else None,
            "latency_ms_mean": statistics.fmean(lat) if lat else None,
            "latency_ms_p50": statistics.median(lat) if lat else None,
            "latency_ms_max": max(lat) if lat else None,
            "seconds": self.seconds,
            "misses": [{k: r[k] for k in ("id", "split", "label", "predicted", "by", "note", "reason")}
                       for r in self.rows if not r["correct"]],
        }


def run_validator(validator: Validator, cases: Sequence[Case], *, near_similarity: float,
                  pregate: bool = True) -> Run:
    """Decide every case through `fabric.write.apply.decide` (pre-gates included unless pregate=False)."""
    from ..write.apply import decide

    run = Run(validator.name, getattr(validator, "model", None))
    started = time.perf_counter()
    for case in cases:
        calls_before = _requests(validator)
        predicted: str  # a decision kind, or "error"
        try:
            if pregate:
                d = decide(case.write, case.candidates, validator, near_similarity=near_similarity)
            else:  # the validator alone, on every pair
                t = time.perf_counter()
                d = check_decision(validator.decide(case.write, case.candidates), case.candidates)
                if d.latency_ms is None:
                    d = d.with_cost(latency_ms=(time.perf_counter() - t) * 1000)
            predicted, target, reason = d.kind, d.target_id, d.reason
            by, called = d.validator, d.called
            latency, pt, ct = d.latency_ms, d.prompt_tokens, d.completion_tokens
        except ValidatorError as exc:
            predicted, target, reason, by, called = "error", None, str(exc), validator.name, True
            latency, pt, ct = None, None, None
        correct = predicted == case.pair.label and (predicted == "new_branch" or target == case.target_id)
        run.rows.append({"id": case.pair.id, "split": case.pair.split, "label": case.pair.label,
                         "predicted": predicted, "correct": correct,
                         "note": case.pair.note, "reason": reason, "by": by, "called": called,
                         "latency_ms": latency, "prompt_tokens": pt, "completion_tokens": ct,
                         "requests": _requests(validator) - calls_before,
                         "similarity": max(c.similarity for c in case.candidates)})
    run.seconds = time.perf_counter() - started
    return run


def _requests(validator: Validator) -> int:
    stats = getattr(validator, "stats", None)
    return stats.snapshot()["calls"] if stats is not None else 0


def bench(*, settings: Any, use_llm: bool | None = None, pairs_path: str | Path | None = None,
          pregate: bool = True, embedder: Any = None, llm_validator: Validator | None = None,
          split: str | None = None, rules_first: bool = True) -> dict[str, Any]:
    """Run the rule validator (baseline) and, when configured (or given), the LLM validator on one set.

    `split`: only the pairs of that split (prompt work looks at "tune" only)."""
    from ..embed import make_embedder
    from ..placement.rules import RuleValidator

    pairs = load_pairs(pairs_path)
    if split is not None:
        if split not in SPLITS:
            raise ValidationError("split", f"{split!r} is not one of {SPLITS}")
        pairs = [p for p in pairs if p.split == split]
        if not pairs:
            raise ValidationError("split", f"no pair of split {split!r} in {pairs_path or DEFAULT_PAIRS}")
    embedder = embedder or make_embedder(settings)
    cases = build_cases(pairs, embedder, near_similarity=settings.near_similarity)
    configured = bool(settings.openai_base_url and settings.llm_model)
    if use_llm is None:
        use_llm = configured or llm_validator is not None
    runs = [run_validator(RuleValidator(near_similarity=settings.near_similarity,
                                        duplicate_similarity=settings.duplicate_similarity,
                                        second_opinion=settings.learned_second_opinion),
                          cases, near_similarity=settings.near_similarity, pregate=pregate)]
    if use_llm:
        if llm_validator is None:
            from ..placement.llm import LLMValidator

            llm_validator = LLMValidator.from_settings(settings, rules_first=rules_first)
        runs.append(run_validator(llm_validator, cases, near_similarity=settings.near_similarity, pregate=pregate))
    counts = {k: sum(1 for p in pairs if p.label == k) for k in DECISION_KINDS}
    return {"set": Path(pairs_path or DEFAULT_PAIRS).name, "pairs": len(pairs), "per_kind": counts,
            "split": split, "pregate": pregate, "embedder": embedder.name,
            "near_similarity": settings.near_similarity, "llm_configured": configured,
            "runs": [r.summary() for r in runs]}


def bench_sets(*, settings: Any, pairs_paths: Sequence[str | Path] = DEFAULT_SETS, use_llm: bool | None = None,
               pregate: bool = True, split: str | None = None,
               llm_validator: Validator | None = None, rules_first: bool = True) -> dict[str, Any]:
    """`bench` on several labelled sets in one run, with one embedder (and one LLM validator)."""
    from ..embed import make_embedder

    embedder = make_embedder(settings)
    if llm_validator is None and use_llm is not False and settings.openai_base_url and settings.llm_model:
        from ..placement.llm import LLMValidator

        llm_validator = LLMValidator.from_settings(settings, rules_first=rules_first)
    if split is not None:  # a set without splits has no pair prompt work may look at: skip it
        pairs_paths = [p for p in pairs_paths if any(pr.split for pr in load_pairs(p))]
        if not pairs_paths:
            raise ValidationError("split", "none of the sets has a tune/holdout split")
    sets = [bench(settings=settings, use_llm=use_llm, pairs_path=p, pregate=pregate, embedder=embedder,
                  llm_validator=llm_validator, split=split, rules_first=rules_first) for p in pairs_paths]
    return {"sets": sets, "llm_configured": bool(settings.openai_base_url and settings.llm_model)}


def _cell(s: dict[str, Any] | None) -> str:
    return "—" if not s or not s["n"] else f"{s['correct']}/{s['n']} ({100 * s['accuracy']:.0f}%)"


def markdown(result: dict[str, Any], command: str | None = None) -> str:
    """Per set: accuracy per decision kind, overall and per split, wrong invalidations, cost."""
    lines = ["# fabric bench validators", ""]
    if command:
        lines += [f"`{command}`", ""]
    for one in result["sets"]:
        runs = one["runs"]
        splits = [sp for sp in SPLITS if sp in runs[0]["splits"]]
        cols = [(r, None) for r in runs] + [(r, sp) for r in runs for sp in splits]
        names = [r["validator"] + (f" ({r['model']})" if r["model"] else "") + (f", {sp}" if sp else "")
                 for r, sp in cols]
        lines += [f"## {one['set']}: {one['pairs']} pairs" + (f" (split {one['split']})" if one["split"] else ""),
                  "", "| label | pairs | " + " | ".join(names) + " |", "|---|---:|" + "---:|" * len(cols)]

        def row(label: str, n: Any, pick, cols=cols) -> str:
            return f"| {label} | {n} | " + " | ".join(pick(r["splits"][sp] if sp else r) for r, sp in cols) + " |"

        for kind, count in one["per_kind"].items():
            lines.append(row(kind, count, lambda s, k=kind: _cell(s["per_kind"][k])))
        lines.append(row("**overall**", one["pairs"], lambda s: f"**{s['correct']}/{s['pairs']} "
                                                                f"({100 * s['accuracy']:.1f}%)**"))
        lines.append(row("unrelated facts wrongly invalidated", one["per_kind"]["new_branch"],
                         lambda s: f"{s['wrong_invalidations']}/{s['unrelated']} "
                                   f"({s['wrong_invalidations_per_50'] or 0:.1f} per 50)"))
        lines.append("")
        for r in runs:
            name = r["validator"] + (f" ({r['model']})" if r["model"] else "")
            p50 = r["latency_ms_p50"]
            lines.append(f"- {name}: {r['validator_calls']} validator calls ({r['pregated']} pairs pre-gated"
                         + (f", {r['ruled']} settled by its rules first" if r["ruled"] else "") + "), "
                         f"p50 {p50:.1f} ms per call, {r['prompt_tokens']} / {r['completion_tokens']} tokens, "
                         f"{r['errors']} gave up, {r['seconds']:.0f} s" if p50 is not None else
                         f"- {name}: no validator call")
            if r["misses"]:
                lines.append("  misses: " + ", ".join(f"{m['id']} ({m['label']} → {m['predicted']})"
                                                      for m in r["misses"]))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
