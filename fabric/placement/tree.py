"""Where a decision puts a write's node in the tree: a pure function (no database).

The caller fetches first (`chain_lookup` says what a contradiction still needs read), then calls
`plan`. Apply and replay both use it, so there is one implementation of the tree rule:

| decision           | parent              | root                                        | depth          |
|--------------------|---------------------|---------------------------------------------|----------------|
| new_branch         | none                | the new node                                | 0              |
| child_update       | the target          | the target's root                           | target's + 1   |
| contradiction_fork | the anchor's parent | the anchor's root (the new node if a root)  | the anchor's   |
| duplicate          | no node: plan is None                                                              |

The anchor of a fork is the version it sits beside (`intervals.plan_insert`): the target, or the
chain member the new fact actually revises."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from .intervals import ChainMember, Revision, plan_insert
from .validator import Candidate, Decision, IncomingWrite


@dataclass(frozen=True)
class NodePlan:
    """Where a decision puts a write's new node, and which versions it revises (nothing written yet)."""

    parent_id: uuid.UUID | None
    root_id: uuid.UUID
    depth: int
    subject: str | None
    relation: str | None
    value: str | None
    valid_to: datetime | None
    state: str
    superseded_by: uuid.UUID | None
    revisions: tuple[Revision, ...]
    details: dict[str, Any]


@dataclass(frozen=True)
class ChainLookup:
    """The versions a contradiction is placed among, when the rows gathered for the write do not hold
    them: every memory under the key (`subject`, `relation`), or else the supersession chain through
    `target_id`."""

    subject: str | None
    relation: str | None
    target_id: uuid.UUID

    @property
    def by_key(self) -> bool:
        return self.subject is not None


def node_key(write: IncomingWrite, decision: Decision) -> tuple[str | None, str | None, str | None]:
    """The node's (subject, relation, value): the caller's key, else the one the validator read."""
    subject = write.subject or decision.subject
    relation = write.relation or (decision.relation if decision.subject else None)
    value = write.value if write.subject else decision.value
    return subject, relation, value


def _chained_by_key(write: IncomingWrite, subject: str | None, relation: str | None,
                    key_rows: Sequence[dict[str, Any]]) -> bool:
    """A fork is placed among its key's versions when it has a key the store knows (the caller's, or
    one some gathered memory is under); otherwise among the target's supersession chain."""
    return subject is not None and relation is not None and (bool(write.subject) or any(
        r["subject"] == subject and r["relation"] == relation for r in key_rows))


def chain_lookup(write: IncomingWrite, decision: Decision, cands: Sequence[Candidate],
                 key_rows: Sequence[dict[str, Any]]) -> ChainLookup | None:
    """What `plan` needs read first: None when nothing (not a fork, an unknown target, or the key's
    versions are already among `key_rows`)."""
    if decision.kind != "contradiction_fork" or decision.target_id not in {c.id for c in cands}:
        return None
    assert decision.target_id is not None
    subject, relation, _ = node_key(write, decision)
    if _chained_by_key(write, subject, relation, key_rows):
        return None if key_rows else ChainLookup(subject, relation, decision.target_id)
    return ChainLookup(None, None, decision.target_id)


def chain_of(rows: Sequence[dict[str, Any]]) -> list[ChainMember]:
    return [ChainMember(r["id"], r["valid_from"], r["valid_to"], r.get("value")) for r in rows]


def plan(write: IncomingWrite, decision: Decision, cands: Sequence[Candidate], chain: Sequence[ChainMember],
         node_id: uuid.UUID) -> NodePlan | None:
    """The tree rule (see the module's table) for a new node `node_id`. `chain`: for a fork, the versions
    it is placed among (the gathered key rows, or what `chain_lookup` asked for). None for a duplicate,
    or when the decision's target is not among the candidates."""
    by_id = {c.id: c for c in cands}
    target = by_id.get(decision.target_id) if decision.target_id else None
    subject, relation, value = node_key(write, decision)
    if decision.kind == "new_branch":
        return NodePlan(None, node_id, 0, subject, relation, value, write.valid_to, "live", None, (), {})
    if target is None:
        return None
    if decision.kind == "child_update":
        return NodePlan(target.id, target.root_id, target.depth + 1, subject, relation, value, write.valid_to,
                        "live", None, (), {})
    if decision.kind != "contradiction_fork":
        return None
    members = list(chain)
    if target.id not in {m.id for m in members}:
        members.append(ChainMember(target.id, target.valid_from, target.valid_to, target.value))
    intervals = plan_insert(node_id, write.valid_from, write.valid_to, value if subject else None, members,
                            target_id=target.id)
    superseded_by = intervals.new_superseded_by
    anchor = (by_id.get(intervals.anchor_id) if intervals.anchor_id else None) or target
    # A sibling of what it contradicts: same parent (a root's correction is a root of its own).
    root_id = anchor.root_id if anchor.parent_id else node_id
    return NodePlan(anchor.parent_id, root_id, anchor.depth, subject, relation, value, intervals.new_valid_to,
                    "superseded" if superseded_by else "live", superseded_by, intervals.revisions,
                    {"out_of_order": intervals.out_of_order,
                     "superseded": [str(r.memory_id) for r in intervals.revisions]})
