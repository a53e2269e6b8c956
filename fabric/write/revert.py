"""Revert a placement: a wrong fork revives what it superseded; a wrong duplicate places the write."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any


from ..db import one
from ..errors import FabricError, NotFound
from ..placement.validator import Decision, IncomingWrite
from ..sql import q
from . import ledger
from .apply import apply_decision
from .retract import retract_memory

if TYPE_CHECKING:
    from ..db import Conn
    from ..embed import Embed


def revert(conn: Conn, embed: Embed, decision_id: uuid.UUID, *, org: str | None,
           reason: str) -> uuid.UUID:
    """Undo a placement as a new logged event. `embed` embeds a reverted duplicate's text (it has no node)
    when one is reverted: the model loads only then."""
    with conn.transaction():
        if org is None:
            d = conn.execute(q("find_decision"), {"id": decision_id}).fetchone()
        else:
            d = conn.execute(q("get_decision"), {"org": org, "id": decision_id}).fetchone()
        if d is None:
            raise NotFound("decision", decision_id, org)
        org = d["org"]
        if d["action"] not in ("place", "replay"):
            raise FabricError(f"decision {decision_id} is a {d['action']}; only placements can be reverted")
        if d["reverted_by"] is not None:
            raise FabricError(f"decision {decision_id} was already reverted by {d['reverted_by']}")
        now = ledger.lock_org(conn, org)
        event_id = uuid.uuid4()
        ledger.log_decision(conn, org, event_id, action="revert", now=now, reason=reason,
                            memory_id=d["memory_id"], write_id=d["write_id"], reverts=decision_id)
        if d["kind"] == "duplicate":
            w = one(conn.execute(q("load_write"), {"org": org, "id": d["write_id"]}))
            write = IncomingWrite(**{k: w[k] for k in w if k != "status"})
            vec = embed([write.content])[0]
            placed = apply_decision(
                conn, write, vec,
                Decision("new_branch", None, f"revert of duplicate decision {decision_id}", 1.0, "admin"),
                [], [], now)
            details: dict[str, Any] = {"placed_memory": str(placed.memory_id)}
        else:
            revived = retract_memory(conn, org, d["memory_id"], now, event_id)
            details = {"retracted": str(d["memory_id"]), "revived": [str(r) for r in revived]}
        ledger.set_details(conn, org, event_id, details)
        conn.execute(q("mark_reverted"), {"org": org, "id": decision_id, "by": event_id})
    return event_id
