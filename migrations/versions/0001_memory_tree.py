"""The bi-temporal memory tree: orgs, writes (intake), decisions (audit log),
memories (immutable tree nodes with their embedding) and memory_versions
(valid time x transaction time; a change adds a version, never overwrites one).

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from alembic import context, op

from fabric.config import Settings
from fabric.sql import surface

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _dim() -> int:
    return int(context.config.attributes.get("embedding_dim") or Settings.from_env().embedding_dim)


def upgrade() -> None:
    dim = _dim()
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute("CREATE SCHEMA IF NOT EXISTS fabric")
    op.execute("""
    CREATE TABLE fabric.orgs (
        org         text NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT pk_orgs PRIMARY KEY (org)
    );

    -- Intake: every accepted write, durable before it is queued. Postgres is the source of truth.
    CREATE TABLE fabric.writes (
        org          text NOT NULL,
        id           uuid NOT NULL,
        content      text NOT NULL,
        subject      text, relation text, value text,
        valid_from   timestamptz NOT NULL,
        valid_to     timestamptz,
        source       text, kind text, durability text,
        metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
        status       text NOT NULL DEFAULT 'pending',
        error        text,
        attempts     integer NOT NULL DEFAULT 0,
        job_id       text,
        received_at  timestamptz NOT NULL DEFAULT now(),
        settled_at   timestamptz,
        memory_id    uuid,
        decision_id  uuid,
        CONSTRAINT pk_writes PRIMARY KEY (org, id),
        CONSTRAINT fk_writes_org_orgs FOREIGN KEY (org) REFERENCES fabric.orgs (org),
        CONSTRAINT ck_writes_status CHECK (status IN ('pending', 'placed', 'duplicate', 'parked')),
        CONSTRAINT ck_writes_valid_interval CHECK (valid_to IS NULL OR valid_to > valid_from)
    );
    CREATE INDEX ix_writes_pending ON fabric.writes (org, received_at) WHERE status = 'pending';

    -- The audit log: every placement and every later mutation, each with its reason.
    CREATE TABLE fabric.decisions (
        org                text NOT NULL,
        id                 uuid NOT NULL,
        action             text NOT NULL,
        kind               text,
        write_id           uuid,
        memory_id          uuid,
        target_id          uuid,
        validator          text,
        model              text,
        reason             text,
        confidence         real,
        latency_ms         real,
        prompt_tokens      integer,
        completion_tokens  integer,
        created_at         timestamptz NOT NULL DEFAULT now(),
        reverts            uuid,
        reverted_by        uuid,
        replay_id          uuid,
        details            jsonb NOT NULL DEFAULT '{}'::jsonb,
        CONSTRAINT pk_decisions PRIMARY KEY (org, id),
        CONSTRAINT fk_decisions_org_orgs FOREIGN KEY (org) REFERENCES fabric.orgs (org),
        CONSTRAINT fk_decisions_org_write_id_writes FOREIGN KEY (org, write_id) REFERENCES fabric.writes (org, id),
        CONSTRAINT ck_decisions_action
            CHECK (action IN ('place', 'revert', 'retract', 'replay', 'invalidate_source')),
        CONSTRAINT ck_decisions_kind
            CHECK (kind IS NULL OR kind IN ('duplicate', 'child_update', 'contradiction_fork', 'new_branch'))
    );
    CREATE INDEX ix_decisions_org_created_at ON fabric.decisions (org, created_at);
    CREATE INDEX ix_decisions_org_write_id ON fabric.decisions (org, write_id);
    """)
    op.execute(f"""
    -- Tree nodes: immutable once placed (the tree shape never changes, so walks never lose a node).
    CREATE TABLE fabric.memories (
        org         text NOT NULL,
        id          uuid NOT NULL,
        write_id    uuid,
        parent_id   uuid,
        root_id     uuid NOT NULL,
        depth       integer NOT NULL DEFAULT 0,
        content     text NOT NULL,
        subject     text, relation text, value text,
        source      text, kind text, durability text,
        metadata    jsonb NOT NULL DEFAULT '{{}}'::jsonb,
        placement   text NOT NULL,
        embedding   vector({dim}) NOT NULL,
        created_at  timestamptz NOT NULL,
        -- Lexical twin of the embedding, for hybrid retrieval: the text plus its structured key.
        search_text tsvector GENERATED ALWAYS AS (
            to_tsvector('english', content || ' ' || coalesce(subject, '') || ' ' || coalesce(relation, '')
                        || ' ' || coalesce(value, ''))) STORED,
        CONSTRAINT pk_memories PRIMARY KEY (org, id),
        CONSTRAINT fk_memories_org_parent_id_memories FOREIGN KEY (org, parent_id) REFERENCES fabric.memories (org, id),
        CONSTRAINT fk_memories_org_root_id_memories FOREIGN KEY (org, root_id) REFERENCES fabric.memories (org, id),
        CONSTRAINT fk_memories_org_write_id_writes FOREIGN KEY (org, write_id) REFERENCES fabric.writes (org, id),
        CONSTRAINT ck_memories_depth CHECK (depth >= 0)
    );
    CREATE INDEX ix_memories_org_parent_id ON fabric.memories (org, parent_id);
    CREATE INDEX ix_memories_org_root_id ON fabric.memories (org, root_id);
    CREATE INDEX ix_memories_key ON fabric.memories (org, subject, relation) WHERE subject IS NOT NULL;
    CREATE INDEX ix_memories_org_source ON fabric.memories (org, source) WHERE source IS NOT NULL;
    CREATE INDEX ix_memories_search_text ON fabric.memories USING gin (search_text);
    CREATE INDEX ix_memories_embedding_hnsw ON fabric.memories
        USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
    """)
    op.execute("""
    -- What the store believed about each memory, and when. A change expires the current
    -- version (expired_at) and inserts the next one: nothing believed is ever overwritten.
    CREATE TABLE fabric.memory_versions (
        org            text NOT NULL,
        memory_id      uuid NOT NULL,
        version        integer NOT NULL,
        valid_from     timestamptz NOT NULL,
        valid_to       timestamptz,
        state          text NOT NULL,
        superseded_by  uuid,
        decision_id    uuid NOT NULL,
        recorded_at    timestamptz NOT NULL,
        expired_at     timestamptz,
        CONSTRAINT pk_memory_versions PRIMARY KEY (org, memory_id, version),
        CONSTRAINT fk_memory_versions_org_memory_id_memories
            FOREIGN KEY (org, memory_id) REFERENCES fabric.memories (org, id),
        CONSTRAINT fk_memory_versions_org_superseded_by_memories
            FOREIGN KEY (org, superseded_by) REFERENCES fabric.memories (org, id),
        CONSTRAINT fk_memory_versions_org_decision_id_decisions
            FOREIGN KEY (org, decision_id) REFERENCES fabric.decisions (org, id),
        CONSTRAINT ck_memory_versions_state CHECK (state IN ('live', 'superseded')),
        CONSTRAINT ck_memory_versions_valid_interval CHECK (valid_to IS NULL OR valid_to >= valid_from),
        CONSTRAINT ck_memory_versions_tx_interval CHECK (expired_at IS NULL OR expired_at >= recorded_at)
    );
    CREATE UNIQUE INDEX ix_memory_versions_current ON fabric.memory_versions (org, memory_id)
        WHERE expired_at IS NULL;
    CREATE INDEX ix_memory_versions_superseded_by ON fabric.memory_versions (org, superseded_by)
        WHERE superseded_by IS NOT NULL;
    """)
    _create_api()


def _create_api() -> None:
    """The read surface: one implementation of each temporal query, used by the library and analysts.

    The bodies are the current ones, from fabric/sql/surface/ (docs/sql.md, "How the surface is
    defined"): each works on this revision's tables. walk's first body (a recursive CTE only) is kept
    in 0003, whose downgrade restores it."""
    op.execute("CREATE SCHEMA IF NOT EXISTS fabric_api")
    op.execute(surface.sql("memory_nodes", "memory_versions", "holds", "belief_state", "current_value", "walk",
                           "history"))


def downgrade() -> None:
    op.execute("DROP SCHEMA IF EXISTS fabric_api CASCADE")
    op.execute("DROP TABLE IF EXISTS fabric.memory_versions, fabric.memories, fabric.decisions, "
               "fabric.writes, fabric.orgs")
    op.execute("DROP SCHEMA IF EXISTS fabric")
