"""The reconciler: Postgres is the source of truth, so every pending write whose job is lost
(Redis was down at write time, a worker died, retries ran out) is queued again."""

from __future__ import annotations

import logging
from typing import Any

import redis
from psycopg_pool import ConnectionPool
from rq import Queue

from .. import metrics
from .. import queue as fq
from ..config import Settings
from ..errors import QueueError
from ..sql import q

log = logging.getLogger(__name__)


def reconcile(pool: ConnectionPool[Any], conn: redis.Redis, queue: Queue, settings: Settings, *,
              grace: float, limit: int = 10000) -> int:
    with pool.connection() as pg:
        # SKIP LOCKED leaves out writes a placement transaction holds right now.
        rows = pg.execute(q("pending_for_reconcile"), {"grace": grace, "limit": limit}).fetchall()
    if not rows:
        return 0
    try:
        lost = fq.jobs_needing_enqueue(conn, [r["job_id"] for r in rows])
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise QueueError(f"cannot reach Redis to check placement jobs: {exc}") from exc
    by_org: dict[str, list[str]] = {}
    for r in rows:
        if r["job_id"] is None or r["job_id"] in lost:
            by_org.setdefault(r["org"], []).append(str(r["id"]))
    jobs = []
    for org, ids in by_org.items():
        for start in range(0, len(ids), settings.embed_batch_size):
            jobs.append((fq.new_job_id(), org, ids[start:start + settings.embed_batch_size]))
    if jobs:
        # At the front: these writes have waited longest (a worker died with them, or Redis lost them).
        fq.enqueue_jobs(queue, jobs, timeout=settings.job_timeout_for, retries=settings.job_retries, at_front=True)
        # Point the writes at their new jobs so the next pass sees them as on their way.
        with pool.connection() as pg:
            with pg.cursor() as cur:
                cur.executemany(q("set_job_id"), [{"org": org, "ids": ids, "job_id": job_id}
                                                  for job_id, org, ids in jobs])
    n = sum(len(ids) for ids in by_org.values())
    metrics.requeued(n)
    if n:
        log.info("reconciled", extra={"action": "reconcile", "writes": n, "jobs": len(jobs)})
    return n
