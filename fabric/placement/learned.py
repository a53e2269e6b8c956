"""A learned second opinion (experimental, off by default: `FABRIC_LEARNED_SECOND_OPINION`).

Where the rules place a text-only write as a new branch because no reading matched a near memory,
a small multinomial logistic regression looks at each near memory again and may call the pair a
duplicate, a child update or a contradiction. Its inputs are what the rules already compute: the
sentences' cosine, their names and numbers (align.read), the relation words each says and the other
does not, the embedding similarity of those differing words, change cues, negation, "also".

Guards, because a wrong invalidation costs more than a missed one: the model only ever replaces a
rule's "new branch (no frame match)"; a contradiction needs the same subject on both sides and a
high probability; memories the rules read as another subject or attribute are never offered.

The weights (placement_model.json) are produced by scripts/train_placement_model.py, deterministically,
from the open labelled pair sets."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence, cast

import numpy as np

from .align import Reading, _phrase, read, relation_similarity
from ..types import DecisionKind
from .validator import Candidate
from .facts import _MULTI, extract
from .samefact import _CHANGE_CUE

MODEL_FILE = Path(__file__).with_name("placement_model.json")
CLASSES = ("new_branch", "duplicate", "child_update", "contradiction_fork")
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|user)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|never|no longer|without|cannot)\b|n't\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Compared:
    """What two sentences share and what each says alone, as `align.read` reads them."""

    names_shared: int
    names_old: int       # names only the old sentence holds
    names_new: int
    numbers_shared: int
    numbers_old: int
    numbers_new: int
    words_shared: int
    words_old: tuple[str, ...]   # relation and detail stems only the old sentence holds
    words_new: tuple[str, ...]
    same_subject: bool   # the first name (or the user) of both is one


def _keys(r: Reading, kind: str) -> set[str]:
    if kind == "name":
        return {a.key for a in r.anchors if a.kind == "name"}
    return {a.key for a in r.anchors if a.kind != "name"}


def _first_name(r: Reading) -> str | None:
    return next((a.key for a in r.anchors if a.kind == "name"), None)


def _first_person(r: Reading, text: str) -> bool:
    return bool(_FIRST_PERSON.search(text)) or r.text.startswith("user")


def _same_subject(old: Reading, old_text: str, new: Reading, new_text: str) -> bool:
    """Both in the first person, or the first name of either sentence named in the other: the subject may
    lead one sentence and close the other ("Halcyon Robotics is led by ..." / "... the CEO of Halcyon Robotics"),
    but twins ("Tomasz Wren" / "Tomasz Reyes") share no first name."""
    if _first_person(old, old_text) and _first_person(new, new_text):
        return True
    names_old, names_new = _keys(old, "name"), _keys(new, "name")
    first_old, first_new = _first_name(old), _first_name(new)
    return (first_old is not None and first_old in names_new) or (first_new is not None and first_new in names_old)


def compare_words(old_text: str, new_text: str) -> Compared:
    old, new = read(old_text, new_text), read(new_text, old_text)
    on, nn = _keys(old, "name"), _keys(new, "name")
    onum, nnum = _keys(old, "number"), _keys(new, "number")
    ow, nw = set(old.words), set(new.words)
    only_old, only_new = tuple(w for w in old.words if w not in nw), tuple(w for w in new.words if w not in ow)
    return Compared(len(on & nn), len(on - nn), len(nn - on), len(onum & nnum), len(onum - nnum), len(nnum - onum),
                    len(ow & nw), only_old, only_new, _same_subject(old, old_text, new, new_text))


def _span_similarity(old: Sequence[str], new: Sequence[str]) -> float:
    """Cosine of the words only one side says (0 when a side says nothing of its own)."""
    if not old or not new:
        return 0.0
    return relation_similarity(" ".join(old), " ".join(new))


FEATURES = ("similarity", "same_subject", "first_person_both", "names_shared", "names_old", "names_new",
            "numbers_shared", "numbers_old", "numbers_new", "words_shared", "words_old", "words_new",
            "words_jaccard", "span_similarity", "nothing_new", "nothing_gone", "change_cue", "negation_differs",
            "also", "many", "multi_valued", "length_ratio", "frame_similarity", "value_swapped",
            "swapped_in_frame")


@lru_cache(maxsize=4096)
def features(old_text: str, new_text: str, similarity: float) -> tuple[float, ...]:
    """The model's inputs for one (memory, write) pair, in FEATURES order."""
    c = compare_words(old_text, new_text)
    new_r = read(new_text, old_text)
    fact = extract(new_text, old_text)
    union = c.words_shared + len(set(c.words_old)) + len(set(c.words_new))
    cue_new, cue_old = bool(_CHANGE_CUE.search(new_text)), bool(_CHANGE_CUE.search(old_text))
    frame = frame_similarity(old_text, new_text)
    swapped = float(c.names_old + c.numbers_old > 0 and c.names_new + c.numbers_new > 0)
    return (
        similarity,
        float(c.same_subject),
        float(bool(_FIRST_PERSON.search(old_text)) and bool(_FIRST_PERSON.search(new_text))),
        min(c.names_shared, 3), min(c.names_old, 3), min(c.names_new, 3),
        min(c.numbers_shared, 3), min(c.numbers_old, 3), min(c.numbers_new, 3),
        min(c.words_shared, 6), min(len(c.words_old), 6), min(len(c.words_new), 6),
        c.words_shared / union if union else 1.0,
        _span_similarity(c.words_old, c.words_new),
        float(not c.words_new and not c.names_new and not c.numbers_new),
        float(not c.words_old and not c.names_old and not c.numbers_old),
        float(cue_new and not cue_old),
        float(bool(_NEGATION.search(old_text)) != bool(_NEGATION.search(new_text))),
        float(new_r.also),
        float(new_r.many),
        float(fact is not None and fact.relation in _MULTI),
        math.log((len(new_text) + 1) / (len(old_text) + 1)),
        frame,
        swapped,
        frame * swapped,
    )


def frame_similarity(old_text: str, new_text: str) -> float:
    """Cosine of the two sentences with their shared names masked as X and the rest as Y ("X is led by
    chief executive Y" / "Y is the chief executive of X"): do they say the same relation?"""
    old, new = read(old_text, new_text), read(new_text, old_text)
    shared = _keys(old, "name") & _keys(new, "name")
    a, b = _phrase(old, shared), _phrase(new, shared)
    return relation_similarity(a, b) if a and b else 0.0


@dataclass(frozen=True)
class Model:
    """Multinomial logistic regression over standardised features."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray   # (features, classes)
    bias: np.ndarray      # (classes,)
    contradiction_threshold: float
    update_threshold: float

    def probabilities(self, x: Sequence[float]) -> dict[str, float]:
        z = ((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.weights + self.bias
        p = np.exp(z - z.max())
        p /= p.sum()
        return dict(zip(CLASSES, map(float, p)))

    def verdict(self, x: Sequence[float]) -> tuple[str, float]:
        """The class the guards allow, with its probability: any version needs the same subject on both
        sides; a contradiction `contradiction_threshold`, a duplicate or child update `update_threshold`."""
        p = self.probabilities(x)
        kind = max(CLASSES[1:], key=lambda k: p[k])
        threshold = self.contradiction_threshold if kind == "contradiction_fork" else self.update_threshold
        if x[FEATURES.index("same_subject")] < 0.5 or p[kind] < threshold:
            return "new_branch", p["new_branch"]
        return kind, p[kind]

    @classmethod
    def from_json(cls, data: dict) -> Model:
        if tuple(data["features"]) != FEATURES or tuple(data["classes"]) != CLASSES:
            raise ValueError("placement model was trained on other features or classes: retrain it")
        return cls(np.array(data["mean"]), np.array(data["scale"]), np.array(data["weights"]),
                   np.array(data["bias"]), data["contradiction_threshold"], data["update_threshold"])


@lru_cache(maxsize=1)
def model() -> Model:
    return Model.from_json(json.loads(MODEL_FILE.read_text()))


@dataclass(frozen=True, slots=True)
class Opinion:
    kind: DecisionKind
    target: Candidate
    probability: float


def second_opinion(write_text: str, near: Sequence[Candidate], judge: Model | None = None) -> Opinion | None:
    """The near memory the model reads most surely as a version of the write, if any clears its guards.
    `near`: the memories the rules compared and found no reading for (another subject excluded)."""
    judge = judge or model()
    best: Opinion | None = None
    for c in near:
        kind, p = judge.verdict(rounded(features(c.content, write_text, c.similarity)))
        if kind != "new_branch" and (best is None or p > best.probability):
            best = Opinion(cast(DecisionKind, kind), c, p)
    return best


def rounded(x: Sequence[float]) -> tuple[float, ...]:
    """Features to 3 decimals: the embedder's last bits vary with batch and thread count."""
    return tuple(round(v, 3) for v in x)
