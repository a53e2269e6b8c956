"""The ledger: the statements every change to the tree shares, written once.

Retraction, revert, replay and source invalidation all lock the org and read the clock, log one
decision, and revise versions; a retraction (or a replay taking nodes back) believes again what the
node it takes back had superseded. Placement (`write/apply.py`) logs its decisions here too."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from ..db import one
from ..sql import q

if TYPE_CHECKING:
    from ..db import Conn
    from ..placement.validator import Decision


def lock_org(conn: Conn, org: str) -> datetime:
    """Take the org's placement lock (until the transaction ends); return the transaction time, read
    after the lock is held so changes to one org's tree are ordered by it."""
    conn.execute(q("lock_org"), {"org": org})
    return one(conn.execute(q("clock")))["now"]


def log_decision(conn: Conn, org: str, decision_id: uuid.UUID, *, action: str, now: datetime,
                 reason: str, decision: Decision | None = None, validator: str | None = "admin",
                 model: str | None = None, write_id: uuid.UUID | None = None,
                 memory_id: uuid.UUID | None = None, target_id: uuid.UUID | None = None,
                 reverts: uuid.UUID | None = None, replay_id: uuid.UUID | None = None,
                 details: dict[str, Any] | None = None) -> None:
    """One row of the decision log. With `decision`, its kind, validator, model, confidence, latency
    and tokens are logged (a placement); without, an admin event (retract, revert, ...)."""
    d = decision
    conn.execute(q("insert_decision"), {
        "org": org, "id": decision_id, "action": action, "now": now, "reason": reason,
        "write_id": write_id, "memory_id": memory_id, "target_id": target_id,
        "reverts": reverts, "replay_id": replay_id, "details": Jsonb(details or {}),
        "kind": d.kind if d else None,
        "validator": d.validator if d else validator,
        "model": d.model if d else model,
        "confidence": d.confidence if d else None,
        "latency_ms": d.latency_ms if d else None,
        "prompt_tokens": d.prompt_tokens if d else None,
        "completion_tokens": d.completion_tokens if d else None})


def set_details(conn: Conn, org: str, decision_id: uuid.UUID, details: dict[str, Any]) -> None:
    conn.execute(q("set_decision_details"), {"org": org, "id": decision_id, "details": Jsonb(details)})


def revise(conn: Conn, org: str, memory_id: uuid.UUID, *, valid_to: datetime | None, state: str,
           superseded_by: uuid.UUID | None, decision_id: uuid.UUID, now: datetime) -> None:
    """Expire a memory's current version and believe the next one (valid_from is kept)."""
    conn.execute(q("revise_version"), {"org": org, "memory_id": memory_id, "valid_to": valid_to, "state": state,
                                       "superseded_by": superseded_by, "decision_id": decision_id, "now": now})


def belief_before(conn: Conn, org: str, memory_id: uuid.UUID, version: int,
                  superseded_by: uuid.UUID) -> dict[str, Any]:
    """How a memory was believed before `superseded_by` superseded it (at `version`): its valid_to,
    state and successor then — for a memory written already superseded (late history), as it was written."""
    prev = conn.execute(q("version_before_supersession"), {
        "org": org, "memory_id": memory_id, "version": version, "by": superseded_by}).fetchone()
    if prev is not None:
        return dict(prev)
    orig = conn.execute(q("original_valid_to"), {"org": org, "memory_id": memory_id}).fetchone()
    return {"valid_to": orig["valid_to"] if orig else None, "state": "live", "superseded_by": None}
