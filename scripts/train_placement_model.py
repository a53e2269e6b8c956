"""Train the learned second opinion (fabric/placement/learned.py) and write placement_model.json.

Training data: the open labelled pair sets (tests/data/placement_pairs.jsonl, _v2 .. _v6, _v8 and _v9) and the
open conversational streams (stream_v5, _v6, _v9); never the blind v7 sets. Each pair gives one row: the features of
(existing, new), with the rules' verdict on the pair, and the pair's label. Each stream turn gives its nearest
earlier turns (as the store would offer them) as new branches: every turn of a stream is a distinct fact, and
the pair sets alone, all near misses, never show the model two facts that merely share a name or a date.
Deterministic: features rounded to 3 decimals, full-batch gradient descent from zeros for a fixed number of
steps, weights rounded to 6 decimals.

The model is asked only where the rules (or the pre-gate) leave a text-only write as a new branch: it scores the
write against every candidate and takes the surest version above its kind's threshold. The thresholds are chosen
by leave-one-set-out over the training sets: the ones that fix the most pairs, a wrong invalidation of an
unrelated fact counting as minus five and an unrelated fact lost as a duplicate as minus three.

    python scripts/train_placement_model.py            # write fabric/placement/placement_model.json
    python scripts/train_placement_model.py --report   # also: nested leave-one-set-out figures per set
    python scripts/train_placement_model.py --check    # exit 1 if the committed file differs from a retrain
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fabric.bench.stream import load_stream
from fabric.bench.validators import DATA, T_EXISTING, T_NEW, build_cases, load_pairs
from fabric.placement import learned
from fabric.placement.learned import CLASSES, FEATURES, rounded
from fabric.placement.rules import RuleValidator
from fabric.placement.validator import Candidate, IncomingWrite
from fabric.write.apply import decide

NEAR = 0.55
SETS = (("v1", "placement_pairs.jsonl"), ("v2", "placement_pairs_v2.jsonl"), ("v3", "placement_pairs_v3.jsonl"),
        ("v4", "placement_pairs_v4.jsonl"), ("v5", "placement_pairs_v5.jsonl"), ("v6", "placement_pairs_v6.jsonl"),
        ("v8", "placement_pairs_v8.jsonl"), ("v9", "placement_pairs_v9.jsonl"))
STREAMS = (("s5", "stream_v5.jsonl"), ("s6", "stream_v6.jsonl"), ("s9", "stream_v9.jsonl"))
STREAM_NEIGHBOURS = 8  # as many as placement gathers (settings.neighbours_k)
STREAM_TRAINED = 3     # of them, the nearest ones train the model
STEPS, RATE, L2 = 3000, 0.3, 0.002
WRONG_INVALIDATION, LOST_AS_DUPLICATE = 5, 3   # what one costs, in pairs fixed
GRID = {"duplicate": (0.6, 0.7, 0.8, 0.9, 1.01), "child_update": (0.5, 0.6, 0.7, 0.8, 1.01),
        "contradiction_fork": (0.7, 0.8, 0.9, 0.95, 1.01)}   # 1.01: the kind is never proposed


@dataclass
class Row:
    set: str
    id: str
    label: str
    x: tuple[float, ...]                           # features of (existing, new)
    rule_kind: str
    rule_correct: bool
    asked: bool                                    # the rules left it a new branch: the model is asked
    offered: list[tuple[tuple[float, ...], bool]]  # every candidate: features, is the existing one
    train_x: list[tuple[float, ...]]               # what the model is fitted on, with `label`


def inputs_sha256() -> str:
    """A checksum of what makes the model: the training sets, the features (learned.py) and this script."""
    h = hashlib.sha256()
    for path in [DATA / file for _, file in SETS + STREAMS] + [Path(learned.__file__), Path(__file__)]:
        h.update(path.read_bytes())
    return h.hexdigest()


def rows() -> list[Row]:
    from fabric.embed import LocalEmbedder

    embedder = LocalEmbedder(batch_size=16, threads=1)
    rules = RuleValidator(near_similarity=NEAR)  # second_opinion off: the rules alone
    out = []
    for name, file in SETS:
        for case in build_cases(load_pairs(DATA / file), embedder, near_similarity=NEAR):
            d = decide(case.write, case.candidates, rules, near_similarity=NEAR)
            correct = d.kind == case.pair.label and (d.kind == "new_branch" or d.target_id == case.target_id)
            asked = d.kind == "new_branch" and not d.reason.startswith("exact repeat")
            offered = [(rounded(learned.features(c.content, case.write.content, round(c.similarity, 3),
                                                 rules.verdict(case.write, c))), c.id == case.target_id)
                       for c in case.candidates]
            x = next(f for f, is_target in offered if is_target)
            out.append(Row(name, case.pair.id, case.pair.label, x, d.kind, correct, asked, offered, [x]))
    for name, file in STREAMS:
        out += stream_rows(name, load_stream(DATA / file), embedder, rules)
    return out


def stream_rows(name: str, turns: Sequence[Any], embedder: Any, rules: RuleValidator) -> list[Row]:
    """Each turn after the first, against its nearest earlier turns: a new branch (no turn restates another)."""
    vecs = np.asarray(embedder.embed([t.text for t in turns]), dtype=np.float32)
    out = []
    for i in range(1, len(turns)):
        sims = vecs[:i] @ vecs[i]
        cands = []
        for j in np.argsort(-sims, kind="stable")[:STREAM_NEIGHBOURS]:
            cid = uuid.UUID(int=int(j) + 1)
            cands.append(Candidate(id=cid, content=turns[j].text, similarity=float(sims[j]), valid_from=T_EXISTING,
                                   valid_to=None, parent_id=None, root_id=cid, depth=0, version=1))
        write = IncomingWrite(id=uuid.UUID(int=0), org="bench", content=turns[i].text, valid_from=T_NEW)
        d = decide(write, cands, rules, near_similarity=NEAR)
        offered = [(rounded(learned.features(c.content, write.content, round(c.similarity, 3),
                                             rules.verdict(write, c))), False) for c in cands]
        out.append(Row(name, turns[i].id, "new_branch", offered[0][0], d.kind, d.kind == "new_branch",
                       d.kind == "new_branch" and not d.reason.startswith("exact repeat"), offered,
                       [x for x, _ in offered[:STREAM_TRAINED]]))
    return out


def fit(train: Sequence[Row]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Multinomial logistic regression by full-batch gradient descent: (mean, scale, weights, bias)."""
    x = np.array([x for r in train for x in r.train_x], dtype=np.float64)
    y = np.zeros((len(x), len(CLASSES)))
    y[np.arange(len(x)), [CLASSES.index(r.label) for r in train for _ in r.train_x]] = 1.0
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    w, b = np.zeros((len(FEATURES), len(CLASSES))), np.zeros(len(CLASSES))
    for _ in range(STEPS):
        logits = z @ w + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = (p - y) / len(x)
        w -= RATE * (z.T @ g + L2 * w)
        b -= RATE * g.sum(axis=0)
    return np.round(mean, 6), np.round(scale, 6), np.round(w, 6), np.round(b, 6)


def model_of(params: tuple[np.ndarray, ...], thresholds: dict[str, float]) -> learned.Model:
    return learned.Model(*params, thresholds=thresholds)


def outcome(row: Row, judge: learned.Model) -> tuple[str, bool]:
    """What placement decides for a pair with the model as second opinion: (kind, correct)."""
    if not row.asked:
        return row.rule_kind, row.rule_correct
    best: tuple[str, float, bool] | None = None
    for x, is_target in row.offered:
        kind, p = judge.verdict(x)
        if kind != "new_branch" and (best is None or p > best[1]):
            best = (kind, p, is_target)
    if best is None:
        return "new_branch", row.label == "new_branch"
    return best[0], best[0] == row.label and best[2]


def tally(test: Sequence[Row], judge: learned.Model) -> dict[str, Any]:
    done = [(r, *outcome(r, judge)) for r in test]
    return {"pairs": len(test), "asked": sum(r.asked for r in test),
            "rules_correct": sum(r.rule_correct for r in test),
            "with_model_correct": sum(ok for _, _, ok in done),
            "fixed": sum(ok and not r.rule_correct for r, _, ok in done),
            "broken": sum(r.rule_correct and not ok for r, _, ok in done),
            "unrelated": sum(r.label == "new_branch" for r in test),
            "wrong_invalidations": sum(k == "contradiction_fork" and r.label == "new_branch" for r, k, _ in done),
            "rules_wrong_invalidations": sum(r.rule_kind == "contradiction_fork" and r.label == "new_branch"
                                             for r in test),
            "unrelated_lost_as_duplicate": sum(k == "duplicate" and r.label == "new_branch" for r, k, _ in done)}


def gain(t: dict[str, Any]) -> int:
    return t["fixed"] - t["broken"] - WRONG_INVALIDATION * (t["wrong_invalidations"] - t["rules_wrong_invalidations"]) \
        - LOST_AS_DUPLICATE * t["unrelated_lost_as_duplicate"]


def thresholds(train: Sequence[Row]) -> dict[str, float]:
    """The thresholds with the most gain over leave-one-set-out within `train`; ties: the higher."""
    folds = [(fit([r for r in train if r.set != held]), [r for r in train if r.set == held])
             for held in sorted({r.set for r in train})]
    best: tuple[int, tuple[float, ...]] | None = None
    for values in itertools.product(*GRID.values()):
        chosen = dict(zip(GRID, values))
        score = sum(gain(tally(test, model_of(params, chosen))) for params, test in folds)
        if best is None or (score, values) > best:
            best = (score, values)
    assert best is not None
    return dict(zip(GRID, best[1]))


def trained(data: Sequence[Row]) -> dict[str, Any]:
    mean, scale, w, b = fit(data)
    return {"about": "fabric/placement/learned.py; made by scripts/train_placement_model.py",
            "inputs_sha256": inputs_sha256(),
            "features": list(FEATURES), "classes": list(CLASSES), "trained_on": [f for _, f in SETS + STREAMS],
            "pairs": len(data), "mean": mean.tolist(), "scale": scale.tolist(), "weights": w.tolist(),
            "bias": b.tolist(), "thresholds": thresholds(data)}


def report(data: Sequence[Row]) -> dict[str, Any]:
    """Nested leave-one-set-out: each set is judged by a model (and thresholds) chosen without it."""
    out = {}
    for held, _ in SETS + STREAMS:
        train = [r for r in data if r.set != held]
        chosen = thresholds(train)
        out[held] = {"thresholds": chosen, **tally([r for r in data if r.set == held], model_of(fit(train), chosen))}
    return out


def dumped(model: dict[str, Any]) -> str:
    return json.dumps(model, indent=1) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", action="store_true", help="print nested leave-one-set-out figures")
    ap.add_argument("--check", action="store_true", help="compare with the committed file, write nothing")
    args = ap.parse_args(argv)
    data = rows()
    if args.report:
        print(json.dumps(report(data), indent=1))
    text = dumped(trained(data))
    if args.check:
        same = learned.MODEL_FILE.is_file() and learned.MODEL_FILE.read_text() == text
        print("placement_model.json matches a retrain" if same else "placement_model.json differs from a retrain")
        return 0 if same else 1
    learned.MODEL_FILE.write_text(text)
    print(f"wrote {learned.MODEL_FILE} ({len(data)} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
