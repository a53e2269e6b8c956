"""Connections: a psycopg pool whose connections know the vector type, and migrations."""

from __future__ import annotations

import logging
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from .errors import DatabaseError, PgvectorMissing

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent


def sqlalchemy_engine(url: str):
    """A SQLAlchemy engine over psycopg that accepts any libpq conninfo (URL or key=value)."""
    from sqlalchemy import create_engine, pool

    return create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(url), poolclass=pool.NullPool)


def _configure(conn: psycopg.Connection) -> None:
    try:
        register_vector(conn)
    except psycopg.ProgrammingError as exc:
        raise PgvectorMissing(
            "the vector type is missing: run `fabric migrate` (CREATE EXTENSION vector) on a database "
            "with pgvector installed") from exc
    conn.commit()


def make_pool(url: str, *, min_size: int = 1, max_size: int = 8) -> ConnectionPool:
    pool = ConnectionPool(
        url, min_size=min_size, max_size=max_size, open=False, configure=_configure,
        kwargs={"row_factory": dict_row, "autocommit": False}, name="fabric",
    )
    try:
        pool.open(wait=True, timeout=30)
    except Exception as exc:
        pool.close()
        raise DatabaseError(f"cannot connect to PostgreSQL: {exc}") from exc
    return pool


def ensure_pgvector(conn: psycopg.Connection) -> None:
    row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if row is None:
        raise PgvectorMissing(
            "this PostgreSQL has no pgvector extension available; install pgvector "
            "(e.g. the pgvector/pgvector Docker image) or unset DATABASE_URL to use the embedded server")


def alembic_config(connection=None, embedding_dim: int | None = None):
    from alembic.config import Config

    cfg = Config(str(ROOT / "alembic.ini")) if (ROOT / "alembic.ini").exists() else Config()
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    if embedding_dim is not None:
        cfg.attributes["embedding_dim"] = embedding_dim
    return cfg


def migrate(url: str, *, revision: str = "head", embedding_dim: int = 384, downgrade: bool = False) -> None:
    """Upgrade (or downgrade) the schema. Serialised by an advisory lock so concurrent starts are safe."""
    from alembic import command
    from sqlalchemy import text

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            ensure_pgvector(conn)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to PostgreSQL: {exc}") from exc
    engine = sqlalchemy_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('fabric.migrate'))"))
            cfg = alembic_config(conn, embedding_dim)
            if downgrade:
                command.downgrade(cfg, revision)
            else:
                command.upgrade(cfg, revision)
    finally:
        engine.dispose()


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
