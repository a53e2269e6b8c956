"""The validator contract: a new write plus its candidates in, one decision out."""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol, Sequence

from ..errors import ValidatorError
from ..types import DECISION_KINDS, DecisionKind


@dataclass(frozen=True, slots=True)
class IncomingWrite:
    """A write waiting for placement, as read back from fabric.writes."""

    id: uuid.UUID
    org: str
    content: str
    valid_from: datetime
    valid_to: datetime | None = None
    subject: str | None = None
    relation: str | None = None
    value: str | None = None
    source: str | None = None
    kind: str | None = None
    durability: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def keyed(self) -> bool:
        return self.subject is not None and self.relation is not None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A live memory near the write (or sharing its key), with its cosine similarity."""

    id: uuid.UUID
    content: str
    similarity: float
    valid_from: datetime
    valid_to: datetime | None
    parent_id: uuid.UUID | None
    root_id: uuid.UUID
    depth: int
    version: int
    subject: str | None = None
    relation: str | None = None
    value: str | None = None
    key_match: bool = False
    kind: str | None = None   # the memory's kind ("episodic" decays: see keep_episodes_apart)


@dataclass(frozen=True, slots=True)
class Decision:
    kind: DecisionKind
    target_id: uuid.UUID | None
    reason: str
    confidence: float
    validator: str
    subject: str | None = None
    relation: str | None = None
    value: str | None = None
    model: str | None = None
    latency_ms: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    called: bool = False  # True when a model (or other costly validator) was actually consulted

    def with_cost(self, **kw: Any) -> Decision:
        return replace(self, **kw)


class Validator(Protocol):
    """Decides one placement. Must not touch the database; candidates carry what it needs."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...  # None: no model to wait for (decided under the org lock)

    def decide(self, write: IncomingWrite, candidates: Sequence[Candidate]) -> Decision: ...


def check_decision(decision: Decision, candidates: Sequence[Candidate]) -> Decision:
    """A decision is applied only if it is well-formed and its target is one of the candidates."""
    if decision.kind not in DECISION_KINDS:
        raise ValidatorError(f"unknown decision kind {decision.kind!r}")
    if decision.kind == "new_branch":
        return replace(decision, target_id=None)
    if decision.target_id is None:
        raise ValidatorError(f"{decision.kind} needs a target")
    if decision.target_id not in {c.id for c in candidates}:
        raise ValidatorError(f"target {decision.target_id} is not among the candidates; refused")
    if not 0.0 <= decision.confidence <= 1.0:
        raise ValidatorError(f"confidence {decision.confidence} outside [0, 1]")
    return decision


_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)


def normalise(text: str) -> str:
    """Case, accents, punctuation and spacing do not make two texts different."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCT.sub(" ", text).split())


def words(text: str) -> list[str]:
    return normalise(text).split()


def pregate(write: IncomingWrite, candidates: Sequence[Candidate], *, near_similarity: float) -> Decision | None:
    """Cheap decisions that spare a validator call: an exact repeat, or nothing near at all.

    A repeat valid from before the memory it repeats is not settled here: it is that fact's history
    (the validator places it). A neighbour stating the same attribute of the same subject is near
    whatever its similarity. A text-only write with nothing near gets the key its sentence states."""
    from .facts import value_key  # facts imports this module

    norm = normalise(write.content)
    for c in candidates:
        same_value = not (write.keyed and c.key_match and c.value is not None and write.value is not None
                          and value_key(c.value) != value_key(write.value))
        if normalise(c.content) == norm and same_value and write.valid_from >= c.valid_from:
            return Decision("duplicate", c.id, "exact repeat of an existing memory", 1.0, "pregate")
    if not any(c.key_match for c in candidates) and all(c.similarity < near_similarity for c in candidates) \
            and not any(states_same_attribute(write, c) or refined(write, c) for c in candidates):
        best = max((c.similarity for c in candidates), default=0.0)
        decision = Decision("new_branch", None, f"nothing near (best similarity {best:.2f} < {near_similarity})",
                            1.0, "pregate")
        from .rules import with_text_keys  # rules builds on this module

        return with_text_keys(write, decision, ())
    return None


def refined(write: IncomingWrite, c: Candidate) -> bool:
    """Does a text-only write say all a neighbour says and more, however far apart their embeddings ("I have a
    dog." / "My dog is a three-year-old collie called Pip.": samefact.refines), or restate it in other words
    (restate.restatement)?"""
    from .restate import restatement
    from .samefact import refines

    return not write.keyed and (refines(c.content, write.content) or restatement(c.content, write.content) is not None)


def states_same_attribute(write: IncomingWrite, c: Candidate) -> bool:
    """Does a text-only write state the same attribute of the same subject as a neighbour, however far
    apart their embeddings ("Ada Moreau reports to Jonathan Hale" / "Ada Moreau's manager is Priya Nair")?"""
    from .align import canonical
    from .facts import extract, shared_relation
    from .states import state, title

    if write.keyed:
        return False
    was, now = state(c.content), state(write.content)  # "the user is vegan" / "the user is pescatarian now"
    if was and now and was.read and now.read and was.attribute == now.attribute and was.subject == now.subject:
        return True
    held, holds = title(canonical(c.content)), title(canonical(write.content))  # a job title in other words
    if held and holds and held.subject == holds.subject:
        return True
    new, old = extract(write.content, c.content), extract(c.content, write.content)
    return new is not None and old is not None and not (new.loose or old.loose) \
        and new.subject_key == old.subject_key and shared_relation(old, new) is not None
