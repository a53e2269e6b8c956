"""The worker entry point: `fabric worker` (or `python -m workers.run`).

A SimpleWorker (no fork per job: the embedding model stays loaded) on fabric's queue. It
reconciles on start and every `reconcile_interval` seconds, and, when started for a parent
process (the embedded default), exits when that parent is gone."""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import signal
import stat
import sys
import time
from typing import Callable

import redis
from rq import SimpleWorker, worker_registration

from fabric import metrics, servers
from fabric import queue as fq
from fabric.config import Settings
from fabric.db import make_pool, migrate_if_behind
from fabric.errors import QueueError
from fabric.write.placer import Placer
from fabric.write.reconcile import reconcile

from . import jobs

log = logging.getLogger("workers.run")


class FabricWorker(SimpleWorker):
    """Adds the reconciler (and a parent-process check) to RQ's periodic maintenance, and registers
    itself again when Redis comes back empty after a restart."""

    fabric_reconcile: Callable[[], None] | None = None
    parent_pid: int | None = None
    stopping = False  # a stop was asked for (signal, parent gone): do not start again
    max_connection_wait_time = 10.0  # longest pause between reconnection attempts while idle

    def request_stop(self, signum, frame):
        self.stopping = True
        super().request_stop(signum, frame)

    def run_maintenance_tasks(self):
        super().run_maintenance_tasks()
        if self.parent_pid and not _alive(self.parent_pid):
            log.info("parent process gone; worker exits")
            self.request_stop(None, None)
            return
        self.run_reconcile()

    def run_reconcile(self) -> None:
        if self.fabric_reconcile is not None:
            try:
                self.fabric_reconcile()
            except Exception:  # the worker must outlive a failed reconcile pass
                log.exception("reconcile failed")

    def heartbeat(self, timeout=None, pipeline=None):
        super().heartbeat(timeout, pipeline)
        # A restarted Redis has lost this worker's registration (and every queued job): without it
        # listening_workers() sees no one. Register again and re-queue what Postgres still holds.
        if pipeline is None and not self.connection.hexists(self.key, "birth"):
            log.warning("Redis lost this worker's registration; registering again",
                        extra={"action": "reregister", "worker": self.name})
            with self.connection.pipeline() as pipe:
                pipe.hset(self.key, mapping=self.serialize())
                worker_registration.register(self, pipe)
                pipe.expire(self.key, self.worker_ttl + 60)
                pipe.execute()
            self.run_reconcile()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_forking_pid = 0


def _before_fork() -> None:
    global _forking_pid
    _forking_pid = os.getpid()


def _after_fork_in_child() -> None:
    """Runs in every child forked from the worker (RQ's scheduler is one).

    The child dies with the worker (Linux: PR_SET_PDEATHSIG), so a `kill -9` of the worker leaves no
    orphan scheduler behind. And it closes the sockets it inherited: otherwise it would keep the
    worker's Postgres sessions - with a killed worker's transaction and its locks - open."""
    _die_with_parent()
    _drop_inherited_sockets()


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != _forking_pid:  # the worker died before prctl took effect
        os._exit(0)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _drop_inherited_sockets() -> None:
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: scan the usual range
        fds = list(range(3, 1024))
    for fd in fds:
        if fd <= 2:
            continue
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fabric worker", description="Run a fabric placement worker.")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    parser.add_argument("--parent-pid", type=int, default=None, help="exit when this process is gone")
    parser.add_argument("--name", default=None, help="worker name (default: RQ's)")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help="serve Prometheus metrics on this port (default: FABRIC_METRICS_PORT)")
    args = parser.parse_args(argv)
    configure_logging()
    return run(Settings.from_env(metrics_port=args.metrics_port), burst=args.burst, parent_pid=args.parent_pid,
               name=args.name)


def configure_logging() -> None:
    """fabric's own log lines (reconciler passes, Redis waits) at FABRIC_LOG_LEVEL; RQ's are set by work()."""
    logging.basicConfig(level=os.environ.get("FABRIC_LOG_LEVEL", "WARNING").upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")


def run(settings: Settings, *, burst: bool = False, parent_pid: int | None = None, name: str | None = None) -> int:
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
    db_url, rd_url, db_emb, _ = servers.resolve(settings.database_url, settings.redis_url, settings.data_dir)
    if db_emb:
        migrate_if_behind(db_url, embedding_dim=settings.embedding_dim)
    pool = make_pool(db_url, min_size=1, max_size=2)
    placer = Placer(settings, pool)
    jobs.install(placer)
    conn = fq.connect(rd_url)
    try:
        conn.ping()
    except REDIS_DOWN as exc:
        if burst:  # nothing to wait for: say so in one line
            pool.close()
            raise QueueError(f"cannot reach Redis: {exc}") from exc
        _wait_for_redis(conn, None)  # as after a Redis restart: back off until it answers
    queue = fq.make_queue(conn, settings.queue_name)
    if settings.metrics_port:
        metrics.serve(settings.metrics_port, pool=pool, redis_client=conn, org_label=settings.metrics_org_label)

    def do_reconcile() -> None:
        reconcile(pool, conn, queue, settings, grace=settings.reconcile_grace)

    try:
        while True:
            worker = FabricWorker([queue], connection=conn, name=name,
                                  worker_ttl=max(settings.reconcile_interval + 15, 20),
                                  maintenance_interval=settings.reconcile_interval)
            worker.fabric_reconcile = do_reconcile
            worker.parent_pid = parent_pid
            try:
                worker.run_reconcile()  # on (re)start: pick up what was lost while no worker ran
                worker.work(burst=burst, logging_level=os.environ.get("FABRIC_LOG_LEVEL", "WARNING").upper(),
                            with_scheduler=True)
            except REDIS_DOWN as exc:  # e.g. while registering, or in teardown after a lost job
                log.warning("Redis unreachable: %s", exc)
            if burst or worker.stopping or (parent_pid and not _alive(parent_pid)):
                return 0
            # RQ's loop gave up (Redis went away mid-job, or timed out): wait for Redis and start again.
            _wait_for_redis(conn, worker)
    finally:
        pool.close()


REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError, OSError)


def _wait_for_redis(conn: redis.Redis, worker: FabricWorker | None, *, longest: float = 30.0) -> None:
    """Back off (1, 2, 4 ... 30 s) until Redis answers, then clear the old registration."""
    delay = 1.0
    while True:
        try:
            conn.ping()
            break
        except REDIS_DOWN as exc:
            log.warning("waiting for Redis (%s); next try in %.0f s", exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, longest)
    if worker is None:
        return
    try:
        worker.register_death()  # so the next worker of the same name may register
    except REDIS_DOWN:
        pass


if __name__ == "__main__":
    sys.exit(main())
