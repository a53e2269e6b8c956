"""`fabric roles ...`: database roles for analysts (read-only SQL) and services (tenant-bound).

Run these as the database owner (DATABASE_URL, or the embedded server's superuser)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import typer
from rich.table import Table

from .app import JsonOpt, app, console, err_console, handle_errors, print_json, titled_table

if TYPE_CHECKING:
    from ..db import Conn

roles_app = typer.Typer(help="Database roles: read-only analysts and tenant-bound services.", no_args_is_help=True)
app.add_typer(roles_app, name="roles")

PasswordOpt = typer.Option(None, "--password", help="Password of the new role (default: none; fine for "
                                                     "trust, peer or certificate authentication).")
PasswordStdinOpt = typer.Option(False, "--password-stdin", help="Read the password from the first line of stdin "
                                                                "(keeps it out of the process list).")
OrgsOpt = typer.Option(..., "--org", "-o", help="An org (tenant); repeat for several.")


@contextmanager
def owner_connection() -> Iterator[tuple[Conn, str]]:
    """A connection as the database owner, migrated to head (the roles need migration 0002)."""
    import psycopg

    from .. import db, servers
    from ..config import Settings

    s = Settings.from_env()
    url = s.database_url or servers.postgres_url(s.data_dir)
    db.migrate_if_behind(url, embedding_dim=s.embedding_dim)
    try:
        conn = psycopg.connect(url)
    except psycopg.OperationalError as exc:
        raise db.cannot_connect(exc) from exc
    with conn:
        yield conn, url


def _password(password: Optional[str], from_stdin: bool) -> Optional[str]:
    if from_stdin:
        if password is not None:
            from ..errors import ValidationError

            raise ValidationError("password", "give --password or --password-stdin, not both")
        return sys.stdin.readline().rstrip("\r\n")
    return password


def _table(infos, title: str) -> Table:
    table = titled_table(title, ("role", "kind", "login", "orgs"))
    for i in infos:
        orgs = ", ".join(i.orgs) or ("every org, read-only" if i.kind == "analyst" else "none")
        table.add_row(i.name, i.kind, "yes" if i.login else "no", orgs)
    return table


def _show(info, title: str, url: str | None, as_json: bool) -> None:
    """One role; with `url`, also how to connect as it (never with a password)."""
    from ..roles import role_url

    conninfo = role_url(url, info.name) if url is not None else None
    if as_json:
        print_json({**info.to_dict(), **({"conninfo": conninfo} if conninfo else {})})
        return
    console.print(_table([info], title))
    if conninfo:
        console.print(f"connect with: {conninfo}  (and its password, if it has one)")


@roles_app.command("create-analyst")
def create_analyst(
    name: str = typer.Argument(..., help="The new role's name: a lower-case identifier."),
    password: Optional[str] = PasswordOpt,
    password_stdin: bool = PasswordStdinOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Create a LOGIN role that can read the fabric_api views and functions (every org) and nothing else.

    Example: fabric roles create-analyst ana --password-stdin < secret.txt
    """
    from .. import roles

    with handle_errors():
        pw = _password(password, password_stdin)
        with owner_connection() as (conn, url):
            info = roles.create_analyst(conn, name, password=pw)
    _show(info, "analyst role created", url, as_json)


@roles_app.command("create-service")
def create_service(
    name: str = typer.Argument(..., help="The new role's name: a lower-case identifier."),
    orgs: list[str] = OrgsOpt,
    password: Optional[str] = PasswordOpt,
    password_stdin: bool = PasswordStdinOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Create a LOGIN role for a service, limited by row-level security to the orgs granted here.

    The library sets the org per operation; whatever SQL the role sends, PostgreSQL shows it only
    the rows of an org set on its connection that was granted to it.

    Example: fabric roles create-service billing_svc --org acme --org globex --password-stdin < secret.txt
    """
    from .. import roles

    with handle_errors():
        pw = _password(password, password_stdin)
        with owner_connection() as (conn, url):
            info = roles.create_service(conn, name, orgs=orgs, password=pw)
    _show(info, "service role created", url, as_json)


def _change_grants(change: Callable[..., Any], name: str, orgs: list[str], as_json: bool) -> None:
    """Grant or revoke (`change`) orgs for a service role, then show its grants."""
    with handle_errors():
        with owner_connection() as (conn, _):
            info = change(conn, name, orgs=orgs)
    _show(info, f"grants of {name}", None, as_json)


@roles_app.command("grant")
def grant(name: str = typer.Argument(..., help="A service role."), orgs: list[str] = OrgsOpt,
          as_json: bool = JsonOpt) -> None:
    """Let a service role act for more orgs.

    Example: fabric roles grant billing_svc --org initech
    """
    from .. import roles

    _change_grants(roles.grant, name, orgs, as_json)


@roles_app.command("revoke")
def revoke(name: str = typer.Argument(..., help="A service role."), orgs: list[str] = OrgsOpt,
           as_json: bool = JsonOpt) -> None:
    """Stop a service role acting for these orgs. Exit code 3 when it had no such grant.

    Example: fabric roles revoke billing_svc --org globex
    """
    from .. import roles

    _change_grants(roles.revoke, name, orgs, as_json)


@roles_app.command("list")
def list_roles(as_json: bool = JsonOpt) -> None:
    """Every analyst and service role, with the orgs granted to each.

    Example: fabric roles list --json
    """
    from .. import roles

    with handle_errors():
        with owner_connection() as (conn, _):
            infos = roles.list_roles(conn)
    if as_json:
        print_json([i.to_dict() for i in infos])
    elif not infos:
        err_console.print("no analyst or service roles yet: `fabric roles create-analyst NAME`")
    else:
        console.print(_table(infos, "fabric roles"))


@roles_app.command("drop")
def drop(name: str = typer.Argument(..., help="An analyst or service role fabric created."),
         as_json: bool = JsonOpt) -> None:
    """Drop an analyst or service role, with its org grants. Exit code 3 when there is no such role.

    Example: fabric roles drop billing_svc
    """
    from .. import roles

    with handle_errors():
        with owner_connection() as (conn, _):
            roles.drop(conn, name)
    print_json({"dropped": name}) if as_json else console.print(f"dropped role {name}")
