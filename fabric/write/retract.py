"""Retraction: the store learns it was wrong, and keeps what it believed before."""

from __future__ import annotations

from typing import TYPE_CHECKING

import uuid
from datetime import datetime


from ..errors import FabricError, NotFound
from ..sql import q
from . import ledger

if TYPE_CHECKING:
    from ..db import Conn


def retract_memory(conn: Conn, org: str, memory_id: uuid.UUID, now: datetime,
                   decision_id: uuid.UUID) -> list[uuid.UUID]:
    """End a memory's transaction time; revive what it had superseded. Returns the revived ids.

    Runs inside the caller's transaction (which holds the org's placement lock)."""
    expired = conn.execute(q("expire_memory"), {"org": org, "memory_id": memory_id, "now": now}).fetchone()
    if expired is None:
        raise FabricError(f"memory {memory_id} is not currently believed (already retracted?)")
    revived = []
    for row in conn.execute(q("superseded_by"), {"org": org, "memory_id": memory_id}).fetchall():
        prev = ledger.belief_before(conn, org, row["memory_id"], row["version"], memory_id)
        valid_to, state, by = prev["valid_to"], prev["state"], prev["superseded_by"]
        if expired["superseded_by"] is not None:
            # The retracted memory had itself been superseded: its successor now follows the revived one.
            # (V1 -> V2 -> V3, retract V2: V1 holds until V3 starts, superseded by V3.)
            end = expired["valid_to"]
            if valid_to is None or (end is not None and end < valid_to):
                valid_to = end
            state, by = "superseded", expired["superseded_by"]
        ledger.revise(conn, org, row["memory_id"], valid_to=valid_to, state=state, superseded_by=by,
                      decision_id=decision_id, now=now)
        revived.append(row["memory_id"])
    return revived


def retract(conn: Conn, org: str, memory_id: uuid.UUID, reason: str) -> uuid.UUID:
    with conn.transaction():
        if conn.execute(q("memory_exists"), {"org": org, "id": memory_id}).fetchone() is None:
            raise NotFound("memory", memory_id, org)
        now = ledger.lock_org(conn, org)
        decision_id = uuid.uuid4()
        ledger.log_decision(conn, org, decision_id, action="retract", now=now, reason=reason, memory_id=memory_id)
        revived = retract_memory(conn, org, memory_id, now, decision_id)
        ledger.set_details(conn, org, decision_id, {"revived": [str(r) for r in revived]})
    return decision_id
