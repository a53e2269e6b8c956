"""Train the learned second opinion (fabric/placement/learned.py) and write placement_model.json.

Training data: the open labelled pair sets (tests/data/placement_pairs.jsonl, _v2 .. _v5, and the
"tune" split of _v6; never the v6 holdout nor any later set). Each pair gives one row: the features of
(existing, new) and the pair's label; the pairs the rules give up on weigh three times as much.
Deterministic: features rounded to 3 decimals, full-batch gradient descent from zeros for a fixed number
of steps, weights rounded to 6 decimals.

The guards' thresholds are chosen by leave-one-set-out over the training sets, on the pairs where the
rules give up ("no frame match"): the model may turn those into a duplicate, a child update or a
contradiction, and the thresholds are the ones that fix the most such pairs with no wrong invalidation
and no unrelated fact lost as a duplicate.

    python scripts/train_placement_model.py            # write fabric/placement/placement_model.json
    python scripts/train_placement_model.py --report   # also: nested leave-one-set-out figures per set
    python scripts/train_placement_model.py --check    # exit 1 if the committed file differs from a retrain
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fabric.bench.validators import DATA, build_cases, load_pairs
from fabric.placement import learned
from fabric.placement.learned import CLASSES, FEATURES, Model, rounded
from fabric.placement.rules import RuleValidator
from fabric.write.apply import decide

NEAR = 0.55
SETS = (("v1", "placement_pairs.jsonl", None), ("v2", "placement_pairs_v2.jsonl", None),
        ("v3", "placement_pairs_v3.jsonl", None), ("v4", "placement_pairs_v4.jsonl", None),
        ("v5", "placement_pairs_v5.jsonl", None), ("v6-tune", "placement_pairs_v6.jsonl", "tune"))
STEPS, RATE, L2, ASKED_WEIGHT = 3000, 0.3, 0.01, 3.0
GRID = [round(0.4 + 0.05 * i, 2) for i in range(12)] + [1.01]   # 1.01: the kind is never proposed


@dataclass
class Row:
    set: str
    id: str
    label: str
    x: tuple[float, ...]                            # features of (existing, new)
    rule_correct: bool
    gave_up: bool                                   # the rules said "no frame match": the model is asked
    near: list[tuple[tuple[float, ...], bool]]      # the memories it is offered: features, is the existing one


def inputs_sha256() -> str:
    """A checksum of what makes the model: the training sets, the features (learned.py) and this script."""
    h = hashlib.sha256()
    for path in [DATA / file for _, file, _ in SETS] + [Path(learned.__file__), Path(__file__)]:
        h.update(path.read_bytes())
    return h.hexdigest()


def rows() -> list[Row]:
    from fabric.embed import LocalEmbedder

    embedder = LocalEmbedder(batch_size=16, threads=1)
    rules = RuleValidator(near_similarity=NEAR)
    out = []
    for name, file, split in SETS:
        pairs = [p for p in load_pairs(DATA / file) if split is None or p.split == split]
        for case in build_cases(pairs, embedder, near_similarity=NEAR):
            d = decide(case.write, case.candidates, rules, near_similarity=NEAR)
            correct = d.kind == case.pair.label and (d.kind == "new_branch" or d.target_id == case.target_id)
            gave_up = d.kind == "new_branch" and d.reason.startswith("no frame match")
            _, separate = rules._by_fact(case.write, case.candidates)
            near = [(rounded(learned.features(c.content, case.write.content, round(c.similarity, 3))),
                     c.id == case.target_id)
                    for c in case.candidates if c.similarity >= NEAR and c.id not in separate] if gave_up else []
            existing = next(c for c in case.candidates if c.id == case.target_id)
            x = rounded(learned.features(existing.content, case.write.content, round(existing.similarity, 3)))
            out.append(Row(name, case.pair.id, case.pair.label, x, correct, gave_up, near))
    return out


def fit(train: Sequence[Row]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Multinomial logistic regression by full-batch gradient descent: (mean, scale, weights, bias)."""
    x = np.array([r.x for r in train], dtype=np.float64)
    y = np.zeros((len(train), len(CLASSES)))
    y[np.arange(len(train)), [CLASSES.index(r.label) for r in train]] = 1.0
    # the pairs the rules give up on are the ones the model serves: they weigh ASKED_WEIGHT times as much
    weight = np.array([ASKED_WEIGHT if r.gave_up else 1.0 for r in train])[:, None]
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    w, b = np.zeros((len(FEATURES), len(CLASSES))), np.zeros(len(CLASSES))
    for _ in range(STEPS):
        logits = z @ w + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = weight * (p - y) / weight.sum()
        w -= RATE * (z.T @ g + L2 * w)
        b -= RATE * g.sum(axis=0)
    return np.round(mean, 6), np.round(scale, 6), np.round(w, 6), np.round(b, 6)


def model_of(params: tuple[np.ndarray, ...], contradiction: float, update: float) -> Model:
    return Model(*params, contradiction_threshold=contradiction, update_threshold=update)


def outcome(row: Row, judge: Model) -> tuple[str, bool]:
    """What placement would decide for a pair with the model as second opinion: (kind, correct)."""
    if not row.gave_up:
        return ("?", row.rule_correct)
    best: tuple[str, float, bool] | None = None
    for x, is_target in row.near:
        kind, p = judge.verdict(x)
        if kind != "new_branch" and (best is None or p > best[1]):
            best = (kind, p, is_target)
    if best is None:
        return "new_branch", row.label == "new_branch"
    return best[0], best[0] == row.label and best[2]


def tally(test: Sequence[Row], judge: Model) -> dict[str, Any]:
    asked = [r for r in test if r.gave_up]
    done = [(r, *outcome(r, judge)) for r in asked]
    per_kind = {k: [sum(1 for r in asked if r.label == k and r.rule_correct),
                    sum(1 for r, _, ok in done if r.label == k and ok),
                    sum(1 for r in asked if r.label == k)] for k in CLASSES}
    return {"pairs": len(test), "asked": len(asked),
            "rules_correct": sum(r.rule_correct for r in test),
            "with_model_correct": sum(r.rule_correct for r in test if not r.gave_up) + sum(ok for _, _, ok in done),
            "fixed": sum(ok and not r.rule_correct for r, _, ok in done),
            "broken": sum(r.rule_correct and not ok for r, _, ok in done),
            "wrong_invalidations": sum(kind == "contradiction_fork" and r.label == "new_branch" for r, kind, _ in done),
            "superseded_wrongly": sum(kind == "contradiction_fork" and r.label != kind for r, kind, _ in done),
            "unrelated_lost_as_duplicate": sum(kind == "duplicate" and r.label == "new_branch" for r, kind, _ in done),
            "asked_per_kind_rules_model_n": per_kind}


def thresholds(train: Sequence[Row]) -> tuple[float, float]:
    """The (contradiction, update) thresholds that fix the most pairs over leave-one-set-out within
    `train`, with no wrong invalidation and no unrelated fact lost as a duplicate; ties: the higher."""
    names = sorted({r.set for r in train})
    folds = []
    for held in names:
        params = fit([r for r in train if r.set != held])
        folds.append((params, [r for r in train if r.set == held]))
    best, chosen = None, (1.01, 1.01)
    for tc in GRID:
        for tu in GRID:
            t = [tally(test, model_of(params, tc, tu)) for params, test in folds]
            if any(f["superseded_wrongly"] or f["unrelated_lost_as_duplicate"] for f in t):
                continue
            gain = sum(f["fixed"] - f["broken"] for f in t)
            key = (gain, tc, tu)
            if best is None or key > best:
                best, chosen = key, (tc, tu)
    return chosen


def trained(data: Sequence[Row]) -> dict[str, Any]:
    tc, tu = thresholds(data)
    mean, scale, w, b = fit(data)
    return {"about": "fabric/placement/learned.py; made by scripts/train_placement_model.py",
            "inputs_sha256": inputs_sha256(),
            "features": list(FEATURES), "classes": list(CLASSES), "trained_on": [s for s, _, _ in SETS],
            "pairs": len(data), "mean": mean.tolist(), "scale": scale.tolist(), "weights": w.tolist(),
            "bias": b.tolist(), "contradiction_threshold": tc, "update_threshold": tu}


def report(data: Sequence[Row]) -> dict[str, Any]:
    """Nested leave-one-set-out: each set is judged by a model (and thresholds) chosen without it."""
    out = {}
    for held, _, _ in SETS:
        train = [r for r in data if r.set != held]
        tc, tu = thresholds(train)
        out[held] = {"thresholds": [tc, tu], **tally([r for r in data if r.set == held], model_of(fit(train), tc, tu))}
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
