"""Connections: a psycopg pool whose connections know the vector type, and migrations."""

from __future__ import annotations

import functools
import logging
import re
from importlib import resources
from pathlib import Path
from typing import Any, Callable, TypeVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from .errors import DatabaseError, FabricError, PgvectorMissing, StoreUnavailable, ValidationError

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent

# fabric's connections return rows as dicts (the pool's row_factory, `DictRow`); annotated as rows of
# Any, so a function typed with the bare `psycopg.Connection` can take one too.
Conn = psycopg.Connection[Any]
Pool = ConnectionPool[Conn]


def migrations_dir() -> Path:
    """The Alembic scripts, shipped inside the package (setup.py maps the top-level `migrations/` there)."""
    return Path(str(resources.files("fabric.migrations")))


def sqlalchemy_engine(url: str):
    """A SQLAlchemy engine over psycopg that accepts any libpq conninfo (URL or key=value)."""
    from sqlalchemy import create_engine, pool

    return create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(url), poolclass=pool.NullPool)


def one(cur: psycopg.Cursor[Any]) -> Any:
    """The row of a statement that always returns one (a count, the clock, EXISTS)."""
    row = cur.fetchone()
    if row is None:  # only a statement that is not of that kind gets here
        raise DatabaseError("the statement returned no row")
    return row


def cannot_connect(exc: Exception) -> DatabaseError:
    """libpq's reason on one line (it adds a tab-indented hint on a second one)."""
    return DatabaseError("cannot connect to PostgreSQL: " + " ".join(str(exc).split()))


def _configure(conn: Conn) -> None:
    try:
        register_vector(conn)
    except psycopg.ProgrammingError as exc:
        raise PgvectorMissing(
            "the vector type is missing: run `fabric migrate` (CREATE EXTENSION vector) on a database "
            "with pgvector installed") from exc
    conn.commit()


def make_pool(url: str, *, min_size: int = 1, max_size: int = 8) -> Pool:
    pool = Pool(
        url, connection_class=Conn, min_size=min_size, max_size=max_size, open=False, configure=_configure,
        kwargs={"row_factory": dict_row, "autocommit": False}, name="fabric",
    )
    try:
        pool.open(wait=True, timeout=30)
    except Exception as exc:
        pool.close()
        raise cannot_connect(exc) from exc
    return pool


# ---------------------------------------------------------------- connection loss

T = TypeVar("T")

# SQLSTATEs that mean "the session is gone", not "this statement was wrong": connection exceptions
# (class 08) and the server shutting down or crashing (57P01-57P03).
_SESSION_LOST = ("57P01", "57P02", "57P03")


def is_connection_loss(exc: BaseException) -> bool:
    if isinstance(exc, PoolTimeout):
        return True
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate
        return state is None or state.startswith("08") or state in _SESSION_LOST
    return False


def server_reachable(pool: ConnectionPool[Any], timeout: int = 3) -> bool:
    """Can a new session be opened right now? (Used only after a failure, never on the hot path.)"""
    try:
        psycopg.connect(str(pool.conninfo), connect_timeout=timeout).close()
    except psycopg.Error:
        return False
    return True


def run_guarded(pool: ConnectionPool, call: Callable[[], T], *, retry: bool) -> T:
    """Run `call` (which uses `pool`); turn every database error into a FabricError.

    On connection loss (e.g. PostgreSQL restarted, so every pooled session is dead), and when `retry`
    says running `call` twice is safe, drop the dead sessions and run it once more on a fresh one."""
    try:
        return call()
    except FabricError:
        raise
    except psycopg.Error as exc:
        if not is_connection_loss(exc):
            raise DatabaseError(f"database error: {exc}") from exc
        first = exc
    except PoolTimeout as exc:
        raise StoreUnavailable(f"no PostgreSQL connection available: {exc}") from exc
    log.warning("connection lost", extra={"action": "connection_lost", "error": str(first), "retry": retry})
    if not retry:
        raise StoreUnavailable(f"lost the connection to PostgreSQL (not retried: not safe to repeat): {first}") \
            from first
    if not server_reachable(pool):
        raise StoreUnavailable(f"lost the connection to PostgreSQL and cannot reconnect: {first}") from first
    pool.check()  # discard every dead pooled session, so the retry gets a fresh one
    try:
        return call()
    except FabricError:
        raise
    except (psycopg.Error, PoolTimeout) as exc:
        if is_connection_loss(exc):
            raise StoreUnavailable(f"lost the connection to PostgreSQL again after a retry: {exc}") from exc
        raise DatabaseError(f"database error: {exc}") from exc


def guarded(*, retry: bool) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorate a public method of an object with a `pool`: see `run_guarded`. Use retry=True only
    where running the method twice is harmless (reads; writes made idempotent by their ids)."""
    def wrap(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def call(self, *args, **kwargs) -> T:
            return run_guarded(self.pool, lambda: method(self, *args, **kwargs), retry=retry)
        return call
    return wrap


def ensure_pgvector(conn: psycopg.Connection) -> None:
    row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if row is None:
        raise PgvectorMissing(
            "this PostgreSQL has no pgvector extension available; install pgvector "
            "(e.g. the pgvector/pgvector Docker image) or unset DATABASE_URL to use the embedded server")


def alembic_config(connection=None, embedding_dim: int | None = None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("path_separator", "os")
    if connection is not None:
        cfg.attributes["connection"] = connection
    if embedding_dim is not None:
        cfg.attributes["embedding_dim"] = embedding_dim
    return cfg


def migrate(url: str, *, revision: str = "head", embedding_dim: int = 384, downgrade: bool = False) -> None:
    """Upgrade (or downgrade) the schema. Serialised by an advisory lock so concurrent starts are safe."""
    from alembic import command
    from alembic.util import CommandError
    from sqlalchemy import text

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            ensure_pgvector(conn)
    except psycopg.OperationalError as exc:
        raise cannot_connect(exc) from exc
    if not downgrade and revision == "head" and schema_revision(url) == head_revision():
        return  # nothing to do; and a service role may not take the migration lock (migration 0005)
    engine = sqlalchemy_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('fabric.migrate'))"))
            cfg = alembic_config(conn, embedding_dim)
            if downgrade:
                command.downgrade(cfg, revision)
            else:
                command.upgrade(cfg, revision)
    except CommandError as exc:  # an unknown revision, a downgrade target above the current one
        raise ValidationError("revision", str(exc)) from None
    finally:
        engine.dispose()


# `revision = "0003"` / `down_revision = "0002"` (a tuple for a merge), as Alembic writes them.
_REVISION_LINE = re.compile(r"^(down_revision|revision)\b[^=\n]*=(.*)$", re.MULTILINE)


def head_revision() -> str | None:
    """The newest migration's revision, read from the scripts' text without importing Alembic
    (which costs a second on every start). None when unsure: then the caller runs Alembic."""
    revisions, parents = set(), set()
    for path in (migrations_dir() / "versions").glob("*.py"):
        if path.name == "__init__.py":
            continue
        found = dict(_REVISION_LINE.findall(path.read_text()))
        if "revision" not in found:
            return None
        revisions.update(re.findall(r"['\"]([^'\"]+)['\"]", found["revision"]))
        parents.update(re.findall(r"['\"]([^'\"]+)['\"]", found.get("down_revision", "")))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def migrate_if_behind(url: str, *, embedding_dim: int = 384) -> bool:
    """Upgrade to head unless the database is there already: on the usual start one cheap query
    instead of a full Alembic run. Returns whether it migrated."""
    head = head_revision()
    try:
        at_head = head is not None and schema_revision(url) == head
    except psycopg.OperationalError as exc:
        raise cannot_connect(exc) from exc
    if not at_head:
        migrate(url, embedding_dim=embedding_dim)
    return not at_head


def schema_revision(url: str) -> str | None:
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            row = conn.execute("SELECT version_num FROM public.alembic_version").fetchone()
        except psycopg.errors.UndefinedTable:
            return None
    return row[0] if row else None


def embedding_dim_of(conn: psycopg.Connection) -> int | None:
    """The dimension of fabric.memories.embedding as migrated (atttypmod holds it for vector)."""
    row = conn.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'fabric.memories'::regclass "
        "AND attname = 'embedding'").fetchone()
    if row is None:
        return None
    value = row["atttypmod"] if isinstance(row, dict) else row[0]
    return int(value)
