"""The tables, declared for Alembic (`alembic check` compares them with the migrated database).

The migrations in `migrations/versions/` are the source of truth for the DDL; this module
mirrors them so drift is caught. Every key starts with `org`, so the schema shards by tenant.
"""

from __future__ import annotations

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger, CheckConstraint, Column, Computed, DateTime, ForeignKeyConstraint, Index, Integer, MetaData,
    PrimaryKeyConstraint, REAL, Table, Text, Uuid, text,
)
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR

SCHEMA = "fabric"
API_SCHEMA = "fabric_api"

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

TS = DateTime(timezone=True)


def build_metadata(dim: int = 384) -> MetaData:
    md = MetaData(schema=SCHEMA, naming_convention=NAMING)

    Table(
        "orgs", md,
        Column("org", Text, nullable=False),
        Column("created_at", TS, nullable=False, server_default=text("now()")),
        PrimaryKeyConstraint("org"),
    )

    Table(
        "writes", md,
        Column("org", Text, nullable=False),
        Column("id", Uuid, nullable=False),
        Column("content", Text, nullable=False),
        Column("subject", Text), Column("relation", Text), Column("value", Text),
        Column("valid_from", TS, nullable=False),
        Column("valid_to", TS),
        Column("source", Text), Column("kind", Text), Column("durability", Text),
        Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        Column("status", Text, nullable=False, server_default=text("'pending'")),
        Column("error", Text),
        Column("attempts", Integer, nullable=False, server_default=text("0")),
        Column("job_id", Text),
        Column("received_at", TS, nullable=False, server_default=text("now()")),
        Column("settled_at", TS),
        Column("memory_id", Uuid),
        Column("decision_id", Uuid),
        PrimaryKeyConstraint("org", "id"),
        ForeignKeyConstraint(["org"], ["fabric.orgs.org"]),
        CheckConstraint("status IN ('pending', 'placed', 'duplicate', 'parked')", name="status"),
        CheckConstraint("valid_to IS NULL OR valid_to > valid_from", name="valid_interval"),
        Index("ix_writes_pending", "org", "received_at", postgresql_where=text("status = 'pending'")),
        # Migration 0007: parked writes counted per org (metrics, open_writes) without a table scan.
        Index("ix_writes_parked", "org", "received_at", postgresql_where=text("status = 'parked'")),
    )

    Table(
        "decisions", md,
        Column("org", Text, nullable=False),
        Column("id", Uuid, nullable=False),
        Column("action", Text, nullable=False),
        Column("kind", Text),
        Column("write_id", Uuid),
        Column("memory_id", Uuid),
        Column("target_id", Uuid),
        Column("validator", Text),
        Column("model", Text),
        Column("reason", Text),
        Column("confidence", REAL),
        Column("latency_ms", REAL),
        Column("prompt_tokens", Integer),
        Column("completion_tokens", Integer),
        Column("created_at", TS, nullable=False, server_default=text("now()")),
        Column("reverts", Uuid),
        Column("reverted_by", Uuid),
        Column("replay_id", Uuid),
        Column("details", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        PrimaryKeyConstraint("org", "id"),
        ForeignKeyConstraint(["org"], ["fabric.orgs.org"]),
        ForeignKeyConstraint(["org", "write_id"], ["fabric.writes.org", "fabric.writes.id"]),
        CheckConstraint(
            "action IN ('place', 'revert', 'retract', 'replay', 'invalidate_source', 'delete')", name="action"),
        CheckConstraint(
            "kind IS NULL OR kind IN ('duplicate', 'child_update', 'contradiction_fork', 'new_branch')",
            name="kind"),
        Index("ix_decisions_org_created_at", "org", "created_at"),
        Index("ix_decisions_org_write_id", "org", "write_id"),
    )

    Table(
        "memories", md,
        Column("org", Text, nullable=False),
        Column("id", Uuid, nullable=False),
        Column("write_id", Uuid),
        Column("parent_id", Uuid),
        Column("root_id", Uuid, nullable=False),
        Column("depth", Integer, nullable=False, server_default=text("0")),
        Column("content", Text, nullable=False),
        Column("subject", Text), Column("relation", Text), Column("value", Text),
        Column("source", Text), Column("kind", Text), Column("durability", Text),
        Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
        Column("placement", Text, nullable=False),
        Column("embedding", Vector(dim), nullable=False),
        Column("created_at", TS, nullable=False),
        Column("search_text", TSVECTOR, Computed(
            "to_tsvector('english'::regconfig, content || ' ' || COALESCE(subject, '') || ' ' || "
            "COALESCE(relation, '') || ' ' || COALESCE(value, ''))", persisted=True)),
        PrimaryKeyConstraint("org", "id"),
        ForeignKeyConstraint(["org", "parent_id"], ["fabric.memories.org", "fabric.memories.id"]),
        ForeignKeyConstraint(["org", "root_id"], ["fabric.memories.org", "fabric.memories.id"]),
        ForeignKeyConstraint(["org", "write_id"], ["fabric.writes.org", "fabric.writes.id"]),
        CheckConstraint("depth >= 0", name="depth"),
        Index("ix_memories_org_parent_id", "org", "parent_id"),
        Index("ix_memories_org_root_id", "org", "root_id"),
        Index("ix_memories_key", "org", "subject", "relation", postgresql_where=text("subject IS NOT NULL")),
        Index("ix_memories_org_source", "org", "source", postgresql_where=text("source IS NOT NULL")),
        Index("ix_memories_org_subject_pattern", "org", "subject", postgresql_ops={"subject": "text_pattern_ops"},
              postgresql_where=text("subject IS NOT NULL")),
        # Migration 0006: the org first, so a term's scan is intersected with the org inside the index.
        # Migration 0009: a 64 kB pending list, which every scan of the index reads first.
        Index("ix_memories_search_text", text("(ARRAY[org])"), "search_text", postgresql_using="gin",
              postgresql_with={"gin_pending_list_limit": 64}),
        Index("ix_memories_embedding_hnsw", "embedding", postgresql_using="hnsw",
              postgresql_with={"m": 16, "ef_construction": 64},
              postgresql_ops={"embedding": "vector_cosine_ops"}),
    )

    Table(
        "memory_versions", md,
        Column("org", Text, nullable=False),
        Column("memory_id", Uuid, nullable=False),
        Column("version", Integer, nullable=False),
        Column("valid_from", TS, nullable=False),
        Column("valid_to", TS),
        Column("state", Text, nullable=False),
        Column("superseded_by", Uuid),
        Column("decision_id", Uuid, nullable=False),
        Column("recorded_at", TS, nullable=False),
        Column("expired_at", TS),
        PrimaryKeyConstraint("org", "memory_id", "version"),
        ForeignKeyConstraint(["org", "memory_id"], ["fabric.memories.org", "fabric.memories.id"]),
        ForeignKeyConstraint(["org", "superseded_by"], ["fabric.memories.org", "fabric.memories.id"]),
        ForeignKeyConstraint(["org", "decision_id"], ["fabric.decisions.org", "fabric.decisions.id"]),
        CheckConstraint("state IN ('live', 'superseded')", name="state"),
        CheckConstraint("valid_to IS NULL OR valid_to >= valid_from", name="valid_interval"),
        CheckConstraint("expired_at IS NULL OR expired_at >= recorded_at", name="tx_interval"),
        Index("ix_memory_versions_current", "org", "memory_id", unique=True,
              postgresql_where=text("expired_at IS NULL")),
        Index("ix_memory_versions_superseded_by", "org", "superseded_by",
              postgresql_where=text("superseded_by IS NOT NULL")),
    )

    # Migration 0002: which org each service role may act for (row-level security reads it).
    Table(
        "tenant_grants", md,
        Column("role", Text, nullable=False),
        Column("org", Text, nullable=False),
        Column("granted_at", TS, nullable=False, server_default=text("now()")),
        PrimaryKeyConstraint("role", "org"),
        comment="Which orgs each service role (a member of fabric_service) may act for; "
                "`fabric roles grant/revoke`.",
    )

    # Migration 0006: the embeddings current-state search walks (kept by triggers on memory_versions).
    Table(
        "current_embeddings", md,
        Column("org", Text, nullable=False),
        Column("memory_id", Uuid, nullable=False),
        Column("embedding", Vector(dim), nullable=False),
        PrimaryKeyConstraint("org", "memory_id"),
        ForeignKeyConstraint(["org", "memory_id"], ["fabric.memories.org", "fabric.memories.id"]),
        Index("ix_current_embeddings_embedding_hnsw", "embedding", postgresql_using="hnsw",
              postgresql_with={"m": 16, "ef_construction": 64},
              postgresql_ops={"embedding": "vector_cosine_ops"}),
        comment="The embeddings of the memories that can hold now (believed, and not superseded with their "
                "valid time ended), kept by triggers on fabric.memory_versions: current-state search walks "
                "this HNSW index only. Time-travel reads use fabric.memories.",
    )

    # Migration 0006: per-org document frequencies of search_text's lexemes (kept by a trigger).
    Table(
        "term_counts", md,
        Column("org", Text, nullable=False),
        Column("lexeme", Text, nullable=False),
        Column("memories", BigInteger, nullable=False),
        # Migration 0010: how many of them are current (fabric.current_embeddings), kept by its triggers.
        Column("current_memories", BigInteger, nullable=False, server_default=text("0"),
               comment="How many of the org's current memories (fabric.current_embeddings) contain the lexeme. "
                       "Kept by triggers on fabric.current_embeddings; a current-state search skips a term "
                       "in df_cap or more."),
        PrimaryKeyConstraint("org", "lexeme"),
        comment="Per org and lexeme of search_text: how many memories contain it (every state). Kept by a "
                "trigger on fabric.memories; the lexical search skips terms too common to weigh anything.",
    )
    return md


metadata = build_metadata()
