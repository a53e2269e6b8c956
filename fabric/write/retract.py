"""Retraction and revert: the store learns it was wrong, and keeps what it believed before."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ..errors import FabricError, NotFound
from ..sql import q


def retract_memory(conn: psycopg.Connection, org: str, memory_id: uuid.UUID, now, decision_id: uuid.UUID) -> list[uuid.UUID]:
    """End a memory's transaction time; revive what it had superseded. Returns the revived ids.

    Runs inside the caller's transaction (which holds the org's placement lock)."""
    expired = conn.execute(q("expire_memory"), {"org": org, "memory_id": memory_id, "now": now}).fetchone()
    if expired is None:
        raise FabricError(f"memory {memory_id} is not currently believed (already retracted?)")
    revived = []
    for row in conn.execute(q("superseded_by"), {"org": org, "memory_id": memory_id}).fetchall():
        prev = conn.execute(q("version_before_supersession"), {
            "org": org, "memory_id": row["memory_id"], "version": row["version"], "by": memory_id}).fetchone()
        if prev is None:  # written already superseded (late history): back to how it was written
            orig = conn.execute(q("original_valid_to"), {"org": org, "memory_id": row["memory_id"]}).fetchone()
            prev = {"valid_to": orig["valid_to"] if orig else None, "state": "live", "superseded_by": None}
        valid_to, state, by = prev["valid_to"], prev["state"], prev["superseded_by"]
        if expired["superseded_by"] is not None:
            # The retracted memory had itself been superseded: its successor now follows the revived one.
            # (V1 -> V2 -> V3, retract V2: V1 holds until V3 starts, superseded by V3.)
            end = expired["valid_to"]
            if valid_to is None or (end is not None and end < valid_to):
                valid_to = end
            state, by = "superseded", expired["superseded_by"]
        conn.execute(q("revise_version"), {
            "org": org, "memory_id": row["memory_id"], "valid_to": valid_to, "state": state,
            "superseded_by": by, "decision_id": decision_id, "now": now})
        revived.append(row["memory_id"])
    return revived


def log_event(conn: psycopg.Connection, org: str, decision_id: uuid.UUID, *, action: str, now, reason: str,
              memory_id: uuid.UUID | None = None, write_id: uuid.UUID | None = None,
              reverts: uuid.UUID | None = None, details: dict[str, Any] | None = None,
              validator: str | None = "admin") -> None:
    conn.execute(q("insert_decision"), {
        "org": org, "id": decision_id, "action": action, "kind": None, "write_id": write_id,
        "memory_id": memory_id, "target_id": None, "validator": validator, "model": None, "reason": reason,
        "confidence": None, "latency_ms": None, "prompt_tokens": None, "completion_tokens": None, "now": now,
        "reverts": reverts, "replay_id": None, "details": Jsonb(details or {})})


def retract(conn: psycopg.Connection, org: str, memory_id: uuid.UUID, reason: str) -> uuid.UUID:
    with conn.transaction():
        if conn.execute(q("memory_exists"), {"org": org, "id": memory_id}).fetchone() is None:
            raise NotFound("memory", memory_id, org)
        conn.execute(q("lock_org"), {"org": org})
        now = conn.execute(q("clock")).fetchone()["now"]
        decision_id = uuid.uuid4()
        log_event(conn, org, decision_id, action="retract", now=now, reason=reason, memory_id=memory_id)
        revived = retract_memory(conn, org, memory_id, now, decision_id)
        conn.execute(q("set_decision_details"), {"details": Jsonb({"revived": [str(r) for r in revived]}),
                                                 "org": org, "id": decision_id})
    return decision_id
