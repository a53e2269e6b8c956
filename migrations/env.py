"""Alembic environment. Tests and `fabric migrate` pass a live connection in
`config.attributes["connection"]`; the `alembic` command line uses DATABASE_URL
(or starts the embedded server)."""

from __future__ import annotations

from alembic import context
from fabric.config import Settings
from fabric.schema import SCHEMA, build_metadata

config = context.config


def _dim() -> int:
    return int(config.attributes.get("embedding_dim") or Settings.from_env().embedding_dim)


target_metadata = build_metadata(_dim())


def include_name(name, type_, parent_names):
    # fabric owns two schemas; leave everything else in the database alone.
    if type_ == "schema":
        return name == SCHEMA
    return True


def _configure(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_schemas=True,
        include_name=include_name,
        version_table_schema="public",
        compare_type=True,
    )


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    from fabric.db import sqlalchemy_engine
    from fabric.servers import postgres_url

    settings = Settings.from_env()
    engine = sqlalchemy_engine(settings.database_url or postgres_url(settings.data_dir))
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline mode is not supported: fabric's migrations read the database's pgvector version")
run_migrations_online()
