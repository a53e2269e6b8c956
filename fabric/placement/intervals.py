"""Contradiction resolution as a pure function over valid-time intervals.

A contradicting fact is inserted into the chain of versions of the same thing at its
valid_from: what was valid then ends there and is superseded by it; if a later version
already exists, the new fact is history (it ends where the later one starts) and the
later one stays live. Nothing is ever extended: an interval only shrinks."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from .facts import value_key


@dataclass(frozen=True, slots=True)
class ChainMember:
    id: uuid.UUID
    valid_from: datetime
    valid_to: datetime | None
    value: str | None = None


@dataclass(frozen=True, slots=True)
class Revision:
    memory_id: uuid.UUID
    valid_to: datetime
    superseded_by: uuid.UUID


@dataclass(frozen=True, slots=True)
class IntervalPlan:
    new_valid_to: datetime | None
    new_superseded_by: uuid.UUID | None
    revisions: tuple[Revision, ...]
    anchor_id: uuid.UUID | None  # the member the new memory sits beside in the tree
    out_of_order: bool


def _norm(v: str | None) -> str | None:
    return value_key(v) if v is not None else None  # "$2M" is "2 million"


def plan_insert(new_id: uuid.UUID, new_from: datetime, new_to: datetime | None, new_value: str | None,
                chain: Sequence[ChainMember], target_id: uuid.UUID | None = None) -> IntervalPlan:
    members = [m for m in chain if m.valid_to is None or m.valid_to > m.valid_from]  # skip empty intervals
    contradicted = [m for m in members
                    if m.valid_from <= new_from and (m.valid_to is None or m.valid_to > new_from)
                    and (new_value is None or _norm(m.value) != _norm(new_value))]
    later = [m for m in members if m.valid_from > new_from]
    successor = min(later, key=lambda m: m.valid_from) if later else None
    valid_to = new_to
    if successor is not None and (valid_to is None or successor.valid_from < valid_to):
        valid_to = successor.valid_from
    revisions = tuple(Revision(m.id, new_from, new_id) for m in contradicted)
    anchor: uuid.UUID | None
    if target_id is not None and any(m.id == target_id for m in contradicted + ([successor] if successor else [])):
        anchor = target_id
    elif contradicted:
        anchor = max(contradicted, key=lambda m: m.valid_from).id
    else:
        anchor = successor.id if successor else target_id
    return IntervalPlan(
        new_valid_to=valid_to,
        new_superseded_by=successor.id if successor is not None else None,
        revisions=revisions,
        anchor_id=anchor,
        out_of_order=successor is not None,
    )
