"""`FabricStore`: a LangGraph `BaseStore` on fabric, which knows about time.

Install with `pip install "fabric-memory[langgraph]"`. One org per store. The mapping:

- an item is a keyed memory: subject = the namespace's labels joined by '.' (LangGraph forbids '.'
  in labels, so the join is lossless and 'alice' never matches 'alicex'), relation = the key, value =
  a digest of the JSON value (exact: two values differing only in case or punctuation differ). The
  JSON value is kept whole in the memory's metadata; its text (the `index` fields, default every
  string in it) is the memory's content, which is embedded and searched.
- `put` writes and waits for placement (read-your-writes, as `InMemoryStore`): a new value for a
  key is a contradiction that supersedes the old one, which stays in the history.
- `get` is the key's current value (`fabric_api.current_value`'s rule); `search` is fabric's hybrid
  search within the namespace prefix (`fabric_api.under`), or the newest items there without a
  query; `filter` applies to top-level value keys ($eq $ne $gt $gte $lt $lte, or a plain value).
- `delete` ends the key's valid time now (logged as a 'delete' decision): `as_of` a time before it
  still answers with the value. (`Fabric.retract` is the other tool: "we were wrong", which would
  bring the previous value back.)
- `as_of(valid_at=..., known_at=...)`: a read-only view answering get / search / list_namespaces as
  of then; no other BaseStore can.
- TTL is not supported (`supports_ttl = False`: `put(..., ttl=...)` raises NotImplementedError):
  fabric could end a value's valid time after ttl minutes, but not refresh it on every read as
  LangGraph's TTL does.

As `InMemoryStore` does, a batch's reads see the store as it was before the batch, then its puts
apply, the last one per key winning. `batch` runs on a `Fabric`, `abatch` natively on an
`AsyncFabric`; give either or both."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable, Mapping, Sequence, cast

from langgraph.store.base import (
    BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result, SearchItem, SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from .. import calls
from ..aio import AsyncFabric
from ..api import Fabric
from ..errors import FabricError, PlacementParked, PlacementTimeout, ValidationError
from ..sql import q
from ..types import Memory, check_org
from ..write import ledger

SEPARATOR = "."
SOURCE = "langgraph"
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
SEARCH_POOL = 1000  # with a filter, search ranks this many candidates before filtering (fabric's k limit)


class ReadOnlyView(FabricError):
    """A write through `FabricStore.as_of(...)`: the past is read-only."""


# ---------------------------------------------------------------- the mapping (pure)

def subject_of(namespace: Sequence[str]) -> str:
    """The memory's subject (fabric trims a subject's outer whitespace; so do we, to find it again)."""
    return SEPARATOR.join(namespace).strip()


def relation_of(key: str) -> str:
    """The memory's relation: fabric lower-cases and trims relations, so store keys compare that way."""
    return str(key).strip().lower()


def namespace_of(subject: str) -> tuple[str, ...]:
    return tuple(subject.split(SEPARATOR))


def value_digest(value: Mapping[str, Any]) -> str:
    """The memory's `value`: equal for equal JSON, different otherwise (the validator compares
    values case- and punctuation-insensitively, so the JSON itself would merge 'A' and 'a')."""
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:32]


def text_of(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """What is embedded: the texts at `fields` (LangGraph paths), or every string in the value."""
    if fields is None:
        texts = list(_strings(value))
    else:
        texts = [t for f in fields for t in get_text_at_path(value, tokenize_path(f))]
    text = "\n".join(t for t in texts if t.strip())
    return text or json.dumps(value, sort_keys=True, ensure_ascii=False)


def _strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, Mapping):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Does a value pass a search filter: every top-level key equal to the given value, or passing
    its operators ($eq $ne $gt $gte $lt $lte; the order ones compare numbers, as InMemoryStore)."""
    for key, cond in (filter or {}).items():
        have = value.get(key)
        if isinstance(cond, Mapping) and cond and all(k.startswith("$") for k in cond):
            if not all(_apply(op, have, want) for op, want in cond.items()):
                return False
        elif have != cond:
            return False
    return True


def _apply(op: str, have: Any, want: Any) -> bool:
    if op not in OPERATORS:
        raise ValidationError("filter", f"unknown operator {op!r}; use one of {', '.join(OPERATORS)}")
    if op == "$eq":
        return have == want
    if op == "$ne":
        return have != want
    try:
        a, b = float(have), float(want)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric value passes no order comparison
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def namespace_matches(cond: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A list_namespaces condition: a prefix or suffix path, '*' matching any one label."""
    path = tuple(cond.path)
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if cond.match_type == "prefix" else namespace[len(namespace) - len(path):]
    if cond.match_type not in ("prefix", "suffix"):
        raise ValidationError("match_type", f"must be 'prefix' or 'suffix', not {cond.match_type!r}")
    return all(p == "*" or p == label for p, label in zip(path, part))


def list_namespaces(subjects: Iterable[str], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    spaces = [namespace_of(s) for s in subjects]
    spaces = [ns for ns in spaces if all(namespace_matches(c, ns) for c in op.match_conditions or ())]
    if op.max_depth is not None:
        spaces = list({ns[:op.max_depth] for ns in spaces})
    return sorted(spaces)[op.offset:op.offset + op.limit]


def item_of(row: Mapping[str, Any], score: float | None = None, searched: bool = False) -> Item:
    stored = row["metadata"]["store"]
    kw = dict(namespace=tuple(stored["namespace"]), key=stored["key"], value=stored["value"],
              created_at=row["first_recorded_at"], updated_at=row["recorded_at"])
    return SearchItem(**kw, score=score) if searched else Item(**kw)


@dataclass
class _Batch:
    """A batch split the way InMemoryStore applies it: reads first, then puts (last per key wins)."""

    results: list[Result]
    gets: list[tuple[int, GetOp]] = field(default_factory=list)
    searches: list[tuple[int, SearchOp]] = field(default_factory=list)
    lists: list[tuple[int, ListNamespacesOp]] = field(default_factory=list)
    puts: dict[tuple[tuple[str, ...], str], PutOp] = field(default_factory=dict)

    @classmethod
    def split(cls, ops: Iterable[Op]) -> _Batch:
        ops = list(ops)
        b = cls(results=[None] * len(ops))
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                b.gets.append((i, op))
            elif isinstance(op, SearchOp):
                b.searches.append((i, op))
            elif isinstance(op, ListNamespacesOp):
                b.lists.append((i, op))
            elif isinstance(op, PutOp):
                b.puts[(tuple(op.namespace), str(op.key))] = op
            else:
                raise ValidationError("ops", f"unknown operation {type(op).__name__}")
        return b


# ---------------------------------------------------------------- the store

class FabricStore(BaseStore):
    """A LangGraph store on fabric: `FabricStore(fab, org="agent-memory")` (sync graphs), or
    `FabricStore(afabric=afab, org=...)` (async graphs; a real `abatch`), or both."""

    supports_ttl = False
    __slots__ = ("fabric", "afabric", "org", "index_fields", "placement_timeout", "_valid_at", "_known_at")

    def __init__(self, fabric: Fabric | None = None, *, afabric: AsyncFabric | None = None, org: str = "default",
                 index: Sequence[str] | None = None, placement_timeout: float = 60.0):
        if fabric is None and afabric is None:
            raise ValidationError("fabric", "give a Fabric, an AsyncFabric (afabric=...), or both")
        self.fabric, self.afabric = fabric, afabric
        self.org = check_org(org)
        self.index_fields = list(index) if index is not None else None
        self.placement_timeout = placement_timeout
        self._valid_at: datetime | None = None
        self._known_at: datetime | None = None

    def as_of(self, *, valid_at: datetime | None = None, known_at: datetime | None = None) -> FabricStore:
        """A read-only view: get / search / list_namespaces answer what was true at `valid_at` as the
        store knew it at `known_at` (each default now)."""
        view = FabricStore(self.fabric, afabric=self.afabric, org=self.org, index=self.index_fields,
                           placement_timeout=self.placement_timeout)
        view._valid_at, view._known_at = calls.times(valid_at, known_at)
        return view

    @property
    def read_only(self) -> bool:
        return self._valid_at is not None

    # ------------------------------------------------------------ parameters (pure)

    def _times(self) -> tuple[datetime, datetime]:
        if self._valid_at is not None and self._known_at is not None:  # a read-only view as of a time
            return self._valid_at, self._known_at
        return calls.times(None, None)

    def _items_query(self, *, prefix: tuple[str, ...] | None = None,
                     keys: Sequence[tuple[tuple[str, ...], str]] | None = None) -> tuple[str, dict[str, Any]]:
        """The items under a namespace prefix (store_items), or with these keys (store_get)."""
        valid_at, known_at = self._times()
        params = {"org": self.org, "valid_at": valid_at, "known_at": known_at}
        if keys is not None:
            return "store_get", {**params, "subjects": [subject_of(ns) for ns, _ in keys],
                                 "relations": [relation_of(k) for _, k in keys]}
        return "store_items", {**params, "prefix": subject_of(prefix) if prefix else None}

    def _write_items(self, puts: Iterable[PutOp]) -> list[dict[str, Any]]:
        items = []
        for op in puts:
            if not isinstance(op.value, Mapping):
                raise ValidationError("value", f"must be a dict, got {type(op.value).__name__}")
            if op.ttl is not None:
                raise NotImplementedError("TTL is not supported by FabricStore (supports_ttl = False)")
            fields = self.index_fields if op.index is None else (None if op.index is False else list(op.index))
            value = dict(op.value)
            items.append({"content": text_of(value, fields), "org": self.org, "subject": subject_of(op.namespace),
                          "relation": str(op.key), "value": value_digest(value), "source": SOURCE,
                          "metadata": {"store": {"namespace": list(op.namespace), "key": str(op.key),
                                                 "value": value}}})
        return items

    def _check_writable(self, b: _Batch) -> None:
        if b.puts and self.read_only:
            raise ReadOnlyView("this FabricStore view is as of a past time: it answers reads only")

    @staticmethod
    def _search_k(op: SearchOp) -> int:
        return SEARCH_POOL if op.filter else min(SEARCH_POOL, op.offset + op.limit)

    @staticmethod
    def _page(op: SearchOp, rows: Iterable[Mapping[str, Any]],
              scores: Mapping[uuid.UUID, float | None] | None = None) -> list[SearchItem]:
        kept = [r for r in rows if matches(r["metadata"]["store"]["value"], op.filter)]
        return [cast(SearchItem, item_of(r, (scores or {}).get(r["id"]), searched=True))
                for r in kept[op.offset:op.offset + op.limit]]

    @staticmethod
    def _keyed_hits(memories: Sequence[Memory]) -> list[Memory]:
        return [m for m in memories if m.relation is not None and "store" in m.metadata]

    # ------------------------------------------------------------ sync

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.fabric is None:
            return self._batch_through_loop(ops)
        b = _Batch.split(ops)
        self._check_writable(b)
        fab = self.fabric
        if b.gets:
            keys = [(tuple(op.namespace), op.key) for _, op in b.gets]
            found = {(r["subject"], r["relation"]): r for r in self._rows(fab, *self._items_query(keys=keys))}
            for i, op in b.gets:
                row = found.get((subject_of(op.namespace), relation_of(op.key)))
                b.results[i] = item_of(row) if row else None
        for i, search in b.searches:
            b.results[i] = self._search(fab, search)
        if b.lists:
            valid_at, known_at = self._times()
            with fab._conn(self.org) as conn:
                subjects = [r["namespace"] for r in conn.execute(q("store_namespaces"), {
                    "org": self.org, "prefix": None, "valid_at": valid_at, "known_at": known_at}).fetchall()]
            for i, listing in b.lists:
                b.results[i] = list_namespaces(subjects, listing)
        if b.puts:
            self._apply_puts(fab, b.puts)
        return b.results

    def _rows(self, fab: Fabric, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        with fab._conn(self.org) as conn:
            rows = conn.execute(q(query), params).fetchall()
        return sorted(rows, key=lambda r: r["recorded_at"], reverse=True)

    def _search(self, fab: Fabric, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if not op.query:
            return self._page(op, self._rows(fab, *self._items_query(prefix=prefix)))
        valid_at, known_at = self._times()
        hits = self._keyed_hits(fab._search(op.query, org=self.org, k=self._search_k(op), valid_at=valid_at,
                                            known_at=known_at, include_superseded=False, mode="hybrid",
                                            context=0, explain=False,
                                            subject_prefix=subject_of(prefix) if prefix else None))
        return self._ranked(op, hits, self._rows(fab, *self._items_query(keys=self._hit_keys(hits))))

    @staticmethod
    def _hit_keys(hits: Sequence[Memory]) -> list[tuple[tuple[str, ...], str]]:
        return [(tuple(m.metadata["store"]["namespace"]), m.metadata["store"]["key"]) for m in hits]

    def _ranked(self, op: SearchOp, hits: Sequence[Memory], rows: Sequence[Mapping[str, Any]]) -> list[SearchItem]:
        """Hits in search order, as items (the current memory of each key, once)."""
        by_key = {(r["subject"], r["relation"]): r for r in rows}
        ordered, seen = [], set()
        for m in hits:
            row = by_key.get((m.subject, m.relation))
            if row is not None and row["id"] == m.id and m.id not in seen:
                seen.add(m.id)
                ordered.append(row)
        return self._page(op, ordered, {m.id: m.score for m in hits})

    def _apply_puts(self, fab: Fabric, puts: Mapping[tuple[tuple[str, ...], str], PutOp]) -> None:
        deletes = [(ns, key) for (ns, key), op in puts.items() if op.value is None]
        writes = self._write_items(op for op in puts.values() if op.value is not None)
        if deletes:
            with fab._conn(self.org) as conn, conn.transaction():
                now = ledger.lock_org(conn, self.org)
                for ns, key in deletes:
                    conn.execute(q("store_delete"), self._delete_params(ns, key, now))
        if writes:
            ids = [r.id for r in fab.write_many(writes)]
            deadline = time.monotonic() + self.placement_timeout
            for delay in calls.backoff(0.005, 0.2):
                with fab._conn(self.org) as conn:
                    states = conn.execute(q("store_write_states"), {"org": self.org, "ids": ids}).fetchall()
                if self._placed(states, deadline):
                    return
                time.sleep(delay)

    def _delete_params(self, namespace: tuple[str, ...], key: str, now: datetime) -> dict[str, Any]:
        return {"org": self.org, "subject": subject_of(namespace), "relation": relation_of(key), "now": now,
                "decision_id": uuid.uuid4(), "reason": f"deleted through the LangGraph store: {namespace}/{key}"}

    def _placed(self, states: Sequence[Mapping[str, Any]], deadline: float) -> bool:
        """True once every write is placed; raises if one was parked or time ran out."""
        for s in states:
            if s["status"] == "parked":
                raise PlacementParked(s["id"], s["error"])
        pending = [s["id"] for s in states if s["status"] == "pending"]
        if pending and time.monotonic() >= deadline:
            raise PlacementTimeout(f"{len(pending)} store write(s) still pending after {self.placement_timeout}s "
                                   f"(is a fabric worker running?)")
        return not pending

    def _batch_through_loop(self, ops: Iterable[Op]) -> list[Result]:
        """The sync API over an AsyncFabric: run abatch on the loop the AsyncFabric lives on."""
        assert self.afabric is not None  # batch() comes here only without a Fabric
        loop = self.afabric.loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None:
            raise FabricError("FabricStore without a Fabric: call the async methods (abatch, aget, ...) from "
                              "async code, or give FabricStore a Fabric as well")
        if not loop.is_running():
            raise FabricError("FabricStore without a Fabric: its AsyncFabric's event loop is not running; "
                              "give FabricStore a Fabric for sync use")
        return asyncio.run_coroutine_threadsafe(self.abatch(ops), loop).result()

    # ------------------------------------------------------------ async

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self.afabric is None:
            return await asyncio.to_thread(self.batch, list(ops))
        b = _Batch.split(ops)
        self._check_writable(b)
        afab = self.afabric
        if b.gets:
            keys = [(tuple(op.namespace), op.key) for _, op in b.gets]
            found = {(r["subject"], r["relation"]): r for r in await self._arows(afab, *self._items_query(keys=keys))}
            for i, op in b.gets:
                row = found.get((subject_of(op.namespace), relation_of(op.key)))
                b.results[i] = item_of(row) if row else None
        for i, search in b.searches:
            b.results[i] = await self._asearch(afab, search)
        if b.lists:
            valid_at, known_at = self._times()
            rows = await afab._all(self.org, "store_namespaces", {"org": self.org, "prefix": None,
                                                                   "valid_at": valid_at, "known_at": known_at})
            for i, listing in b.lists:
                b.results[i] = list_namespaces([r["namespace"] for r in rows], listing)
        if b.puts:
            await self._aapply_puts(afab, b.puts)
        return b.results

    async def _arows(self, afab: AsyncFabric, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        rows = await afab._all(self.org, query, params)
        return sorted(rows, key=lambda r: r["recorded_at"], reverse=True)

    async def _asearch(self, afab: AsyncFabric, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if not op.query:
            return self._page(op, await self._arows(afab, *self._items_query(prefix=prefix)))
        valid_at, known_at = self._times()
        hits = self._keyed_hits(await afab._search(op.query, org=self.org, k=self._search_k(op), valid_at=valid_at,
                                                   known_at=known_at, include_superseded=False, mode="hybrid",
                                                   context=0, explain=False,
                                                   subject_prefix=subject_of(prefix) if prefix else None))
        return self._ranked(op, hits, await self._arows(afab, *self._items_query(keys=self._hit_keys(hits))))

    async def _aapply_puts(self, afab: AsyncFabric, puts: Mapping[tuple[tuple[str, ...], str], PutOp]) -> None:
        deletes = [(ns, key) for (ns, key), op in puts.items() if op.value is None]
        writes = self._write_items(op for op in puts.values() if op.value is not None)
        if deletes:
            async with afab._conn(self.org) as conn, conn.transaction():
                await conn.execute(q("lock_org"), {"org": self.org})
                clock = await (await conn.execute(q("clock"))).fetchone()
                assert clock is not None  # the clock statement returns one row
                now = clock["now"]
                for ns, key in deletes:
                    await conn.execute(q("store_delete"), self._delete_params(ns, key, now))
        if writes:
            ids = [r.id for r in await afab.write_many(writes)]
            deadline = time.monotonic() + self.placement_timeout
            for delay in calls.backoff(0.005, 0.2):
                states = await afab._all(self.org, "store_write_states", {"org": self.org, "ids": ids})
                if self._placed(states, deadline):
                    return
                await asyncio.sleep(delay)
