"""Database roles: read-only analysts and tenant-bound services (migration 0002 holds the rules).

* An **analyst** role is a LOGIN member of `fabric_analyst`: it may SELECT the `fabric_api` views
  and call its functions, for every org, and nothing else (no table of `fabric`, no writes).
* A **service** role is a LOGIN member of `fabric_service`: it may run the library, and row-level
  security limits it to the org set on its connection (`fabric.org`, set by the library per
  operation) among the orgs granted to it in `fabric.tenant_grants`.

Every function here takes a psycopg connection of the database owner (or a role with CREATEROLE
and ADMIN on fabric's groups) and runs in one transaction; role names are identifiers, validated
and composed with `psycopg.sql`."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Literal

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from .db import one
from .errors import FabricError, NotFound, TenantAccessDenied, ValidationError  # noqa: F401 (re-exported)
from .sql import q
from .types import check_org

if TYPE_CHECKING:
    from .db import Conn

log = logging.getLogger(__name__)

SERVICE_GROUP = "fabric_service"
ANALYST_GROUP = "fabric_analyst"

_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_RESERVED = {"public", "none", "current_user", "current_role", "session_user", "user", "all",
             SERVICE_GROUP, ANALYST_GROUP}


class RoleError(FabricError):
    """A role operation PostgreSQL refused (the role exists, is not fabric's, lacks a privilege, ...)."""


class RoleNotFound(NotFound):
    """No such role (or no such grant of an org to it)."""

    def __init__(self, name: str, org: str | None = None):
        self.what, self.ident = "role", name
        self.org = org  # a role is cluster-wide: it may name no org
        FabricError.__init__(self, f"role {name!r} has no grant of org {org!r}" if org is not None
                             else f"no role {name!r} in this PostgreSQL cluster")


RoleKind = Literal["analyst", "service", "analyst+service"]
Cursor = psycopg.Cursor[Any]  # rows are dicts (dict_row)


@dataclass(frozen=True, slots=True)
class RoleInfo:
    name: str
    kind: RoleKind
    login: bool
    orgs: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "login": self.login, "orgs": list(self.orgs)}


def check_role_name(name: object, field_name: str = "name") -> str:
    """A role name fabric creates: a lower-case SQL identifier (letters, digits, _), at most 63 bytes."""
    if not isinstance(name, str) or not name:
        raise ValidationError(field_name, "a role name must be a non-empty string")
    if len(name.encode()) > 63:
        raise ValidationError(field_name, f"{name!r} is longer than 63 bytes (PostgreSQL's identifier limit)")
    if not _NAME.match(name):
        raise ValidationError(field_name, f"{name!r} is not a plain lower-case identifier: use letters a-z, "
                                          f"digits and _, not starting with a digit")
    if name.startswith("pg_"):
        raise ValidationError(field_name, f"{name!r}: names starting with pg_ are reserved by PostgreSQL")
    if name in _RESERVED:
        raise ValidationError(field_name, f"{name!r} is reserved")
    return name


def _check_orgs(orgs: Iterable[str]) -> list[str]:
    out = []
    for org in orgs:
        check_org(org)
        if org not in out:
            out.append(org)
    return out


def _check_password(password: str | None) -> None:
    if password is not None and (not isinstance(password, str) or not password):
        raise ValidationError("password", "must be a non-empty string (or omitted)")


def _ready(cur: Cursor) -> None:
    if not one(cur.execute(q("tenant_grants_present")))["present"]:
        raise FabricError("this database has no fabric.tenant_grants: run `fabric migrate` first")
    n = one(cur.execute(q("role_groups_present"), _groups()))["n"]
    if n != 2:
        raise FabricError(f"the roles {SERVICE_GROUP} and {ANALYST_GROUP} are missing: run `fabric migrate`")


def _groups() -> dict[str, str]:
    return {"service_group": SERVICE_GROUP, "analyst_group": ANALYST_GROUP}


def _describe(cur: Cursor, name: str) -> dict[str, Any] | None:
    return cur.execute(q("role_describe"), {"name": name, **_groups()}).fetchone()


def _ddl(cur: Cursor, template: str, **parts: sql.Composable) -> None:
    try:
        cur.execute(sql.SQL(q(template)).format(**parts))
    except psycopg.errors.InsufficientPrivilege as exc:
        raise RoleError(f"PostgreSQL refused ({template}): {exc}; run this as the database owner "
                        f"or a role with CREATEROLE") from exc
    except psycopg.errors.DuplicateObject as exc:
        raise RoleError(f"{exc}".strip()) from exc
    except psycopg.errors.DependentObjectsStillExist as exc:
        raise RoleError(f"{exc}".strip()) from exc


def _password(password: str | None) -> sql.Composable:
    return sql.Literal(password) if password is not None else sql.SQL("NULL")


def _create_login(cur: Cursor, name: str, group: str, password: str | None) -> None:
    if _describe(cur, name) is not None:
        raise RoleError(f"role {name!r} already exists; pick another name"
                        + (" or add orgs with `fabric roles grant`" if group == SERVICE_GROUP else ""))
    _ddl(cur, "role_create_login", role=sql.Identifier(name), password=_password(password))
    _ddl(cur, "role_grant_group", group=sql.Identifier(group), role=sql.Identifier(name))


def create_analyst(conn: Conn, name: str, *, password: str | None = None) -> RoleInfo:
    """Create a LOGIN role that can read the analyst surface (every org) and nothing else."""
    check_role_name(name)
    _check_password(password)
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        _ready(cur)
        _create_login(cur, name, ANALYST_GROUP, password)
        _ddl(cur, "role_read_only", role=sql.Identifier(name))
        info = _info(cur, name)
    log.info("analyst role created", extra={"action": "create_analyst", "role": name})
    return info


def create_service(conn: Conn, name: str, *, orgs: Iterable[str],
                   password: str | None = None) -> RoleInfo:
    """Create a LOGIN role for a service, granted `orgs` (at least one)."""
    check_role_name(name)
    _check_password(password)
    orgs = _check_orgs(orgs)
    if not orgs:
        raise ValidationError("org", "a service role needs at least one org (--org ORG)")
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        _ready(cur)
        _create_login(cur, name, SERVICE_GROUP, password)
        cur.executemany(q("grant_tenant"), [{"role": name, "org": o} for o in orgs])
        info = _info(cur, name)
    log.info("service role created", extra={"action": "create_service", "role": name, "orgs": orgs})
    return info


def _service_role(cur: Cursor, name: str) -> dict:
    row = _describe(cur, name)
    if row is None:
        raise RoleNotFound(name)
    if not row["service"]:
        raise RoleError(f"role {name!r} is not a fabric service role (a member of {SERVICE_GROUP}); "
                        f"create one with `fabric roles create-service`")
    return row


def _role_and_orgs(name: str, orgs: Iterable[str]) -> list[str]:
    """A grant or revoke names a role and at least one org: both checked."""
    check_role_name(name)
    checked = _check_orgs(orgs)
    if not checked:
        raise ValidationError("org", "name at least one org (--org ORG)")
    return checked


def grant(conn: Conn, name: str, *, orgs: Iterable[str]) -> RoleInfo:
    """Let a service role act for more orgs."""
    orgs = _role_and_orgs(name, orgs)
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        _ready(cur)
        _service_role(cur, name)
        cur.executemany(q("grant_tenant"), [{"role": name, "org": o} for o in orgs])
        return _info(cur, name)


def revoke(conn: Conn, name: str, *, orgs: Iterable[str]) -> RoleInfo:
    """Stop a service role acting for these orgs (it keeps its other grants)."""
    orgs = _role_and_orgs(name, orgs)
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        _ready(cur)
        _service_role(cur, name)
        for o in orgs:
            if cur.execute(q("revoke_tenant"), {"role": name, "org": o}).rowcount == 0:
                raise RoleNotFound(name, o)
        return _info(cur, name)


def drop(conn: Conn, name: str) -> None:
    """Drop a role fabric created (an analyst or service member), with its org grants."""
    check_role_name(name)
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        _ready(cur)
        row = _describe(cur, name)
        if row is None:
            raise RoleNotFound(name)
        if not (row["service"] or row["analyst"]):
            raise RoleError(f"role {name!r} is not one of fabric's roles; fabric drops only its own")
        cur.execute(q("revoke_all_tenants"), {"role": name})
        _ddl(cur, "role_drop", role=sql.Identifier(name))
    log.info("role dropped", extra={"action": "drop_role", "role": name})


def list_roles(conn: Conn) -> list[RoleInfo]:
    """Every analyst and service role, with the orgs granted to each in this database."""
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        _ready(cur)
        rows = cur.execute(q("list_fabric_roles"), _groups()).fetchall()
    return [_row_info(r) for r in rows]


def _info(cur: Cursor, name: str) -> RoleInfo:
    row = _describe(cur, name)
    if row is None:
        raise RoleNotFound(name)
    orgs = [r["org"] for r in cur.execute(q("role_orgs"), {"role": name}).fetchall()]
    return _row_info({**row, "orgs": orgs})


def _row_info(row: dict[str, Any]) -> RoleInfo:
    kind: RoleKind = ("analyst+service" if row["service"] and row["analyst"]
                      else "service" if row["service"] else "analyst")
    return RoleInfo(name=row["name"], kind=kind, login=row["login"], orgs=tuple(row["orgs"] or ()))


def role_url(database_url: str, name: str, password: str | None = None) -> str:
    """The owner's DATABASE_URL with another role's credentials (host, port and database kept)."""
    check_role_name(name)
    kw: dict[str, str] = {"user": name}
    if password is not None:
        kw["password"] = password
    conninfo = psycopg.conninfo.make_conninfo(database_url, **kw)
    if password is None:
        # The owner's password must not travel with another role's name.
        parts = psycopg.conninfo.conninfo_to_dict(conninfo)
        parts.pop("password", None)
        conninfo = psycopg.conninfo.make_conninfo("", **parts)
    return conninfo
