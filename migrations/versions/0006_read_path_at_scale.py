"""The read path at scale: fabric.current_embeddings (the embeddings of current memories, with an
HNSW index of their own), fabric.term_counts (per-org document frequencies for the lexical leg) and
a full-text index that knows the org.

Current-state reads (no valid_at / known_at: the common case) search only what can be current, so
the graph they walk carries neither superseded versions nor retracted memories. A row is here while
its memory is believed now (a version with expired_at IS NULL) and that version is not a superseded
one whose valid time has already ended. Rows that end later in valid time stay until the next change
of the memory: the read still checks fabric_api.holds, so an extra row costs a filtered candidate,
never a wrong answer, and a memory that is not here cannot hold now.

Kept by triggers on fabric.memory_versions (every writer: placement, retraction, revert, replay,
source invalidation), statement-level so a bulk write costs one statement. A separate table rather
than a partial index on fabric.memories: the flag a partial index needs would be an UPDATE of the
memories row on every supersession, and each such UPDATE inserts a new entry into the full HNSW
index too (the row carries the vector).

fabric.term_counts holds, per org and lexeme, how many memories contain it, kept by a statement
trigger on fabric.memories (memories are never deleted). The lexical leg skips, without scanning, a
term so common in the org that it could only be a stop word; rarer terms are scanned through
ix_memories_search_text, now a two-column GIN index on (ARRAY[org], search_text), so the scan of a
term intersects it with the org inside the index instead of visiting every org's matching rows.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from alembic import context, op

from fabric.config import Settings

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SERVICE = "fabric_service"
READER = "fabric_reader"


def _dim() -> int:
    return int(context.config.attributes.get("embedding_dim") or Settings.from_env().embedding_dim)


def upgrade() -> None:
    op.execute(f"""
    CREATE TABLE fabric.current_embeddings (
        org        text NOT NULL,
        memory_id  uuid NOT NULL,
        embedding  vector({_dim()}) NOT NULL,
        CONSTRAINT pk_current_embeddings PRIMARY KEY (org, memory_id),
        CONSTRAINT fk_current_embeddings_org_memory_id_memories FOREIGN KEY (org, memory_id)
            REFERENCES fabric.memories (org, id)
    );
    CREATE INDEX ix_current_embeddings_embedding_hnsw ON fabric.current_embeddings
        USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
    COMMENT ON TABLE fabric.current_embeddings IS
        'The embeddings of the memories that can hold now (believed, and not superseded with their valid '
        'time ended), kept by triggers on fabric.memory_versions: current-state search walks this HNSW '
        'index only. Time-travel reads use fabric.memories.';

    -- Re-decide membership for the memories a statement touched. SECURITY DEFINER: a service role
    -- writes versions of its own org; the table follows whoever wrote them.
    CREATE FUNCTION fabric.sync_current_embeddings() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $$
    BEGIN
        WITH touched AS (
            SELECT DISTINCT org, memory_id FROM changed
        ),
        state AS (
            SELECT t.org, t.memory_id,
                   EXISTS (SELECT 1 FROM fabric.memory_versions v
                           WHERE v.org = t.org AND v.memory_id = t.memory_id AND v.expired_at IS NULL
                             AND (v.state = 'live' OR v.valid_to IS NULL OR v.valid_to > now())) AS is_current
            FROM touched t
        ),
        gone AS (
            DELETE FROM fabric.current_embeddings c USING state s
            WHERE NOT s.is_current AND c.org = s.org AND c.memory_id = s.memory_id
        )
        INSERT INTO fabric.current_embeddings (org, memory_id, embedding)
        SELECT m.org, m.id, m.embedding
        FROM state s JOIN fabric.memories m ON m.org = s.org AND m.id = s.memory_id
        WHERE s.is_current
        ON CONFLICT (org, memory_id) DO NOTHING;
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER current_embeddings_on_insert AFTER INSERT ON fabric.memory_versions
        REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION fabric.sync_current_embeddings();
    CREATE TRIGGER current_embeddings_on_update AFTER UPDATE ON fabric.memory_versions
        REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION fabric.sync_current_embeddings();
    CREATE TRIGGER current_embeddings_on_delete AFTER DELETE ON fabric.memory_versions
        REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION fabric.sync_current_embeddings();

    INSERT INTO fabric.current_embeddings (org, memory_id, embedding)
    SELECT m.org, m.id, m.embedding
    FROM fabric.memories m
    WHERE EXISTS (SELECT 1 FROM fabric.memory_versions v
                  WHERE v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
                    AND (v.state = 'live' OR v.valid_to IS NULL OR v.valid_to > now()));

    CREATE TABLE fabric.term_counts (
        org       text NOT NULL,
        lexeme    text NOT NULL,
        memories  bigint NOT NULL,
        CONSTRAINT pk_term_counts PRIMARY KEY (org, lexeme)
    );
    COMMENT ON TABLE fabric.term_counts IS
        'Per org and lexeme of search_text: how many memories contain it (every state). Kept by a trigger '
        'on fabric.memories; the lexical search skips terms too common to weigh anything.';
    -- Sorted upserts: two statements counting the same lexemes lock them in the same order.
    CREATE FUNCTION fabric.count_terms() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $$
    BEGIN
        INSERT INTO fabric.term_counts AS t (org, lexeme, memories)
        SELECT a.org, l.lexeme, count(*)
        FROM added a CROSS JOIN LATERAL unnest(a.search_text) AS l
        GROUP BY a.org, l.lexeme
        ORDER BY a.org, l.lexeme
        ON CONFLICT (org, lexeme) DO UPDATE SET memories = t.memories + excluded.memories;
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER term_counts_on_insert AFTER INSERT ON fabric.memories
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION fabric.count_terms();
    INSERT INTO fabric.term_counts (org, lexeme, memories)
    SELECT m.org, l.lexeme, count(*)
    FROM fabric.memories m CROSS JOIN LATERAL unnest(m.search_text) AS l
    GROUP BY m.org, l.lexeme;

    DROP INDEX fabric.ix_memories_search_text;
    CREATE INDEX ix_memories_search_text ON fabric.memories USING gin ((ARRAY[org]), search_text);
    """)
    for table in ("current_embeddings", "term_counts"):
        op.execute(f"""
        ALTER TABLE fabric.{table} ENABLE ROW LEVEL SECURITY;
        CREATE POLICY tenant_isolation ON fabric.{table} AS PERMISSIVE FOR ALL TO {SERVICE}
            USING (org = (SELECT fabric.tenant_org()))
            WITH CHECK (org = (SELECT fabric.tenant_org()));
        CREATE POLICY api_reader ON fabric.{table} AS PERMISSIVE FOR SELECT TO {READER}
            USING (CASE WHEN (SELECT fabric.sees_all_orgs()) THEN true
                        ELSE org = (SELECT fabric.tenant_org()) END);
        GRANT SELECT ON fabric.{table} TO {SERVICE}, {READER};
        """)


def downgrade() -> None:
    op.execute("""
    DROP TRIGGER current_embeddings_on_insert ON fabric.memory_versions;
    DROP TRIGGER current_embeddings_on_update ON fabric.memory_versions;
    DROP TRIGGER current_embeddings_on_delete ON fabric.memory_versions;
    DROP FUNCTION fabric.sync_current_embeddings();
    DROP TABLE fabric.current_embeddings;
    DROP TRIGGER term_counts_on_insert ON fabric.memories;
    DROP FUNCTION fabric.count_terms();
    DROP TABLE fabric.term_counts;
    DROP INDEX fabric.ix_memories_search_text;
    CREATE INDEX ix_memories_search_text ON fabric.memories USING gin (search_text);
    """)
