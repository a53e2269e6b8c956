"""`AsyncFabric`: the library API for asyncio services (agent frameworks are async).

Native async over `psycopg_pool.AsyncConnectionPool` and `redis.asyncio`: the same methods,
arguments, types, errors and named SQL as `Fabric`, because both take their checks, parameters and
row mapping from `fabric.calls` and their SQL from `fabric/sql`. The query embedding runs on a thread
(`asyncio.to_thread`), so the event loop never waits on the model. `wait` / `drain` poll with a
bounded backoff (5 ms growing to 200 ms), as `Fabric` does.

The admin calls (`replay`, `revert`, `invalidate_source`, `stats`, `reconcile`) are rare and long:
they run `Fabric`'s implementation on a thread, over a second, small pool opened on first use."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, AsyncIterator, Generator, Iterable, Mapping, Sequence

import psycopg
import redis
import redis.asyncio as aredis
from pgvector.psycopg import register_vector_async
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from . import calls, db, metrics, servers
from . import queue as fq
from .api import Fabric, StoreHandle
from .config import Settings
from .errors import (
    NotFound, PgvectorMissing, PlacementTimeout, PolicyRefused, QueueError,
    TenantAccessDenied, ValidationError,
)
from .write.policy import REFUSED_KEY, apply_policy
from .sql import q
from .types import DecisionRecord, Memory, Placement, WriteReceipt, WriteRequest, as_uuid, check_org, write_fields

if TYPE_CHECKING:
    from .admin.replay import ReplayReport

log = logging.getLogger(__name__)

AConn = psycopg.AsyncConnection[Any]  # rows are dicts (the pool's row_factory)


async def _configure(conn: AConn) -> None:
    try:
        await register_vector_async(conn)
    except psycopg.ProgrammingError as exc:
        raise PgvectorMissing("the vector type is missing: run `fabric migrate` (CREATE EXTENSION vector)") from exc
    await conn.commit()


class _Connecting:
    """What `AsyncFabric.connect()` returns: await it, or use it as `async with`."""

    def __init__(self, kwargs: dict[str, Any]):
        self._kwargs = kwargs
        self._fabric: AsyncFabric | None = None

    def __await__(self) -> Generator[Any, None, AsyncFabric]:
        return AsyncFabric._connect(**self._kwargs).__await__()

    async def __aenter__(self) -> AsyncFabric:
        self._fabric = await AsyncFabric._connect(**self._kwargs)
        return self._fabric

    async def __aexit__(self, *exc: object) -> None:
        if self._fabric is not None:
            await self._fabric.close()


class AsyncFabric(StoreHandle):
    """An async connection to a fabric store: `async with AsyncFabric.connect() as fab: ...`."""

    def __init__(self, settings: Settings, *, database_url: str, redis_url: str, db_embedded: bool,
                 redis_embedded: bool, pool: AsyncConnectionPool[AConn], redis_client: aredis.Redis):
        super().__init__(settings, database_url=database_url, redis_url=redis_url, db_embedded=db_embedded,
                         redis_embedded=redis_embedded)
        self.pool = pool
        self.redis = redis_client
        # RQ speaks only the sync client: it builds the enqueue commands offline (fq.enqueue_commands)
        # and redis.asyncio sends them; the sync client connects only for a timeout's worker report.
        self.queue = fq.make_queue(redis.Redis.from_url(redis_url), settings.queue_name)
        self._sync: Fabric | None = None
        self.loop = asyncio.get_running_loop()  # the loop its pool lives on (FabricStore's sync calls use it)

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def connect(cls, database_url: str | None = None, redis_url: str | None = None, **settings: Any) -> _Connecting:
        """As `Fabric.connect` (embedded servers where no URL is given, migrations), for asyncio:
        `fab = await AsyncFabric.connect()` or `async with AsyncFabric.connect() as fab`."""
        return _Connecting(dict(database_url=database_url, redis_url=redis_url, **settings))

    @classmethod
    async def _connect(cls, database_url: str | None = None, redis_url: str | None = None,
                       **settings: Any) -> AsyncFabric:
        auto_migrate = bool(settings.pop("auto_migrate", True))
        s = Settings.from_env(database_url=database_url, redis_url=redis_url, **settings)
        # Starting the embedded servers and migrating are one-off and blocking: off the loop.
        db_url, rd_url, db_emb, rd_emb = await asyncio.to_thread(servers.resolve, s.database_url, s.redis_url,
                                                                 s.data_dir)
        if auto_migrate:
            await asyncio.to_thread(db.migrate_if_behind, db_url, embedding_dim=s.embedding_dim)
        pool = AsyncConnectionPool(db_url, connection_class=AConn, min_size=s.pool_min_size,
                                   max_size=s.pool_max_size, open=False,
                                   configure=_configure, kwargs={"row_factory": dict_row, "autocommit": False},
                                   name="fabric-async")
        try:
            await pool.open(wait=True, timeout=30)
        except Exception as exc:
            await pool.close()
            raise db.cannot_connect(exc) from exc
        fab = cls(s, database_url=db_url, redis_url=rd_url, db_embedded=db_emb, redis_embedded=rd_emb, pool=pool,
                  redis_client=aredis.Redis.from_url(rd_url, socket_connect_timeout=2, socket_timeout=10))
        try:
            await fab._check_dimension()
            run_worker = s.run_worker if s.run_worker is not None else rd_emb
            if run_worker:
                fab.start_worker()
        except BaseException:
            await fab.close()
            raise
        return fab

    async def _check_dimension(self) -> None:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'fabric.memories'::regclass "
                "AND attname = 'embedding'")
            row = await cur.fetchone()
        self._check_dimension_is(int(row["atttypmod"]) if row else None)

    async def __aenter__(self) -> AsyncFabric:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.stop_worker()
        if self._sync is not None:
            await asyncio.to_thread(self._sync.close)
        await self.pool.close()
        await self.redis.aclose()
        self.queue.connection.close()

    async def _embed_query(self, text: str):
        return (await asyncio.to_thread(self.embedder.embed, [text]))[0]

    @asynccontextmanager
    async def _conn(self, org: str | None = None) -> AsyncIterator[AConn]:
        """A pooled connection in a transaction, acting for `org` (row-level security), as `Fabric._conn`."""
        async with self.pool.connection() as conn:
            try:
                if org is not None:
                    await conn.execute(calls.SET_ORG_SQL, (org,))
                yield conn
            except psycopg.errors.InsufficientPrivilege as exc:
                raise TenantAccessDenied(org, str(exc).strip()) from exc

    async def _one(self, org: str | None, name: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
        async with self._conn(org) as conn:
            return await (await conn.execute(q(name), params)).fetchone()

    async def _all(self, org: str | None, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        async with self._conn(org) as conn:
            return await (await conn.execute(q(name), params)).fetchall()

    def _sync_fabric(self) -> Fabric:
        """Fabric over the same servers, for the admin calls (no worker of its own)."""
        if self._sync is None:
            s = self.settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 2})
            self._sync = Fabric(s, database_url=self.database_url, redis_url=self.redis_url,
                                db_embedded=self.db_embedded, redis_embedded=self.redis_embedded)
        return self._sync

    # ------------------------------------------------------------------ writes

    async def write(self, content: str, *, org: str = "default", subject: str | None = None,
                    relation: str | None = None, value: str | None = None, valid_from: datetime | None = None,
                    valid_to: datetime | None = None, source: str | None = None, kind: str | None = None,
                    durability: str | None = None, metadata: Mapping[str, Any] | None = None) -> WriteReceipt:
        """Accept a write durably and queue its placement. Returns at once."""
        req = await self.validate_write(dict(content=content, org=org, subject=subject, relation=relation, value=value,
                                       valid_from=valid_from, valid_to=valid_to, source=source, kind=kind,
                                       durability=durability, metadata=metadata))
        return (await self._accept([req]))[0]

    async def write_many(self, items: Iterable[Mapping[str, Any] | WriteRequest]) -> list[WriteReceipt]:
        """Accept many writes in one transaction and queue them in batched jobs (see `Fabric.write_many`)."""
        reqs = []
        for i, item in enumerate(calls.check_items(items)):
            try:
                reqs.append(await self.validate_write(write_fields(item)))
            except ValidationError as exc:
                raise calls.batch_item_error(i, exc) from exc
        return await self._accept(reqs) if reqs else []

    async def validate_write(self, fields: Mapping[str, Any]) -> WriteRequest:
        """As `Fabric.validate_write`: checked and gated as `write` would store it; nothing is written."""
        return await self._gate(calls.build_request(dict(fields), self.settings.max_content_chars))

    async def _gate(self, req: WriteRequest) -> WriteRequest:
        """The write policy's gate (fabric.write.policy), counting a refusal in Redis as `Fabric` does."""
        try:
            return apply_policy(req, self.settings)
        except PolicyRefused:
            try:
                await self.redis.hincrby(REFUSED_KEY + req.org, req.kind or "", 1)
            except (redis.RedisError, OSError) as exc:
                log.warning("refusal not counted", extra={"action": "refusal_count_failed", "org": req.org,
                                                          "kind": req.kind, "error": str(exc)})
            raise

    async def _accept(self, reqs: Sequence[WriteRequest]) -> list[WriteReceipt]:
        rows, jobs, orgs = calls.plan_accept(reqs, self.settings.embed_batch_size)
        try:
            # One transaction, one round trip (pipeline mode), each org's rows under that org (RLS).
            async with self._conn() as conn, conn.pipeline(), conn.cursor() as cur:
                for o in orgs:
                    await cur.execute(calls.SET_ORG_SQL, (o,))
                    if o not in self._known_orgs:
                        await cur.execute(q("ensure_org"), {"org": o})
                    await cur.executemany(q("insert_write"), [calls.write_params(wid, r, job_id)
                                                              for wid, r, job_id in rows if r.org == o])
        except TenantAccessDenied as exc:
            raise TenantAccessDenied(", ".join(orgs), exc.detail) from exc
        self._known_orgs.update(orgs)
        metrics.writes_accepted(len(rows))
        enqueued = True
        try:
            await self._enqueue(jobs)
        except QueueError as exc:
            # Accepted anyway: Postgres holds the write; the reconciler queues it when Redis is back.
            enqueued = False
            log.warning("write accepted but not queued", extra={"action": "enqueue_failed", "error": str(exc)})
        return calls.receipts(rows, enqueued)

    async def _enqueue(self, jobs: Sequence[tuple[str, str, list[str]]]) -> None:
        try:
            if not self.queue.redis_server_version:
                version = (await self.redis.info("server"))["redis_version"]
                self.queue.redis_server_version = tuple(  # type: ignore[assignment]  # RQ says 3 ints: it is
                    int(p) for p in version.split(".")[:3])
            commands = fq.enqueue_commands(self.queue, jobs, timeout=self.settings.job_timeout_for,
                                           retries=self.settings.job_retries)
            async with self.redis.pipeline(transaction=True) as pipe:
                for args, options in commands:
                    pipe.execute_command(*args, **options)
                await pipe.execute()
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            raise QueueError(f"cannot reach Redis to enqueue placement: {exc}") from exc

    async def wait(self, receipt_or_id: WriteReceipt | uuid.UUID | str, timeout: float = 30.0, *,
                   org: str | None = None) -> Placement:
        """Until the write is placed; return where it went."""
        wid, org = calls.wait_target(receipt_or_id, org)
        deadline = time.monotonic() + timeout
        for delay in calls.backoff(0.005, 0.2):
            placement = calls.placement_of(wid, org, await self._one(org, "write_status", {"org": org, "id": wid}))
            if placement is not None:
                return placement
            if time.monotonic() >= deadline:
                raise PlacementTimeout(f"write {wid} still pending after {timeout}s; {await self.worker_status()}")
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover - backoff() never ends

    async def drain(self, org: str | None = "default", timeout: float = 60.0) -> int:
        """Until nothing of `org` (None: of any org) is pending."""
        deadline = time.monotonic() + timeout
        for delay in calls.backoff(0.01, 0.25):
            row = await self._one(org, "pending_count", {"org": org})
            n = row["n"] if row else 0
            if n == 0:
                return 0
            if time.monotonic() >= deadline:
                raise PlacementTimeout(f"{n} write(s) of {org or 'all orgs'} still pending after {timeout}s; "
                                       f"{await self.worker_status()}")
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    async def worker_status(self) -> str:
        """As `Fabric.worker_status`: the workers listening on this queue, or why none can place a write."""
        return await asyncio.to_thread(Fabric.worker_status, self)  # type: ignore[arg-type]  # reads only self.queue

    async def writes_summary(self, receipts: Sequence[WriteReceipt]) -> dict[str, dict[str, int]]:
        """As `Fabric.writes_summary`."""
        if not receipts:
            return calls.writes_summary([])
        return calls.writes_summary(await self._all(None, "writes_summary", calls.writes_summary_params(receipts)))

    async def require_org(self, org: str) -> None:
        """As `Fabric.require_org`: `UnknownOrg` when nothing was ever written to `org`."""
        from .admin.orgs import UnknownOrg

        check_org(org)
        if await self._one(org, "org_exists", {"org": org}) is None:
            raise UnknownOrg(org)

    # ------------------------------------------------------------------ reads

    async def search(self, query: str, *, org: str = "default", k: int = 10, valid_at: datetime | None = None,
                     known_at: datetime | None = None, include_superseded: bool = False, mode: str = "hybrid",
                     context: int = 0, explain: bool = False) -> list[Memory]:
        """As `Fabric.search`: the k memories that best match `query` among those holding then."""
        return await self._search(query, org=org, k=k, valid_at=valid_at, known_at=known_at,
                                  include_superseded=include_superseded, mode=mode, context=context,
                                  explain=explain)

    async def _search(self, query: str, *, org: str, k: int, valid_at: datetime | None, known_at: datetime | None,
                      include_superseded: bool, mode: str, context: int, explain: bool,
                      subject_prefix: str | None = None) -> list[Memory]:
        from .read.search import abranch_context, asearch

        calls.check_search(query, org=org, k=k, mode=mode, context=context, explain=explain)
        current = valid_at is None and known_at is None   # the current state: its own index
        valid_at, known_at = calls.times(valid_at, known_at)
        vec = None if mode == "lexical" else await self._embed_query(query)
        async with self._conn(org) as conn:
            rows = await asearch(conn, org=org, text=query, vector=vec, mode=mode, k=k, valid_at=valid_at,
                                 known_at=known_at, include_superseded=include_superseded,
                                 ef_search=self.settings.ef_search, subject_prefix=subject_prefix,
                                 current=current)
            near = await abranch_context(conn, org=org, ids=[r["id"] for r in rows], n=context, valid_at=valid_at,
                                         known_at=known_at, include_superseded=include_superseded
                                         ) if context else {}
        return calls.search_results(rows, near, explain)

    async def current_value(self, subject: str, relation: str, *, org: str = "default",
                            valid_at: datetime | None = None, known_at: datetime | None = None) -> Memory | None:
        """The value of (subject, relation) valid at `valid_at` as known at `known_at`: no embeddings."""
        params = calls.current_value_params(subject, relation, org=org, valid_at=valid_at, known_at=known_at)
        row = await self._one(org, "current_value", params)
        return Memory.from_row(row) if row else None

    async def walk(self, root_id: uuid.UUID | str, *, org: str = "default", max_depth: int | None = None,
                   include_superseded: bool = False, valid_at: datetime | None = None,
                   known_at: datetime | None = None) -> list[Memory]:
        """The branch under `root_id`, walked through superseded nodes (left out unless asked)."""
        params = calls.walk_params(root_id, org=org, max_depth=max_depth, include_superseded=include_superseded,
                                   valid_at=valid_at, known_at=known_at)
        async with self._conn(org) as conn:
            await self._require_memory(conn, org, params["root"])
            rows = await (await conn.execute(q("walk"), params)).fetchall()
        return [Memory.from_row(r) for r in rows]

    async def history(self, memory_id: uuid.UUID | str, *, org: str = "default") -> list[Memory]:
        """The supersession chain through a memory, oldest first."""
        check_org(org)
        mid = as_uuid("memory_id", memory_id)
        async with self._conn(org) as conn:
            await self._require_memory(conn, org, mid)
            rows = await (await conn.execute(q("history"), {"org": org, "id": mid})).fetchall()
        return [Memory.from_row(r) for r in rows]

    async def belief_state(self, *, org: str = "default", valid_at: datetime | None = None,
                           known_at: datetime | None = None) -> list[Memory]:
        """Every memory the store held as valid at `valid_at`, as known at `known_at`."""
        check_org(org)
        valid_at, known_at = calls.times(valid_at, known_at)
        rows = await self._all(org, "belief_state", {"org": org, "valid_at": valid_at, "known_at": known_at})
        return [Memory.from_row(r) for r in rows]

    async def get(self, memory_id: uuid.UUID | str, *, org: str = "default") -> Memory:
        """One memory as currently believed."""
        mid = as_uuid("memory_id", memory_id)
        async with self._conn(org) as conn:
            await self._require_memory(conn, org, mid)
            row = await (await conn.execute(q("memory_current"), {"org": org, "id": mid})).fetchone()
        if row is None:
            raise NotFound("current memory (it was retracted)", mid, org)
        return Memory.from_row(row)

    @staticmethod
    async def _require_memory(conn: AConn, org: str, mid: uuid.UUID) -> None:
        if await (await conn.execute(q("memory_exists"), {"org": org, "id": mid})).fetchone() is None:
            raise NotFound("memory", mid, org)

    async def decisions(self, *, org: str = "default", since: datetime | None = None, kind: str | None = None,
                        action: str | None = None, limit: int = 100) -> list[DecisionRecord]:
        """The decision log, newest first."""
        params = calls.decisions_params(org=org, since=since, kind=kind, action=action, limit=limit)
        return [DecisionRecord.from_row(r) for r in await self._all(org, "list_decisions", params)]

    async def sample_decisions(self, *, org: str = "default", n: int = 20, since: datetime | None = None,
                               kind: str | None = None, action: str | None = None) -> list[DecisionRecord]:
        """A random sample of the decision log for review."""
        calls.check_sample(n)
        params = calls.decisions_params(org=org, since=since, kind=kind, action=action, limit=n)
        return [DecisionRecord.from_row(r) for r in await self._all(org, "sample_decisions", params)]

    # ------------------------------------------------------------------ corrections and admin (on a thread)

    async def retract(self, memory_id: uuid.UUID | str, *, org: str = "default", reason: str) -> uuid.UUID:
        """As `Fabric.retract` (the same transaction, run on a thread)."""
        return await asyncio.to_thread(self._sync_fabric().retract, memory_id, org=org, reason=reason)

    async def revert(self, decision_id: uuid.UUID | str, *, org: str | None = None,
                     reason: str = "reverted by admin") -> uuid.UUID:
        return await asyncio.to_thread(self._sync_fabric().revert, decision_id, org=org, reason=reason)

    async def replay(self, org: str, root_id: uuid.UUID | str, *, validator: str = "rule",
                     apply: bool = False) -> ReplayReport:
        return await asyncio.to_thread(self._sync_fabric().replay, org, root_id, validator=validator, apply=apply)

    async def invalidate_source(self, source: str, *, org: str = "default", at: datetime | None = None) -> int:
        return await asyncio.to_thread(self._sync_fabric().invalidate_source, source, org=org, at=at)

    async def stats(self, org: str | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self._sync_fabric().stats, org)

    async def reconcile(self, *, grace: float | None = None, limit: int = 10000) -> int:
        return await asyncio.to_thread(self._sync_fabric().reconcile, grace=grace, limit=limit)
