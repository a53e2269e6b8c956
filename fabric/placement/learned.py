"""The learned second opinion: where the rules place a text-only write as a new branch, a small model looks again.

The rule validator reads a restatement only in the wordings its readings know, and on sets written by people
who never saw them it gives up on most versions of a fact (blind v7 pairs: 82/150 right, 65 of the 68 misses a
version placed as a new branch). Where the rules (or the pre-gate's "nothing near") leave a text-only write as
a new branch, a multinomial logistic regression scores the write against each of its neighbours as new branch,
duplicate, child update or contradiction, and the neighbour it reads most surely as a version, above that
kind's threshold, is the target.

Its inputs are generic on purpose, so that they do not share the shape of any one set's wording: the
sentences' cosine; content words, capitalised words and figures each side holds, shares or says alone; a word
of change, "also", negation, the first person; a relative, a hypothetical or plan, and the past said on one side
only; the same names in another order, in the same voice ("X mentors Y" / "Y mentors X"); and the rules' own
reading of the pair (`RuleValidator.verdict`: unknown, separate, duplicate, child
update, contradiction) as one input among the others, not as a gate. The weights (placement_model.json) come from
scripts/train_placement_model.py, deterministically, trained on the open labelled pair sets only; the thresholds
are the ones that fix the most pairs over leave-one-set-out, with a wrong invalidation costing five fixes and an
unrelated fact lost as a duplicate three. The blind sets (v7) are never trained on.

It never changes a decision the rules made other than a new branch, and it never sees a keyed write."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence, cast

import numpy as np

from ..types import DecisionKind
from .validator import Candidate

MODEL_FILE = Path(__file__).with_name("placement_model.json")
CLASSES = ("new_branch", "duplicate", "child_update", "contradiction_fork")
VERDICTS = ("unknown", "separate", "duplicate", "child_update", "contradiction_fork")

_STOP = frozenset("a an the is are was were be been being of in on at to for and or but with by from as it its this "
                  "that these those i my me we our you your he she his her they their them has have had do does did "
                  "not no so just now".split())
_CHANGE = re.compile(r"\b(?:now|moved|moving|switched|switch|changed|change|new|no longer|instead|anymore|any more|left"
                     r"|joined|since|replaced|updated|bumped|pushed|migrated|upgraded|downgraded|became|become"
                     r"|promoted|renamed|took over|stepped down|quit|cancelled|sold|these days|actually|correction"
                     r"|from .* to)\b", re.IGNORECASE)
_ALSO = re.compile(r"\b(?:also|another|too|second|as well|additional|extra|both)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|never|without|none)\b|n't\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|my|me|mine|user|user's)\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(?:wife|husband|partner|son|daughter|mum|mom|mother|dad|father|sister|brother|twin|kids?"
                       r"|child|children|boss|manager|colleague|friend|gran|grandma|grandad|grandfather|grandmother"
                       r"|aunt|uncle|cousin|niece|nephew|neighbour|neighbor|girlfriend|boyfriend|fiancee?|flatmate"
                       r"|roommate)\b", re.IGNORECASE)
_HYPOTHETICAL = re.compile(r"\b(?:if|might|maybe|perhaps|considering|considered|thinking about|thinking of"
                           r"|plan(?:s|ning)? to|wants? to|would|could|should|hope|hoping|wish|may|asked about"
                           r"|looking at|looking into|next (?:week|month|year)|will|going to|tomorrow)\b|\?",
                           re.IGNORECASE)
_PAST = re.compile(r"\b(?:was|were|used to|formerly|previously|had been|until|from \d{4} to \d{4}|back in|ago)\b",
                   re.IGNORECASE)
_CAPITALISED = re.compile(r"\b[A-Z][\w'’.-]*")
_FIGURE = re.compile(r"\d[\d.,:/-]*")
_WORD = re.compile(r"[a-z][a-z'’-]+")
_PASSIVE = re.compile(r"\b(?:is|are|was|were|been|being|gets?|got)\s+(?:\w+ly\s+)?\w+(?:ed|en|t)\s+by\b", re.IGNORECASE)

FEATURES = ("similarity", "words_shared", "words_old", "words_new", "words_jaccard", "names_shared", "names_old",
            "names_new", "a_name_shared", "no_names", "figures_shared", "figures_old", "figures_new",
            "change_new", "change_old", "also_new", "negation_differs", "first_person_both", "length_ratio",
            "old_words_all_said", "new_words_all_said", "relative_differs", "relative_new", "hypothetical_differs",
            "hypothetical_new", "past_differs", "past_new", "names_reordered", "reordered_same_voice",
            "value_swapped", "value_swapped_in_shared_words",
            *(f"rules_{v}" for v in VERDICTS))


_SAME_VOICE, _NAMES_SHARED, _WORDS_SHARED, _FIRST_PERSON_BOTH = (
    FEATURES.index(f) for f in ("reordered_same_voice", "names_shared", "words_shared", "first_person_both"))


def _words(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _STOP}  # a five-letter stem: shoe/shoes


def _name_order(text: str) -> list[str]:
    out = []
    for m in _CAPITALISED.finditer(text):
        word = m.group(0).strip(".").lower()
        if not (m.start() == 0 and word in _STOP):  # "The ..." opening a sentence is no name
            out.append(word)
    return out


def _names(text: str) -> set[str]:
    return set(_name_order(text))


def _reordered(old_text: str, new_text: str) -> bool:
    """The same two or more names, in another order: "X mentors Y" / "Y mentors X" (or a passive of it)."""
    was, now = _name_order(old_text), _name_order(new_text)
    shared = set(was) & set(now)
    return len(shared) >= 2 and [w for w in was if w in shared] != [w for w in now if w in shared]


def _figures(text: str) -> set[str]:
    return {f.strip(".,") for f in _FIGURE.findall(text)}


def _on_one_side(rx: re.Pattern[str], old_text: str, new_text: str) -> tuple[float, float]:
    was, now = bool(rx.search(old_text)), bool(rx.search(new_text))
    return float(was != now), float(now and not was)


@lru_cache(maxsize=4096)
def features(old_text: str, new_text: str, similarity: float, verdict: str) -> tuple[float, ...]:
    """The model's inputs for one (memory, write) pair, in FEATURES order; `verdict` is the rules' reading."""
    wo, wn = _words(old_text), _words(new_text)
    no, nn = _names(old_text), _names(new_text)
    fo, fn = _figures(old_text), _figures(new_text)
    reordered = _reordered(old_text, new_text)
    first_person = bool(_FIRST_PERSON.search(old_text)) and bool(_FIRST_PERSON.search(new_text))
    # one name or figure on each side that the other does not hold: a value swapped ("4th floor" / "floor 6")
    swapped = bool((no - nn) or (fo - fn)) and bool((nn - no) or (fn - fo))
    return (
        similarity,
        len(wo & wn), len(wo - wn), len(wn - wo), len(wo & wn) / max(1, len(wo | wn)),
        len(no & nn), len(no - nn), len(nn - no), float(bool(no & nn)), float(not no and not nn),
        len(fo & fn), len(fo - fn), len(fn - fo),
        float(bool(_CHANGE.search(new_text))), float(bool(_CHANGE.search(old_text))),
        float(bool(_ALSO.search(new_text))),
        float(bool(_NEGATION.search(new_text)) != bool(_NEGATION.search(old_text))),
        float(first_person),
        len(new_text) / max(1, len(old_text)),
        float(wo <= wn), float(wn <= wo),
        *_on_one_side(_RELATIVE, old_text, new_text),
        *_on_one_side(_HYPOTHETICAL, old_text, new_text),
        *_on_one_side(_PAST, old_text, new_text),
        float(reordered),
        float(reordered and bool(_PASSIVE.search(old_text)) == bool(_PASSIVE.search(new_text))),
        float(swapped),
        float(swapped and bool(wo & wn) and (bool(no & nn) or not no and not nn or first_person)),
        *(float(verdict == v) for v in VERDICTS),
    )


@dataclass(frozen=True)
class Model:
    """Multinomial logistic regression over standardised features, with a threshold per kind of version."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray   # (features, classes)
    bias: np.ndarray      # (classes,)
    thresholds: dict[str, float]  # duplicate, child_update, contradiction_fork

    def probabilities(self, x: Sequence[float]) -> dict[str, float]:
        z = ((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.weights + self.bias
        p = np.exp(z - z.max())
        p /= p.sum()
        return dict(zip(CLASSES, map(float, p)))

    def verdict(self, x: Sequence[float]) -> tuple[str, float]:
        """The most probable class, if it is a version kind above its threshold; else new_branch. Two guards:
        a version shares something with what it restates (a name, a content word, or both are in the first
        person), and the same names in another order, in the same voice, say another fact ("X mentors Y" /
        "Y mentors X")."""
        p = self.probabilities(x)
        kind = max(CLASSES, key=lambda k: p[k])
        shares = x[_NAMES_SHARED] > 0 or x[_WORDS_SHARED] > 0 or x[_FIRST_PERSON_BOTH] > 0.5
        if kind == "new_branch" or p[kind] < self.thresholds[kind] or not shares or x[_SAME_VOICE] > 0.5:
            return "new_branch", p["new_branch"]
        return kind, p[kind]

    @classmethod
    def from_json(cls, data: dict) -> Model:
        if tuple(data["features"]) != FEATURES or tuple(data["classes"]) != CLASSES:
            raise ValueError("placement model was trained on other features or classes: retrain it "
                             "(python scripts/train_placement_model.py)")
        return cls(np.array(data["mean"]), np.array(data["scale"]), np.array(data["weights"]),
                   np.array(data["bias"]), {k: float(v) for k, v in data["thresholds"].items()})


@lru_cache(maxsize=1)
def model() -> Model:
    return Model.from_json(json.loads(MODEL_FILE.read_text()))


@dataclass(frozen=True, slots=True)
class Opinion:
    kind: DecisionKind
    target: Candidate
    probability: float


def second_opinion(write_text: str, candidates: Sequence[tuple[Candidate, str]],
                   judge: Model | None = None) -> Opinion | None:
    """The neighbour the model reads most surely as a version of the write, if any clears its kind's threshold.
    `candidates`: each neighbour with the rules' verdict on it."""
    judge = judge or model()
    best: Opinion | None = None
    for c, verdict in candidates:
        kind, p = judge.verdict(rounded(features(c.content, write_text, round(c.similarity, 3), verdict)))
        if kind != "new_branch" and (best is None or p > best.probability):
            best = Opinion(cast(DecisionKind, kind), c, p)
    return best


def rounded(x: Sequence[float]) -> tuple[float, ...]:
    """Features to 3 decimals: the embedder's last bits vary with batch and thread count."""
    return tuple(round(v, 3) if math.isfinite(v) else 0.0 for v in x)
