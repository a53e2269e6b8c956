"""Place writes: embed, gather candidates, decide (outside any lock), apply in one transaction.

Concurrency: deciding may take an LLM call, so it runs unlocked; applying takes the org's
placement lock, re-reads the candidates and re-decides if they changed meanwhile (optimistic
concurrency). Idempotency: the write row is locked and must still be pending, so a job that
runs twice places once."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from .. import metrics
from ..errors import FabricError
from ..placement.facts import text_key
from ..placement.intervals import ChainMember, Revision, plan_insert
from ..placement.validator import Candidate, Decision, IncomingWrite, Validator, check_decision, pregate
from ..read.search import vector_search
from ..sql import q
from ..types import Placement, utcnow

log = logging.getLogger(__name__)

MAX_RACE_RETRIES = 20


@dataclass
class PlaceStats:
    placed: int = 0
    duplicates: int = 0
    parked: int = 0
    skipped: int = 0
    validator_calls: int = 0
    raced: int = 0


def load_pending(conn: psycopg.Connection, org: str, ids: Sequence[uuid.UUID]) -> list[IncomingWrite]:
    rows = conn.execute(q("load_pending"), {"org": org, "ids": list(ids)}).fetchall()
    conn.commit()
    return [IncomingWrite(**{**r, "metadata": r["metadata"] or {}}) for r in rows]


def gather_candidates(conn: psycopg.Connection, write: IncomingWrite, embedding: np.ndarray, *,
                      k: int, ef_search: int) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """The k nearest live memories in the org, plus every memory believed under the write's key (for a
    text-only write: the key its sentence states, so a version worded far from the old one is found)."""
    now = utcnow()
    rows = vector_search(conn, org=write.org, query=embedding, k=k, valid_at=now, known_at=now,
                         include_superseded=True, live_only=True, ef_search=ef_search)
    cands = {r["id"]: candidate_from_row(r, r["score"], False) for r in rows}
    key_rows: list[dict[str, Any]] = []
    subject, relation = (write.subject, write.relation) if write.keyed else text_key(write.content)
    if subject is not None:
        key_rows = conn.execute(q("key_members"), {"org": write.org, "subject": subject,
                                                   "relation": relation, "q": embedding}).fetchall()
    return with_key_members(cands, key_rows)


def with_key_members(cands: dict[uuid.UUID, Candidate], key_rows: list[dict[str, Any]]
                     ) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """Add the live memories under the write's key to its neighbours; best first."""
    for r in key_rows:
        if r["state"] == "live":
            cands[r["id"]] = candidate_from_row(r, float(r["similarity"]), True)
    return sorted(cands.values(), key=lambda c: -c.similarity), key_rows


def candidate_from_row(r: dict[str, Any], similarity: float, key_match: bool) -> Candidate:
    return Candidate(id=r["id"], content=r["content"], similarity=similarity, valid_from=r["valid_from"],
                     valid_to=r["valid_to"], parent_id=r["parent_id"], root_id=r["root_id"], depth=r["depth"],
                     version=r["version"], subject=r["subject"], relation=r["relation"], value=r["value"],
                     key_match=key_match)


def _fingerprint(cands: Sequence[Candidate]) -> frozenset[tuple[uuid.UUID, int]]:
    return frozenset((c.id, c.version) for c in cands)


def decide(write: IncomingWrite, cands: Sequence[Candidate], validator: Validator, *,
           near_similarity: float) -> Decision:
    gated = pregate(write, cands, near_similarity=near_similarity)
    if gated is not None:
        return keep_keys_apart(write, gated, cands)
    started = time.perf_counter()
    decision = validator.decide(write, cands)
    if decision.latency_ms is None:
        decision = decision.with_cost(latency_ms=(time.perf_counter() - started) * 1000)
    decision = keep_keys_apart(write, check_decision(decision, cands), cands)
    metrics.decided(decision)
    return decision


def keep_keys_apart(write: IncomingWrite, decision: Decision, cands: Sequence[Candidate]) -> Decision:
    """A keyed write states another fact than a memory under another key, however alike their texts
    (a LangGraph store writes the same text under many keys): it is neither that memory's duplicate
    nor its correction, whichever validator said so. It starts a branch of its own."""
    if not write.keyed or decision.kind not in ("duplicate", "contradiction_fork"):
        return decision
    target = next((c for c in cands if c.id == decision.target_id), None)
    if target is None or target.subject is None or target.key_match:
        return decision
    return replace(decision, kind="new_branch", target_id=None,
                   reason=f"{decision.reason}; but that memory is under another key "
                          f"({target.subject}, {target.relation}): another fact")


def place_one(conn: psycopg.Connection, write: IncomingWrite, embedding: np.ndarray, validator: Validator, *,
              k: int, near_similarity: float, ef_search: int, stats: PlaceStats,
              replay_id: uuid.UUID | None = None) -> Placement | None:
    """Decide and apply one write. Returns None if another runner already settled it."""
    for _ in range(MAX_RACE_RETRIES):
        cands, _ = gather_candidates(conn, write, embedding, k=k, ef_search=ef_search)
        conn.commit()
        decision = decide(write, cands, validator, near_similarity=near_similarity)
        if decision.called:
            stats.validator_calls += 1
        with conn.transaction():
            status = conn.execute(q("lock_write"), {"org": write.org, "id": write.id}).fetchone()
            if status is None or status["status"] != "pending":
                stats.skipped += 1
                return None
            conn.execute(q("lock_org"), {"org": write.org})
            fresh, key_rows = gather_candidates(conn, write, embedding, k=k, ef_search=ef_search)
            if _fingerprint(fresh) != _fingerprint(cands):
                stats.raced += 1
                continue  # someone placed nearby meanwhile: decide again on what is there now
            now = conn.execute(q("clock")).fetchone()["now"]
            placement = apply_decision(conn, write, embedding, decision, fresh, key_rows, now, replay_id=replay_id)
        if placement.decision == "duplicate":
            stats.duplicates += 1
        else:
            stats.placed += 1
        return placement
    # Not the validator's fault: let RQ's Retry run the job again later rather than park the write.
    raise FabricError(f"write {write.id}: candidates kept changing over {MAX_RACE_RETRIES} attempts")


@dataclass(frozen=True)
class NodePlan:
    """Where a decision puts a write's new node, and which versions it revises (nothing written yet)."""

    parent_id: uuid.UUID | None
    root_id: uuid.UUID
    depth: int
    subject: str | None
    relation: str | None
    value: str | None
    valid_to: Any
    state: str
    superseded_by: uuid.UUID | None
    revisions: tuple[Revision, ...]
    details: dict[str, Any]


def plan_node(conn: psycopg.Connection, write: IncomingWrite, embedding: np.ndarray, decision: Decision,
              cands: Sequence[Candidate], key_rows: Sequence[dict[str, Any]], node_id: uuid.UUID) -> NodePlan | None:
    """The one implementation of the placement rules (apply and replay both use it). None for a duplicate,
    or when the decision's target is not among the candidates."""
    org = write.org
    by_id = {c.id: c for c in cands}
    target = by_id.get(decision.target_id) if decision.target_id else None
    subject = write.subject or decision.subject
    relation = write.relation or (decision.relation if decision.subject else None)
    value = write.value if write.subject else decision.value
    valid_to, state, superseded_by, revisions, details = write.valid_to, "live", None, (), {}
    if decision.kind == "new_branch":
        parent_id, root_id, depth = None, node_id, 0
    elif decision.kind == "child_update" and target is not None:
        parent_id, root_id, depth = target.id, target.root_id, target.depth + 1
    elif decision.kind == "contradiction_fork" and target is not None:
        if subject is not None and relation is not None and (write.subject or any(
                r["subject"] == subject and r["relation"] == relation for r in key_rows)):
            chain_rows = key_rows or conn.execute(q("key_members"), {
                "org": org, "subject": subject, "relation": relation, "q": embedding}).fetchall()
        else:
            chain_rows = conn.execute(q("chain_members"), {"org": org, "id": target.id}).fetchall()
        chain = [ChainMember(r["id"], r["valid_from"], r["valid_to"], r.get("value")) for r in chain_rows]
        if target.id not in {m.id for m in chain}:
            chain.append(ChainMember(target.id, target.valid_from, target.valid_to, target.value))
        plan = plan_insert(node_id, write.valid_from, write.valid_to, value if subject else None, chain,
                           target_id=target.id)
        valid_to, superseded_by, revisions = plan.new_valid_to, plan.new_superseded_by, plan.revisions
        state = "superseded" if superseded_by else "live"
        details = {"out_of_order": plan.out_of_order, "superseded": [str(r.memory_id) for r in revisions]}
        anchor = by_id.get(plan.anchor_id) or target
        # A sibling of what it contradicts: same parent (a root's correction is a root of its own).
        parent_id, depth = anchor.parent_id, anchor.depth
        root_id = anchor.root_id if anchor.parent_id else node_id
    else:
        return None
    return NodePlan(parent_id, root_id, depth, subject, relation, value, valid_to, state, superseded_by,
                    tuple(revisions), details)


def write_revisions(conn: psycopg.Connection, org: str, revisions: Sequence[Revision], decision_id: uuid.UUID,
                    now) -> None:
    for rev in revisions:
        conn.execute(q("revise_version"), {
            "org": org, "memory_id": rev.memory_id, "valid_to": rev.valid_to, "state": "superseded",
            "superseded_by": rev.superseded_by, "decision_id": decision_id, "now": now})


def apply_decision(conn: psycopg.Connection, write: IncomingWrite, embedding: np.ndarray, decision: Decision,
                   cands: Sequence[Candidate], key_rows: Sequence[dict[str, Any]], now, *,
                   replay_id: uuid.UUID | None = None) -> Placement:
    """Write the decision's consequences. Runs inside the caller's transaction."""
    org = write.org
    decision_id = uuid.uuid4()
    target_id = decision.target_id if decision.kind != "new_branch" else None

    if decision.kind == "duplicate":
        assert target_id is not None and any(c.id == target_id for c in cands)
        _log_decision(conn, org, decision_id, decision, write.id, target_id, target_id, now, replay_id, {})
        conn.execute(q("settle_write"), {"org": org, "id": write.id, "status": "duplicate",
                                         "memory_id": target_id, "decision_id": decision_id, "now": now})
        return _placement(write, decision, target_id, target_id, decision_id, False)

    memory_id = uuid.uuid4()
    plan = plan_node(conn, write, embedding, decision, cands, key_rows, memory_id)
    assert plan is not None, "check_decision admits only targets among the candidates"
    _log_decision(conn, org, decision_id, decision, write.id, memory_id, target_id, now, replay_id, plan.details)
    conn.execute(q("insert_memory"), {
        "org": org, "id": memory_id, "write_id": write.id, "parent_id": plan.parent_id, "root_id": plan.root_id,
        "depth": plan.depth, "content": write.content, "subject": plan.subject, "relation": plan.relation,
        "value": plan.value, "source": write.source, "kind": write.kind, "durability": write.durability,
        "metadata": Jsonb(write.metadata or {}), "placement": decision.kind, "embedding": embedding, "now": now})
    conn.execute(q("insert_version"), {
        "org": org, "memory_id": memory_id, "valid_from": write.valid_from, "valid_to": plan.valid_to,
        "state": plan.state, "superseded_by": plan.superseded_by, "decision_id": decision_id, "now": now})
    write_revisions(conn, org, plan.revisions, decision_id, now)
    conn.execute(q("settle_write"), {"org": org, "id": write.id, "status": "placed", "memory_id": memory_id,
                                     "decision_id": decision_id, "now": now})
    return _placement(write, decision, memory_id, target_id, decision_id, bool(plan.details.get("out_of_order")))


def _log_decision(conn, org, decision_id, d: Decision, write_id, memory_id, target_id, now, replay_id,
                  details) -> None:
    conn.execute(q("insert_decision"), {
        "org": org, "id": decision_id, "action": "replay" if replay_id else "place", "kind": d.kind,
        "write_id": write_id, "memory_id": memory_id, "target_id": target_id, "validator": d.validator,
        "model": d.model, "reason": d.reason, "confidence": d.confidence, "latency_ms": d.latency_ms,
        "prompt_tokens": d.prompt_tokens, "completion_tokens": d.completion_tokens, "now": now,
        "reverts": None, "replay_id": replay_id, "details": Jsonb(details)})


def _placement(write: IncomingWrite, d: Decision, memory_id, target_id, decision_id, out_of_order) -> Placement:
    return Placement(write_id=write.id, org=write.org, decision=d.kind, memory_id=memory_id, target_id=target_id,
                     decision_id=decision_id, reason=d.reason, confidence=d.confidence, validator=d.validator,
                     out_of_order=out_of_order)


def note_failure(conn: psycopg.Connection, org: str, write_id: uuid.UUID, error: str, *, park: bool,
                 max_attempts: int) -> str | None:
    row = conn.execute(q("note_failure"), {"org": org, "id": write_id, "error": error[:2000], "park": park,
                                           "max_attempts": max_attempts}).fetchone()
    conn.commit()
    return row["status"] if row else None
