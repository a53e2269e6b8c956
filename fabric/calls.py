"""What `Fabric` and `AsyncFabric` share: argument checks, query parameters and row -> type mapping.

Sans-IO: nothing here touches a connection, so the sync and the async API run the same checks,
bind the same parameters to the same named queries (fabric/sql) and build the same types."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Iterable, Iterator, Mapping, Sequence

from psycopg.types.json import Jsonb

from .errors import NotFound, PlacementParked, ValidationError
from .types import (
    Memory, Placement, WriteReceipt, WriteRequest, as_uuid, aware, check_int, check_optional_text, check_org,
    check_text, utcnow,
)

MAX_WALK_DEPTH = 100_000  # far deeper than any tree; bounds the recursive CTE's guard

# Act for an org until the transaction ends (row-level security keys on it: migration 0002).
SET_ORG_SQL = "SELECT set_config('fabric.org', %s, true)"


# ---------------------------------------------------------------- writes

def build_request(fields: dict[str, Any], max_chars: int) -> WriteRequest:
    """A validated WriteRequest, before the write policy's gate."""
    fields = dict(fields)
    content = fields.pop("content", None)
    return WriteRequest.build(content, max_chars=max_chars, **{k: v for k, v in fields.items() if v is not None})


def check_items(items: object) -> Iterable[Any]:
    """write_many's argument: an iterable of writes (not a string, a mapping or a single write)."""
    if isinstance(items, (str, bytes, Mapping, WriteRequest)) or not isinstance(items, Iterable):
        raise ValidationError("items", f"expected a list of writes, got {type(items).__name__}")
    return items


def batch_item_error(i: int, exc: ValidationError) -> ValidationError:
    """Name the item of a batch that failed (`items[3].content: ...`)."""
    return type(exc)(f"items[{i}].{exc.field}", str(exc).split(": ", 1)[1])


def plan_accept(reqs: Sequence[WriteRequest], batch: int
                ) -> tuple[list[tuple[uuid.UUID, WriteRequest, str]], list[tuple[str, str, list[str]]], list[str]]:
    """Give each write an id and a placement job: each org's writes, in order, in jobs of up to `batch`,
    the orgs' jobs taking turns in the queue.

    A call interleaving orgs still gets full jobs (cut per batch of the call, 4 orgs made jobs of 16):
    a job costs a worker ~12 ms besides its writes (RQ, reading the writes, one embedding request).
    Returns (rows: (write id, request, job id) in the order of `reqs`, jobs: (job id, org, [write ids]),
    orgs sorted)."""
    from . import queue as fq  # redis and rq: imported by writes only
    rows: list[tuple[uuid.UUID, WriteRequest, str]] = []
    per_org: dict[str, list[tuple[str, str, list[str]]]] = {}
    for r in reqs:
        jobs_of_org = per_org.setdefault(r.org, [])
        if not jobs_of_org or len(jobs_of_org[-1][2]) >= batch:
            jobs_of_org.append((fq.new_job_id(), r.org, []))
        wid = uuid.uuid4()
        jobs_of_org[-1][2].append(str(wid))
        rows.append((wid, r, jobs_of_org[-1][0]))
    turns = max((len(js) for js in per_org.values()), default=0)
    jobs = [js[turn] for turn in range(turns) for js in per_org.values() if turn < len(js)]
    return rows, jobs, sorted(per_org)


def write_params(wid: uuid.UUID, r: WriteRequest, job_id: str) -> dict[str, Any]:
    return {"org": r.org, "id": wid, "content": r.content, "subject": r.subject, "relation": r.relation,
            "value": r.value, "valid_from": r.valid_from, "valid_to": r.valid_to, "source": r.source,
            "kind": r.kind, "durability": r.durability,
            "metadata": Jsonb(dict(r.metadata)) if r.metadata is not None else None, "job_id": job_id}


def receipts(rows: Iterable[tuple[uuid.UUID, WriteRequest, str]], enqueued: bool) -> list[WriteReceipt]:
    return [WriteReceipt(id=wid, org=r.org, enqueued=enqueued) for wid, r, _ in rows]


def wait_target(receipt_or_id: WriteReceipt | uuid.UUID | str, org: str | None) -> tuple[uuid.UUID, str]:
    if isinstance(receipt_or_id, WriteReceipt):
        return receipt_or_id.id, receipt_or_id.org
    return as_uuid("write_id", receipt_or_id), check_org(org or "default")


def placement_of(wid: uuid.UUID, org: str, row: Mapping[str, Any] | None) -> Placement | None:
    """The write's placement from its `write_status` row; None while it is pending."""
    if row is None:
        raise NotFound("write", wid, org)
    if row["status"] == "parked":
        raise PlacementParked(wid, row["error"])
    if row["status"] == "pending":
        return None
    return Placement(write_id=wid, org=org, decision=row["decision"], memory_id=row["memory_id"],
                     target_id=row["target_id"], decision_id=row["decision_id"], reason=row["reason"],
                     confidence=row["confidence"], validator=row["validator"], out_of_order=row["out_of_order"])


def backoff(first: float, cap: float, factor: float = 1.5) -> Iterator[float]:
    """Sleeps between two polls: short at first (placement usually takes milliseconds), then capped."""
    delay = first
    while True:
        yield delay
        delay = min(delay * factor, cap)


# ---------------------------------------------------------------- reads

def times(valid_at: datetime | None, known_at: datetime | None) -> tuple[datetime, datetime]:
    """(valid_at, known_at), each defaulting to now; naive datetimes refused."""
    now = utcnow()
    return aware("valid_at", valid_at) or now, aware("known_at", known_at) or now


def check_search(query: object, *, org: object, k: object, mode: object, context: object, explain: object) -> None:
    from .read.search import MODES

    check_org(org)
    check_text("query", query)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1 or k > 1000:
        raise ValidationError("k", "must be an integer between 1 and 1000")
    if not isinstance(mode, str) or mode not in MODES:
        raise ValidationError("mode", f"must be one of {', '.join(MODES)}; got {mode!r}")
    if not isinstance(context, int) or isinstance(context, bool) or context < 0 or context > 100:
        raise ValidationError("context", "must be an integer between 0 and 100")
    if not isinstance(explain, bool):
        raise ValidationError("explain", "must be True or False")


def search_results(rows: Sequence[Mapping[str, Any]], near: Mapping[uuid.UUID, Sequence[Mapping[str, Any]]],
                   explain: bool) -> list[Memory]:
    out = []
    for r in rows:
        m = Memory.from_row(r)
        if explain:
            m.ranks = {"vector": r["vector_rank"], "lexical": r["lexical_rank"],
                       "attribute": r.get("attribute_match")}   # hybrid only: 1 = states the attribute asked
        m.context = [Memory.from_row(c) for c in near.get(m.id, [])]
        out.append(m)
    return out


def current_value_params(subject: object, relation: object, *, org: object, valid_at: datetime | None,
                         known_at: datetime | None) -> dict[str, Any]:
    check_org(org)
    check_text("subject", subject)
    check_text("relation", relation)
    valid_at, known_at = times(valid_at, known_at)
    return {"org": org, "subject": str(subject).strip(), "relation": str(relation).strip().lower(),
            "valid_at": valid_at, "known_at": known_at}


def walk_params(root_id: object, *, org: object, max_depth: object, include_superseded: bool,
                valid_at: datetime | None, known_at: datetime | None) -> dict[str, Any]:
    check_org(org)
    rid = as_uuid("root_id", root_id)
    if max_depth is not None:
        check_int("max_depth", max_depth, 0, MAX_WALK_DEPTH)
    valid_at, known_at = times(valid_at, known_at)
    return {"org": org, "root": rid, "include_superseded": include_superseded, "max_depth": max_depth,
            "valid_at": valid_at, "known_at": known_at}


def decisions_params(*, org: object, since: datetime | None, kind: str | None, action: str | None,
                     limit: int) -> dict[str, Any]:
    check_org(org)
    check_int("limit", limit, 1, 10000)
    check_optional_text("kind", kind)
    check_optional_text("action", action)
    return {"org": org, "since": aware("since", since), "kind": kind, "action": action, "limit": limit}


def check_sample(n: object) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n > 10000:
        raise ValidationError("sample", "must be an integer between 1 and 10000")


def check_reason(reason: object) -> None:
    if reason is None or (isinstance(reason, str) and not reason.strip()):
        raise ValidationError("reason", "a retraction needs a reason")
    check_text("reason", reason)


# ---------------------------------------------------------------- admin helpers

def writes_summary(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """`writes_summary` rows (status, decision kind, n) folded: writes per status, placements per kind."""
    status: dict[str, int] = {}
    decisions: dict[str, int] = {}
    for r in rows:
        status[r["status"]] = status.get(r["status"], 0) + r["n"]
        if r["kind"]:
            decisions[r["kind"]] = decisions.get(r["kind"], 0) + r["n"]
    return {"status": status, "decisions": decisions}


def writes_summary_params(receipts: Sequence[WriteReceipt]) -> dict[str, Any]:
    return {"orgs": [r.org for r in receipts], "ids": [r.id for r in receipts]}
