"""`stats`: per org, what the store holds and what it did, from Postgres and the refusal counts in Redis."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import redis

from ..sql import q
from ..write.policy import refusal_counts

if TYPE_CHECKING:
    from ..db import Conn

log = logging.getLogger(__name__)


def stats(conn: Conn, client: redis.Redis | None, org: str | None = None) -> dict[str, Any]:
    """Per org: memories by current belief, writes by status, decisions by action/kind, refusals by kind,
    and conflicts: facts holding two or more live values now (sql/admin.sql stats_conflicts: subjects and
    values compared as read.search.flag_conflicts does, relation names by name only)."""
    params = {"org": org}
    out: dict[str, dict[str, Any]] = {
        r["org"]: _empty() for r in conn.execute(q("stats_orgs"), params).fetchall()}
    for r in conn.execute(q("stats_memories"), params).fetchall():
        out.setdefault(r["org"], _empty())["memories"][r["state"]] = r["n"]
    for r in conn.execute(q("stats_writes"), params).fetchall():
        out.setdefault(r["org"], _empty())["writes"][r["status"]] = r["n"]
    for r in conn.execute(q("stats_decisions"), params).fetchall():
        label = r["action"] + (f":{r['kind']}" if r["kind"] else "")
        out.setdefault(r["org"], _empty())["decisions"][label] = r["n"]
    for r in conn.execute(q("stats_conflicts"), params).fetchall():
        out.setdefault(r["org"], _empty())["conflicts"] = r["n"]
    if client is not None:
        try:
            for o, counts in refusal_counts(client, org).items():
                out.setdefault(o, _empty())["refusals"] = counts
        except (redis.RedisError, OSError) as exc:
            log.warning("refusal counts unavailable", extra={"action": "stats", "error": str(exc)})
    return out


def _empty() -> dict[str, Any]:
    return {"memories": {}, "writes": {}, "decisions": {}, "refusals": {}, "conflicts": 0}
