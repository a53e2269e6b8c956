"""One hierarchy of errors: catch `FabricError` to catch them all."""

from __future__ import annotations


class FabricError(Exception):
    """Base class of every error fabric raises on purpose."""


class ConfigurationError(FabricError):
    """A setting is missing or inconsistent."""


class ValidationError(FabricError, ValueError):
    """Bad input. `field` names the offending field."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class PolicyRefused(ValidationError):
    """The write policy refused a write (e.g. a kind a system of record answers)."""


class NotFound(FabricError, LookupError):
    """An id that does not exist in this org."""

    def __init__(self, what: str, ident: object, org: str | None):
        self.what, self.ident, self.org = what, ident, org  # org None: looked up in every org
        super().__init__(f"no {what} {ident} in " + (f"org {org!r}" if org is not None else "any org"))


class DatabaseError(FabricError):
    """The database is unreachable or lacks something fabric needs."""


class StoreUnavailable(DatabaseError):
    """The connection to PostgreSQL was lost (a restart, a network cut) and could not be restored.

    Reads and idempotent writes have been retried once on a fresh connection before this is raised."""


class PgvectorMissing(DatabaseError):
    """The database has no pgvector extension available."""


class DimensionMismatch(FabricError, ValueError):
    """An embedding's dimension differs from the schema's."""


class QueueError(FabricError):
    """The queue (Redis / RQ) is unreachable or misbehaving."""


class PlacementTimeout(FabricError, TimeoutError):
    """wait()/drain() timed out; the message says whether any worker listens on the queue."""


class PlacementParked(FabricError):
    """The write was parked with an error for an admin; `error` holds it."""

    def __init__(self, write_id: object, error: str | None):
        self.write_id, self.error = write_id, error
        super().__init__(f"write {write_id} was parked: {error}")


class ValidatorError(FabricError):
    """A validator failed or answered something unusable (unknown target, malformed output)."""


class EmbeddingError(FabricError):
    """The embedder failed."""


class TenantAccessDenied(FabricError, PermissionError):
    """The database refused this connection's role access to an org (row-level security)."""

    def __init__(self, org: str | None, detail: str):
        self.org, self.detail = org, detail
        where = f"org {org!r}" if org is not None else "this org"
        super().__init__(f"the database role of this connection may not act for {where} "
                         f"(grant it with `fabric roles grant ROLE --org ORG`): {detail}")
