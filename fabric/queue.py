"""The RQ side of the write path: enqueue placement jobs, find orphaned ones, see who listens."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from datetime import datetime, timezone
from typing import Callable, Iterable, Sequence

import redis
from rq import Queue, Retry, Worker
from rq.job import Job, JobStatus
from rq.worker import BaseWorker

from .errors import QueueError

log = logging.getLogger(__name__)

PLACE_FUNC = "workers.jobs.place_writes"


def new_job_id() -> str:
    # RQ job ids allow letters, digits, '_' and '-' only.
    return f"fabric-{uuid.uuid4().hex}"


def connect(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10)


def make_queue(conn: redis.Redis, name: str) -> Queue:
    return Queue(name, connection=conn)


def enqueue_jobs(queue: Queue, jobs: Sequence[tuple[str, str, list[str]]], *, timeout: Callable[[int], int],
                 retries: int, at_front: bool = False) -> None:
    """Enqueue (job_id, org, [write ids]) placement jobs in one Redis pipeline; `at_front`: ahead of the
    jobs already waiting (the reconciler's: their writes have waited longest). `timeout`: the seconds a
    job of so many writes may run (Settings.job_timeout_for).

    Retries with backoff live here (RQ's Retry) and nowhere else."""
    try:
        with queue.connection.pipeline() as pipe:
            _enqueue_into(pipe, queue, jobs, timeout=timeout, retries=retries, at_front=at_front)
            pipe.execute()
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise QueueError(f"cannot reach Redis to enqueue placement: {exc}") from exc


def enqueue_commands(queue: Queue, jobs: Sequence[tuple[str, str, list[str]]], *, timeout: Callable[[int], int],
                     retries: int) -> list[tuple[tuple, dict]]:
    """The Redis commands that enqueue these jobs, as RQ writes them, without sending them: for a
    client RQ does not speak (redis.asyncio) to send. `queue.redis_server_version` must be set first
    (RQ would ask the server for it)."""
    assert queue.redis_server_version, "set queue.redis_server_version before building commands offline"
    pipe = queue.connection.pipeline(transaction=True)
    _enqueue_into(pipe, queue, jobs, timeout=timeout, retries=retries)
    return [(args, options) for args, options in pipe.command_stack]


def _enqueue_into(pipe, queue: Queue, jobs: Sequence[tuple[str, str, list[str]]], *,
                  timeout: Callable[[int], int], retries: int, at_front: bool = False) -> None:
    retry = Retry(max=retries, interval=[1, 5, 15]) if retries > 0 else None
    datas = [
        Queue.prepare_data(PLACE_FUNC, args=(org, ids), job_id=job_id, timeout=timeout(len(ids)),
                           retry=retry, result_ttl=600, failure_ttl=7 * 86400, at_front=at_front,
                           description=f"place {len(ids)} write(s) of org {org!r}")
        for job_id, org, ids in jobs
    ]
    queue.enqueue_many(datas, pipeline=pipe)


def listening_workers(queue: Queue) -> list[BaseWorker]:
    try:
        return [w for w in Worker.all(queue=queue) if not _worker_dead(w)]
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return []


def _worker_dead(worker: BaseWorker) -> bool:
    """A worker on this host whose process is gone is dead now, not when its Redis key expires."""
    if worker.hostname == socket.gethostname() and worker.pid:
        try:
            os.kill(worker.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
    return False


def jobs_needing_enqueue(conn: redis.Redis, job_ids: Iterable[str]) -> set[str]:
    """Which of these job ids are not on their way: missing, failed, stopped, held by a dead worker, or
    marked waiting while sitting nowhere a worker looks."""
    ids = [j for j in set(job_ids) if j]
    if not ids:
        return set()
    out: set[str] = set()
    waiting: list[Job] = []
    jobs = Job.fetch_many(ids, connection=conn)
    alive_workers: dict[str, bool] = {}
    for job_id, job in zip(ids, jobs):
        if job is None:
            out.add(job_id)
            continue
        status = job.get_status(refresh=False)
        if status in _WAITING:
            waiting.append(job)
            continue
        if status == JobStatus.STARTED and job.worker_name:
            if job.worker_name not in alive_workers:
                w = Worker.find_by_key(Worker.redis_worker_namespace_prefix + job.worker_name, connection=conn)
                alive_workers[job.worker_name] = w is not None and not _worker_dead(w)
            if alive_workers[job.worker_name]:
                continue
        out.add(job_id)
    return out | _stranded(conn, waiting)


_WAITING = (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED)


# A job sits in a queue's intermediate list, or in its started registry with a waiting status, only while a
# worker starts it (milliseconds). Seen so this long after the reconciler first noticed, its worker died.
INTERMEDIATE_GRACE_S = 3.0


def _stranded(conn: redis.Redis, jobs: Sequence[Job]) -> set[str]:
    """Jobs whose hash says waiting but that no worker will ever run: in no queue and no registry, or
    left half started (a worker took them off the queue and died before starting them: they stay in the
    queue's intermediate list, perhaps in the started registry too, their status still "queued"; RQ
    itself fails such a job only after a minute or more).

    A live job is always somewhere (RQ moves it queue -> intermediate list -> started registry
    atomically); the status is read again at the end so a job that just finished is not counted.
    The intermediate list's first sighting is RQ's own marker (`IntermediateQueue.set_first_seen`)."""
    if not jobs:
        return set()
    queues = {name: Queue(name, connection=conn) for name in {j.origin for j in jobs}}
    started: dict[str, set[str]] = {}
    for name, queue in queues.items():
        entries = conn.zrange(queue.started_job_registry.key, 0, -1)  # "job_id:execution_id"
        started[name] = {(e.decode() if isinstance(e, bytes) else str(e)).split(":")[0] for e in entries}
    with conn.pipeline(transaction=False) as pipe:
        for job in jobs:
            queue = queues[job.origin]
            pipe.lpos(queue.key, job.id)
            pipe.zscore(queue.scheduled_job_registry.key, job.id)
            pipe.zscore(queue.deferred_job_registry.key, job.id)
            pipe.lpos(queue.intermediate_queue_key, job.id)
        found = pipe.execute()
    suspects = []
    for i, job in enumerate(jobs):
        queued, scheduled, deferred, intermediate = found[4 * i:4 * i + 4]
        if queued is not None or scheduled is not None or deferred is not None:
            continue
        # Half started (in the intermediate list, or already in the started registry with its status
        # still waiting): a live worker passes through in milliseconds, a killed one leaves it there.
        if (intermediate is not None or job.id in started[job.origin]) and \
                not _seen_starting_too_long(queues[job.origin], job.id):
            continue
        suspects.append(job)
    if not suspects:
        return set()
    with conn.pipeline(transaction=False) as pipe:
        for job in suspects:
            pipe.hget(job.key, "status")
        statuses = pipe.execute()
    stranded = {job.id for job, st in zip(suspects, statuses)
                if st is not None and JobStatus(st.decode() if isinstance(st, bytes) else st) in _WAITING}
    if stranded:
        log.warning("stranded jobs found", extra={"action": "reconcile_stranded", "jobs": len(stranded)})
        # Out of the intermediate list: the reconciler queues their writes again as new jobs.
        with conn.pipeline(transaction=False) as pipe:
            for job in suspects:
                if job.id in stranded:
                    pipe.lrem(queues[job.origin].intermediate_queue_key, 1, job.id)
            pipe.execute()
    return stranded


def _seen_starting_too_long(queue: Queue, job_id: str) -> bool:
    iq = queue.intermediate_queue
    if iq.set_first_seen(job_id):  # first sighting: a worker may be starting it right now
        return False
    first = iq.get_first_seen(job_id)
    return first is not None and (datetime.now(timezone.utc) - first).total_seconds() > INTERMEDIATE_GRACE_S
