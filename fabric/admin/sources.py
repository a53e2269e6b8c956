"""Source invalidation (seed 004): a change in the system that owns some memories ends the valid time
of every live memory from that source, as new versions, logged as one decision."""

from __future__ import annotations

from typing import TYPE_CHECKING

import logging
import uuid
from datetime import datetime


from ..sql import q
from ..types import aware, check_text
from ..write import ledger

if TYPE_CHECKING:
    from ..db import Conn

log = logging.getLogger(__name__)


def invalidate_source(conn: Conn, org: str, source: str, at: datetime | None = None,
                      *, reason: str | None = None) -> tuple[uuid.UUID | None, list[uuid.UUID]]:
    """End the valid time at `at` (default: now) of every live memory from `source` that holds then.

    One transaction under the org's placement lock; one decision (action 'invalidate_source') logs it
    and is the decision of every new version. Returns (decision id, memory ids); no decision is logged
    when nothing was live from that source."""
    check_text("source", source)
    at = aware("at", at)
    with conn.transaction():
        now = ledger.lock_org(conn, org)
        at = at or now
        rows = conn.execute(q("source_live_versions"), {"org": org, "source": source, "at": at}).fetchall()
        if not rows:
            return None, []
        decision_id = uuid.uuid4()
        ids = [r["memory_id"] for r in rows]
        ledger.log_decision(conn, org, decision_id, action="invalidate_source", now=now,
                            reason=reason or f"source {source!r} changed at {at.isoformat()}",
                            details={"source": source, "at": at.isoformat(), "memories": [str(i) for i in ids]})
        for r in rows:  # a new version: valid time ends at `at`, state and successor unchanged
            ledger.revise(conn, org, r["memory_id"], valid_to=at, state=r["state"],
                          superseded_by=r["superseded_by"], decision_id=decision_id, now=now)
    log.info("source invalidated", extra={"action": "invalidate_source", "org": org, "source": source,
                                          "memories": len(ids)})
    return decision_id, ids
