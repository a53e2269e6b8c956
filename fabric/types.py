"""The public value types: what goes in (WriteRequest) and what comes out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Literal, Mapping

from .errors import ValidationError

DecisionKind = Literal["duplicate", "child_update", "contradiction_fork", "new_branch"]
DECISION_KINDS: tuple[str, ...] = ("duplicate", "child_update", "contradiction_fork", "new_branch")
WriteStatus = Literal["pending", "placed", "duplicate", "parked"]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


# Python's datetime holds years 1-9999 only. A time whose UTC value falls outside (year 1 at +14:00,
# 9999-12-31 at -12:00) would be stored but could never be read back; a day of margin either side
# keeps every session time zone able to show what is stored.
EARLIEST = datetime(1, 1, 2, tzinfo=timezone.utc)
LATEST = datetime(9999, 12, 30, tzinfo=timezone.utc)


def aware(name: str, value: datetime | None) -> datetime | None:
    """Refuse naive datetimes (a guess about the timezone is a silent wrong answer) and times outside
    the range every reader can represent."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ValidationError(name, f"expected a datetime, got {type(value).__name__}")
    try:
        offset = value.utcoffset()
        in_range = offset is not None and EARLIEST <= value <= LATEST
    except (OverflowError, ValueError, TypeError) as exc:
        raise ValidationError(name, f"unusable time zone or time: {exc}") from None
    if offset is None:
        raise ValidationError(name, "naive datetime; pass a timezone-aware one (e.g. tzinfo=timezone.utc)")
    if not in_range:
        raise ValidationError(name, f"{value.isoformat()} is outside the supported range "
                                    f"({EARLIEST.date()} to {LATEST.date()} UTC)")
    return value


def parse_time(name: str, value: str | None) -> datetime | None:
    """ISO-8601 with a timezone (a trailing Z is UTC); a time without one is refused, not guessed."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(name, f"expected an ISO-8601 string, got {type(value).__name__}")
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(name, f"not an ISO-8601 time: {value!r}") from None
    if dt.tzinfo is None:
        raise ValidationError(name, f"{value!r} has no timezone; add one, e.g. {value}+00:00 or {value}Z")
    return dt


def as_uuid(name: str, value: object) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        raise ValidationError(name, f"not a valid id: {value!r}") from None


def check_text(name: str, value: object, *, empty_ok: bool = False) -> str:
    """A string PostgreSQL text can hold: no NUL character, valid Unicode (no lone surrogate, which is
    what undecodable bytes in a command-line argument become)."""
    if not isinstance(value, str):
        raise ValidationError(name, f"expected a string, got {type(value).__name__}")
    if not empty_ok and not value.strip():
        raise ValidationError(name, "empty")
    if "\x00" in value:
        raise ValidationError(name, f"contains a NUL character at position {value.index(chr(0))}, "
                                    "which PostgreSQL text cannot hold")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(name, f"not valid Unicode (a lone surrogate at position {exc.start}; "
                                    "was it undecodable bytes?)") from None
    return value


def check_optional_text(name: str, value: object) -> str | None:
    return None if value is None else check_text(name, value)


def check_int(name: str, value: object, low: int, high: int) -> int:
    """An int (not a bool) within [low, high]."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValidationError(name, f"must be an integer between {low} and {high}; got {value!r}")
    return value


def check_org(org: object) -> str:
    if not isinstance(org, str) or not org.strip():
        raise ValidationError("org", "must be a non-empty string")
    if len(org) > 200:
        raise ValidationError("org", "longer than 200 characters")
    return check_text("org", org)


MAX_METADATA_DEPTH = 32


def check_metadata(value: object, path: str = "metadata", depth: int = 0) -> Any:
    """JSON that jsonb stores verbatim: string keys, finite numbers, no NUL (jsonb cannot hold \\u0000),
    valid Unicode, nesting at most MAX_METADATA_DEPTH deep. Returns it as plain dicts and lists."""
    if depth > MAX_METADATA_DEPTH:
        raise ValidationError(path, f"nested more than {MAX_METADATA_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValidationError(path, f"{value} is not a JSON number")
        return value
    if isinstance(value, str):
        return check_text(path, value, empty_ok=True)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(path, f"keys must be strings; got {type(key).__name__} {key!r}")
            check_text(f"{path} key {key!r}", key, empty_ok=True)
            out[key] = check_metadata(item, f"{path}.{key}", depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [check_metadata(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
    raise ValidationError(path, f"{type(value).__name__} is not a JSON value")


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """One write, validated. Build it with `WriteRequest.build(...)`."""

    content: str
    org: str = "default"
    subject: str | None = None
    relation: str | None = None
    value: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    source: str | None = None
    kind: str | None = None
    durability: str | None = None
    metadata: Mapping[str, Any] | None = None

    @classmethod
    def build(cls, content: object, *, max_chars: int = 8000, **kw: Any) -> WriteRequest:
        known = {f.name for f in fields(cls)}
        unknown = set(kw) - known
        if unknown:
            raise ValidationError(sorted(unknown)[0], "unknown field")
        content = check_text("content", content).strip()
        if len(content) > max_chars:
            raise ValidationError("content", f"{len(content)} characters, more than the limit of {max_chars}")
        org = check_org(kw.get("org", "default"))
        for name in ("subject", "relation", "value", "source", "kind", "durability"):
            v = kw.get(name)
            if v is not None and (not isinstance(v, str) or not v.strip()):
                raise ValidationError(name, "must be a non-empty string or None")
            check_optional_text(name, v)
        subject, relation, value = kw.get("subject"), kw.get("relation"), kw.get("value")
        if (subject is None) != (relation is None):
            raise ValidationError("subject" if subject is None else "relation",
                                  "subject and relation go together: give both or neither")
        if value is not None and subject is None:
            raise ValidationError("value", "a value needs a subject and a relation")
        valid_from = aware("valid_from", kw.get("valid_from")) or utcnow()  # default: true from now
        valid_to = aware("valid_to", kw.get("valid_to"))
        if valid_from is not None and valid_to is not None and valid_to <= valid_from:
            raise ValidationError("valid_to", "must be later than valid_from (intervals are closed-open)")
        metadata = kw.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError("metadata", f"expected a mapping, got {type(metadata).__name__}")
        metadata = check_metadata(metadata)
        return cls(
            content=content, org=org,
            subject=subject.strip() if subject else None,
            relation=relation.strip().lower() if relation else None,
            value=value.strip() if value else None,
            valid_from=valid_from, valid_to=valid_to,
            source=kw.get("source"), kind=kw.get("kind"), durability=kw.get("durability"),
            metadata=metadata,
        )


def write_fields(item: object) -> dict[str, Any]:
    """One item of write_many as keyword fields (a mapping, or a WriteRequest validated again)."""
    if isinstance(item, WriteRequest):
        return {f.name: getattr(item, f.name) for f in fields(WriteRequest)}
    if not isinstance(item, Mapping):
        raise ValidationError("item", f"expected a mapping of write fields, got {type(item).__name__}")
    for key in item:
        if not isinstance(key, str):
            raise ValidationError("item", f"field names must be strings; got {key!r}")
    return dict(item)


@dataclass(frozen=True, slots=True)
class WriteReceipt:
    """Returned by write(): the write is durable; placement happens in a worker."""

    id: uuid.UUID
    org: str
    status: WriteStatus = "pending"
    enqueued: bool = True


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a write went. For a duplicate, `memory_id` is the memory it repeats."""

    write_id: uuid.UUID
    org: str
    decision: DecisionKind
    memory_id: uuid.UUID
    target_id: uuid.UUID | None
    decision_id: uuid.UUID
    reason: str | None = None
    confidence: float | None = None
    validator: str | None = None
    out_of_order: bool = False  # a contradiction that arrived late: stored as history, the live one kept


@dataclass(slots=True)
class Memory:
    """One memory, as the store believed it at the asked moment."""

    id: uuid.UUID
    org: str
    parent_id: uuid.UUID | None
    root_id: uuid.UUID
    content: str
    subject: str | None
    relation: str | None
    value: str | None
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    expired_at: datetime | None
    superseded_by: uuid.UUID | None
    placement: str
    source: str | None
    kind: str | None
    durability: str | None
    metadata: dict[str, Any]
    score: float | None = None
    depth: int = 0
    version: int = 1
    state: str = "live"
    decision_id: uuid.UUID | None = None
    ranks: dict[str, int | None] | None = None
    # Set by search when a result states another value of the same fact (subject, relation) than a
    # live memory valid from later among the same results: the id of that later one (the answer).
    conflict_with: uuid.UUID | None = None
    context: list[Memory] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Memory:
        return cls(**{k: row[k] for k in _MEMORY_COLUMNS if k in row},
                   metadata=row.get("metadata") or {})

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "context"}
        out["context"] = [m.to_dict() for m in self.context]
        return out


_MEMORY_COLUMNS = tuple(f.name for f in fields(Memory) if f.name not in ("metadata", "context", "ranks"))


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """A row of the decision log (placement, revert, retraction, replay, source invalidation)."""

    id: uuid.UUID
    org: str
    action: str
    kind: str | None
    write_id: uuid.UUID | None
    memory_id: uuid.UUID | None
    target_id: uuid.UUID | None
    validator: str | None
    model: str | None
    reason: str | None
    confidence: float | None
    latency_ms: float | None
    created_at: datetime
    reverts: uuid.UUID | None
    reverted_by: uuid.UUID | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> DecisionRecord:
        return cls(**{f.name: row[f.name] for f in fields(cls)})
