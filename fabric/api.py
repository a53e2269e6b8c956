"""`Fabric`: the library API services call."""

from __future__ import annotations

import atexit
import json
import logging
import os
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from functools import cached_property
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import psycopg
from pydantic import AliasChoices

from . import calls, db, servers
from .config import Settings
from .errors import (
    DimensionMismatch, NotFound, PlacementTimeout, QueueError, TenantAccessDenied,
    ValidationError,
)
from .sql import q
from .types import (
    DecisionRecord, Memory, Placement, WriteReceipt, WriteRequest, as_uuid, check_org, check_text, write_fields,
)
from .write import retract as retract_mod

if TYPE_CHECKING:
    from .db import Conn
    import redis
    from rq import Queue

    from .admin.replay import ReplayReport
    import numpy as np

    from .embed import Embedder

log = logging.getLogger(__name__)


class StoreHandle:
    """What `Fabric` and `AsyncFabric` both hold besides their connections: where the services are, the
    settings, the worker this process started for them, and the embedder (loaded on first use)."""

    def __init__(self, settings: Settings, *, database_url: str, redis_url: str, db_embedded: bool,
                 redis_embedded: bool):
        self.settings = settings
        self.database_url = database_url
        self.redis_url = redis_url
        self.db_embedded = db_embedded
        self.redis_embedded = redis_embedded
        self._embedder: Embedder | None = None
        self._known_orgs: set[str] = set()  # orgs this process has registered in fabric.orgs
        self._worker: subprocess.Popen | None = None
        self._closed = False

    def start_worker(self) -> None:
        """Run a placement worker subprocess for this store (the embedded default does this)."""
        if self._worker is not None and self._worker.poll() is None:
            return
        self._worker = spawn_worker(self.settings, self.database_url, self.redis_url)
        atexit.register(self.stop_worker)

    def stop_worker(self) -> None:
        proc, self._worker = self._worker, None
        terminate_worker(proc)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from .embed import make_embedder

            self._embedder = make_embedder(self.settings)
        return self._embedder

    def _check_dimension_is(self, dim: int | None) -> None:
        """`dim`: the database's embedding column's dimension (None before any table exists)."""
        if dim is not None and dim != self.settings.embedding_dim:
            raise DimensionMismatch(
                f"the database's fabric.memories.embedding is vector({dim}) but FABRIC_EMBEDDING_DIM is "
                f"{self.settings.embedding_dim}")


class Fabric(StoreHandle):
    """A connection to a fabric store. Create with `Fabric.connect()`; close with `close()` or `with`."""

    def __init__(self, settings: Settings, *, database_url: str, redis_url: str, db_embedded: bool,
                 redis_embedded: bool):
        super().__init__(settings, database_url=database_url, redis_url=redis_url, db_embedded=db_embedded,
                         redis_embedded=redis_embedded)
        self.pool = db.make_pool(database_url, min_size=settings.pool_min_size, max_size=settings.pool_max_size)

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def connect(cls, database_url: str | None = None, redis_url: str | None = None, **settings: Any) -> Fabric:
        """Connect (starting the embedded PostgreSQL / Redis where no URL is given) and migrate.

        Settings not given here come from the environment (see `fabric.config.Settings`)."""
        auto_migrate = bool(settings.pop("auto_migrate", True))
        s = Settings.from_env(database_url=database_url, redis_url=redis_url, **settings)
        db_url, rd_url, db_emb, rd_emb = servers.resolve(s.database_url, s.redis_url, s.data_dir)
        if auto_migrate:
            db.migrate_if_behind(db_url, embedding_dim=s.embedding_dim)
        fab = cls(s, database_url=db_url, redis_url=rd_url, db_embedded=db_emb, redis_embedded=rd_emb)
        try:
            fab._check_dimension()
            run_worker = s.run_worker if s.run_worker is not None else rd_emb
            if run_worker:
                fab.start_worker()
        except BaseException:
            fab.close()
            raise
        return fab

    def _check_dimension(self) -> None:
        with self.pool.connection() as conn:
            self._check_dimension_is(db.embedding_dim_of(conn))

    def __enter__(self) -> Fabric:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.stop_worker()
        self.pool.close()
        if "redis" in self.__dict__:  # opened only if something used it
            self.redis.close()

    # Redis, RQ and the embedder (numpy) load on first use: a read such as `current_value` needs none
    # of them, and importing them cost most of a short command's start.
    @cached_property
    def redis(self) -> redis.Redis:
        from . import queue as fq

        return fq.connect(self.redis_url)

    @cached_property
    def queue(self) -> Queue:
        from . import queue as fq

        return fq.make_queue(self.redis, self.settings.queue_name)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed with the model, loading it on first use (revert and replay need it only sometimes)."""
        return self.embedder.embed(texts)

    @contextmanager
    def _conn(self, org: str | None = None) -> Iterator[Conn]:
        """A pooled connection in a transaction, with the tenant set for row-level security
        (`fabric.org`, local to the transaction: migration 0002). A database role that may not act
        for `org` sees none of its rows, and a write it attempts raises `TenantAccessDenied`."""
        with self.pool.connection() as conn:
            try:
                if org is not None:
                    _set_org(conn, org)
                yield conn
            except psycopg.errors.InsufficientPrivilege as exc:
                raise TenantAccessDenied(org, str(exc).strip()) from exc

    # ------------------------------------------------------------------ the local worker

    # ------------------------------------------------------------------ writes

    def write(self, content: str, *, org: str = "default", subject: str | None = None,
              relation: str | None = None, value: str | None = None, valid_from: datetime | None = None,
              valid_to: datetime | None = None, source: str | None = None, kind: str | None = None,
              durability: str | None = None, metadata: Mapping[str, Any] | None = None) -> WriteReceipt:
        """Accept a write durably and queue its placement. Returns at once."""
        req = self.validate_write(dict(content=content, org=org, subject=subject, relation=relation, value=value,
                                 valid_from=valid_from, valid_to=valid_to, source=source, kind=kind,
                                 durability=durability, metadata=metadata))
        return self._accept([req])[0]

    def write_many(self, items: Iterable[Mapping[str, Any] | WriteRequest]) -> list[WriteReceipt]:
        """Accept many writes in one transaction and queue them in batched jobs.

        Every item is validated first; one bad item refuses the batch, naming it (`items[3].content: ...`)."""
        reqs = []
        for i, item in enumerate(calls.check_items(items)):
            try:
                reqs.append(self.validate_write(write_fields(item)))
            except ValidationError as exc:
                raise calls.batch_item_error(i, exc) from exc
        return self._accept(reqs) if reqs else []

    def validate_write(self, fields: Mapping[str, Any]) -> WriteRequest:
        """A write's fields, checked and passed through the write policy, as `write` would store them;
        nothing is written (a refusal is counted, as on `write`). Raises ValidationError / PolicyRefused."""
        from .write.policy import check_write

        req = calls.build_request(dict(fields), self.settings.max_content_chars)
        return check_write(req, self.settings, self.redis)

    def _accept(self, reqs: Sequence[WriteRequest]) -> list[WriteReceipt]:
        from . import metrics  # prometheus_client, redis and rq: loaded by the first write, not by reads
        from . import queue as fq

        rows, jobs, orgs = calls.plan_accept(reqs, self.settings.embed_batch_size)

        def insert() -> None:
            # One transaction, one round trip (pipeline mode); each org's rows are written with that
            # org set on the connection (row-level security); a known org is not registered again.
            with self._conn() as conn, conn.pipeline(), conn.cursor() as cur:
                for o in orgs:
                    _set_org(cur, o)
                    if o not in self._known_orgs:
                        cur.execute(q("ensure_org"), {"org": o})
                    cur.executemany(q("insert_write"), [calls.write_params(wid, r, job_id)
                                                        for wid, r, job_id in rows if r.org == o])

        try:
            # The write ids are fixed above and the insert skips ids it already holds: safe to retry.
            db.run_guarded(self.pool, insert, retry=True)
        except TenantAccessDenied as exc:  # raised by _conn when the pipeline syncs: name the org(s)
            raise TenantAccessDenied(", ".join(orgs), exc.detail) from exc
        self._known_orgs.update(orgs)
        metrics.writes_accepted(len(rows))
        enqueued = True
        try:
            fq.enqueue_jobs(self.queue, jobs, timeout=self.settings.job_timeout_for, retries=self.settings.job_retries)
        except QueueError as exc:
            # Accepted anyway: Postgres holds the write; the reconciler queues it when Redis is back.
            enqueued = False
            log.warning("write accepted but not queued", extra={"action": "enqueue_failed", "error": str(exc)})
        return calls.receipts(rows, enqueued)

    @db.guarded(retry=True)
    def wait(self, receipt_or_id: WriteReceipt | uuid.UUID | str, timeout: float = 30.0, *,
             org: str | None = None) -> Placement:
        """Block until the write is placed; return where it went."""
        wid, org = calls.wait_target(receipt_or_id, org)
        deadline = time.monotonic() + timeout
        for delay in calls.backoff(0.005, 0.2):
            with self._conn(org) as conn:
                row = conn.execute(q("write_status"), {"org": org, "id": wid}).fetchone()
            placement = calls.placement_of(wid, org, row)
            if placement is not None:
                return placement
            if time.monotonic() >= deadline:
                raise PlacementTimeout(f"write {wid} still pending after {timeout}s; {self.worker_status()}")
            time.sleep(delay)
        raise AssertionError("backoff() never ends")

    @db.guarded(retry=True)
    def drain(self, org: str | None = "default", timeout: float = 60.0) -> int:
        """Block until nothing of `org` (None: of any org) is pending. Returns how many were parked meanwhile."""
        if org is not None:
            check_org(org)
        deadline = time.monotonic() + timeout
        for delay in calls.backoff(0.01, 0.25):
            with self._conn(org) as conn:
                n = db.one(conn.execute(q("pending_count"), {"org": org}))["n"]
            if n == 0:
                return 0
            if time.monotonic() >= deadline:
                raise PlacementTimeout(f"{n} write(s) of {org or 'all orgs'} still pending after {timeout}s; "
                                       f"{self.worker_status()}")
            time.sleep(delay)
        raise AssertionError("backoff() never ends")

    def worker_status(self) -> str:
        """Who could place a pending write: the workers listening on this queue, or why none can."""
        import redis

        from . import queue as fq

        workers = fq.listening_workers(self.queue)
        if not workers:
            try:
                depth = len(self.queue)
            except (redis.ConnectionError, OSError):
                return "Redis is unreachable, so no worker can place it; it is kept in Postgres until then"
            return (f"no worker is listening on queue {self.queue.name!r} ({depth} job(s) queued): "
                    f"start one with `fabric worker`")
        return f"{len(workers)} worker(s) listening on queue {self.queue.name!r}; they may be busy"

    @db.guarded(retry=True)
    def reconcile(self, *, grace: float | None = None, limit: int = 10000) -> int:
        """Queue again every pending write whose job is lost. Returns how many writes were queued."""
        from .write.reconcile import reconcile

        return reconcile(self.pool, self.redis, self.queue, self.settings,
                         grace=self.settings.reconcile_grace if grace is None else grace, limit=limit)

    # ------------------------------------------------------------------ reads

    @db.guarded(retry=True)
    def search(self, query: str, *, org: str = "default", k: int = 10, valid_at: datetime | None = None,
               known_at: datetime | None = None, include_superseded: bool = False, mode: str = "hybrid",
               context: int = 0, explain: bool = False) -> list[Memory]:
        """The k memories that best match `query` among those holding at (valid_at, known_at).

        mode: "hybrid" (the default: full text and vector similarity fused by reciprocal rank, in one
        SQL statement; memories containing the names the query capitalises come first, so the score's
        integer part counts the named terms matched), "vector" (score = cosine similarity) or
        "lexical" (full text only). context=N: with each hit, up to N neighbours on its branch (parent
        chain, then subtree, nearest first) in `Memory.context`, walked through superseded nodes and
        leaving them out unless `include_superseded`. explain: `Memory.ranks` holds each leg's rank,
        {"vector": r, "lexical": r} (None where that leg did not return the memory), and in hybrid mode
        "attribute": 1 when the memory states the attribute the question asks about (fabric/read/intent.py:
        ranked after the named terms, before the fused score), else 0."""
        return self._search(query, org=org, k=k, valid_at=valid_at, known_at=known_at,
                            include_superseded=include_superseded, mode=mode, context=context, explain=explain)

    def _search(self, query: str, *, org: str, k: int, valid_at: datetime | None, known_at: datetime | None,
                include_superseded: bool, mode: str, context: int, explain: bool,
                subject_prefix: str | None = None) -> list[Memory]:
        """search(), optionally within a namespace (fabric_api.under): the LangGraph store's search."""
        from .read.search import branch_context, search as run_search

        calls.check_search(query, org=org, k=k, mode=mode, context=context, explain=explain)
        current = valid_at is None and known_at is None   # the current state: its own index
        valid_at, known_at = calls.times(valid_at, known_at)
        vec = None if mode == "lexical" else self.embedder.embed([query])[0]
        with self._conn(org) as conn:
            rows = run_search(conn, org=org, text=query, vector=vec, mode=mode, k=k, valid_at=valid_at,
                              known_at=known_at, include_superseded=include_superseded,
                              ef_search=self.settings.ef_search, subject_prefix=subject_prefix,
                              current=current)
            near = branch_context(conn, org=org, ids=[r["id"] for r in rows], n=context, valid_at=valid_at,
                                  known_at=known_at, include_superseded=include_superseded) if context else {}
        return calls.search_results(rows, near, explain)

    @db.guarded(retry=True)
    def current_value(self, subject: str, relation: str, *, org: str = "default",
                      valid_at: datetime | None = None, known_at: datetime | None = None) -> Memory | None:
        """The value of (subject, relation) valid at `valid_at` as known at `known_at`: no embeddings."""
        params = calls.current_value_params(subject, relation, org=org, valid_at=valid_at, known_at=known_at)
        with self._conn(org) as conn:
            row = conn.execute(q("current_value"), params).fetchone()
        return Memory.from_row(row) if row else None

    @db.guarded(retry=True)
    def walk(self, root_id: uuid.UUID | str, *, org: str = "default", max_depth: int | None = None,
             include_superseded: bool = False, valid_at: datetime | None = None,
             known_at: datetime | None = None) -> list[Memory]:
        """The branch under `root_id`, walked through superseded nodes (which are left out unless asked)."""
        params = calls.walk_params(root_id, org=org, max_depth=max_depth, include_superseded=include_superseded,
                                   valid_at=valid_at, known_at=known_at)
        with self._conn(org) as conn:
            self._require_memory(conn, org, params["root"])
            rows = conn.execute(q("walk"), params).fetchall()
        return [Memory.from_row(r) for r in rows]

    @db.guarded(retry=True)
    def history(self, memory_id: uuid.UUID | str, *, org: str = "default") -> list[Memory]:
        """The supersession chain through a memory, oldest first."""
        check_org(org)
        mid = as_uuid("memory_id", memory_id)
        with self._conn(org) as conn:
            self._require_memory(conn, org, mid)
            rows = conn.execute(q("history"), {"org": org, "id": mid}).fetchall()
        return [Memory.from_row(r) for r in rows]

    @db.guarded(retry=True)
    def belief_state(self, *, org: str = "default", valid_at: datetime | None = None,
                     known_at: datetime | None = None) -> list[Memory]:
        """Every memory the store held as valid at `valid_at`, as known at `known_at`."""
        check_org(org)
        valid_at, known_at = calls.times(valid_at, known_at)
        with self._conn(org) as conn:
            rows = conn.execute(q("belief_state"), {"org": org, "valid_at": valid_at, "known_at": known_at}
                                ).fetchall()
        return [Memory.from_row(r) for r in rows]

    @db.guarded(retry=True)
    def get(self, memory_id: uuid.UUID | str, *, org: str = "default") -> Memory:
        """One memory as currently believed."""
        check_org(org)
        mid = as_uuid("memory_id", memory_id)
        with self._conn(org) as conn:
            self._require_memory(conn, org, mid)
            row = conn.execute(q("memory_current"), {"org": org, "id": mid}).fetchone()
        if row is None:
            raise NotFound("current memory (it was retracted)", mid, org)
        return Memory.from_row(row)

    @staticmethod
    def _require_memory(conn: Conn, org: str, mid: uuid.UUID) -> None:
        if conn.execute(q("memory_exists"), {"org": org, "id": mid}).fetchone() is None:
            raise NotFound("memory", mid, org)

    # ------------------------------------------------------------------ corrections

    @db.guarded(retry=False)
    def retract(self, memory_id: uuid.UUID | str, *, org: str = "default", reason: str) -> uuid.UUID:
        """The store learns a memory was wrong: its transaction time ends now, and what it superseded
        is current again. Queries with `known_at` before now still see the old belief."""
        check_org(org)
        calls.check_reason(reason)
        mid = as_uuid("memory_id", memory_id)
        with self._conn(org) as conn:
            return retract_mod.retract(conn, org, mid, reason)

    @db.guarded(retry=False)
    def revert(self, decision_id: uuid.UUID | str, *, org: str | None = None,
               reason: str = "reverted by admin") -> uuid.UUID:
        """Undo a placement as a new logged event (transaction-time history keeps both)."""
        from .write.revert import revert

        did = as_uuid("decision_id", decision_id)
        if org is not None:
            check_org(org)
        check_text("reason", reason)
        with self._conn(org) as conn:
            return revert(conn, self._embed, did, org=org, reason=reason)

    @db.guarded(retry=True)
    def decisions(self, *, org: str = "default", since: datetime | None = None, kind: str | None = None,
                  action: str | None = None, limit: int = 100) -> list[DecisionRecord]:
        """The decision log, newest first."""
        params = calls.decisions_params(org=org, since=since, kind=kind, action=action, limit=limit)
        with self._conn(org) as conn:
            rows = conn.execute(q("list_decisions"), params).fetchall()
        return [DecisionRecord.from_row(r) for r in rows]

    # ------------------------------------------------------------------ admin (fabric/admin/)

    @db.guarded(retry=False)
    def replay(self, org: str, root_id: uuid.UUID | str, *, validator: str = "rule",
               apply: bool = False) -> ReplayReport:
        """Re-run placement over the subtree under `root_id` with `validator` ('rule' | 'llm'), in the
        writes' original order. Dry run by default (nothing written); `apply=True` commits the new
        placements as new versions in one transaction (`known_at` before it still sees the old ones)."""
        from .admin.replay import replay

        check_org(org)
        with self._conn(org) as conn:
            return replay(conn, self.settings, self._embed, org, root_id, validator=validator, apply=apply)

    @db.guarded(retry=False)
    def invalidate_source(self, source: str, *, org: str = "default", at: datetime | None = None) -> int:
        """The system `source` changed: end the valid time at `at` (default now) of every live memory it
        owns, as new versions, logged as one 'invalidate_source' decision. Returns how many ended."""
        from .admin.orgs import require_org
        from .admin.sources import invalidate_source

        with self._conn(org) as conn:
            require_org(conn, org)
            _, ids = invalidate_source(conn, org, source, at)
        return len(ids)

    @db.guarded(retry=True)
    def require_org(self, org: str) -> None:
        """Raise `UnknownOrg` (a NotFound) when nothing was ever written to `org`: an admin command's
        typo must not read as "nothing there"."""
        from .admin.orgs import require_org

        with self._conn(org) as conn:
            require_org(conn, org)

    @db.guarded(retry=True)
    def writes_summary(self, receipts: Sequence[WriteReceipt]) -> dict[str, dict[str, int]]:
        """Of these writes: how many are in each status, and how many placed by each decision kind."""
        if not receipts:
            return calls.writes_summary([])
        with self._conn() as conn:
            rows = conn.execute(q("writes_summary"), calls.writes_summary_params(receipts)).fetchall()
        return calls.writes_summary(rows)

    @db.guarded(retry=True)
    def stats(self, org: str | None = None) -> dict[str, Any]:
        """Per org: memories live/superseded/retracted, writes by status, decisions by action:kind,
        policy refusals by kind."""
        from .admin.orgs import UnknownOrg
        from .admin.stats import stats

        if org is not None:
            check_org(org)
        with self._conn(org) as conn:
            out = stats(conn, self.redis, org)
        if org is not None and not out:
            raise UnknownOrg(org)
        return out

    @db.guarded(retry=True)
    def sample_decisions(self, *, org: str = "default", n: int = 20, since: datetime | None = None,
                         kind: str | None = None, action: str | None = None) -> list[DecisionRecord]:
        """A random sample of the decision log for review (e.g. kind='contradiction_fork': the
        model-driven invalidations seed 001 says to sample)."""
        calls.check_sample(n)
        params = calls.decisions_params(org=org, since=since, kind=kind, action=action, limit=n)
        with self._conn(org) as conn:
            rows = conn.execute(q("sample_decisions"), params).fetchall()
        return [DecisionRecord.from_row(r) for r in rows]


def spawn_worker(settings: Settings, database_url: str, redis_url: str) -> subprocess.Popen:
    """A placement worker subprocess with these settings; it exits when this process does."""
    env = dict(os.environ)
    env.update(DATABASE_URL=database_url, REDIS_URL=redis_url)
    for name, value in settings.model_dump(mode="json", exclude={"database_url", "redis_url"},
                                           exclude_unset=True).items():
        # Strings (paths included) as they are: in JSON quotes a path would name another file.
        env[_env_name(name)] = value if isinstance(value, str) else json.dumps(value)
    cmd = [sys.executable, "-m", "workers.run", "--parent-pid", str(os.getpid())]
    return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)


def _env_name(field: str) -> str:
    """The variable a setting is read from: its own name (OPENAI_BASE_URL) where it has one, which the
    environment would otherwise override, else FABRIC_<NAME>."""
    alias = Settings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices):
        return str(alias.choices[-1])
    return f"FABRIC_{field.upper()}"


def terminate_worker(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _set_org(conn: Conn | psycopg.Cursor, org: str) -> None:
    """Act for `org` until the transaction ends (row-level security keys on it)."""
    conn.execute(calls.SET_ORG_SQL, (org,))
