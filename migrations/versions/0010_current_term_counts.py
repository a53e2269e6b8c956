"""term_counts.current_memories: per org and lexeme, how many current memories contain it.

A current-state read's lexical leg weighs a term by the memories that hold now, and a term in df_cap
or more of them weighs nothing. Before this, the only count kept was over memories of every state, so
a term in 100-1,000 of an org's memories was scanned (GIN bitmap, heap, version join, up to df_cap
rows) only to find it weighed nothing: ~5 ms of a 4k-memory org's hybrid search at 100k memories
(docs/performance.md, fourth pass). With a count of the memories in fabric.current_embeddings (a
superset of those that hold now), a current-state read skips such a term without scanning it.

Kept by statement triggers on fabric.current_embeddings, so every writer that changes which memories
are current (the triggers of migration 0006 on memory_versions) keeps it too.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    ALTER TABLE fabric.term_counts ADD COLUMN current_memories bigint NOT NULL DEFAULT 0;
    COMMENT ON COLUMN fabric.term_counts.current_memories IS
        'How many of the org''s current memories (fabric.current_embeddings) contain the lexeme. Kept by '
        'triggers on fabric.current_embeddings; a current-state search skips a term in df_cap or more.';

    -- +1 per lexeme of each memory entering current_embeddings, -1 per lexeme of each one leaving.
    -- Sorted upserts: two statements counting the same lexemes lock them in the same order.
    CREATE FUNCTION fabric.count_current_terms() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $$
    DECLARE
        sign bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    BEGIN
        INSERT INTO fabric.term_counts AS t (org, lexeme, memories, current_memories)
        SELECT c.org, l.lexeme, 0, sign * count(*)
        FROM changed c
        JOIN fabric.memories m ON m.org = c.org AND m.id = c.memory_id
        CROSS JOIN LATERAL unnest(m.search_text) AS l
        GROUP BY c.org, l.lexeme
        ORDER BY c.org, l.lexeme
        ON CONFLICT (org, lexeme) DO UPDATE SET current_memories = t.current_memories + excluded.current_memories;
        RETURN NULL;
    END
    $$;
    CREATE TRIGGER current_terms_on_insert AFTER INSERT ON fabric.current_embeddings
        REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION fabric.count_current_terms();
    CREATE TRIGGER current_terms_on_delete AFTER DELETE ON fabric.current_embeddings
        REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION fabric.count_current_terms();

    UPDATE fabric.term_counts t SET current_memories = c.n
    FROM (SELECT c.org, l.lexeme, count(*) AS n
          FROM fabric.current_embeddings c
          JOIN fabric.memories m ON m.org = c.org AND m.id = c.memory_id
          CROSS JOIN LATERAL unnest(m.search_text) AS l
          GROUP BY c.org, l.lexeme) c
    WHERE t.org = c.org AND t.lexeme = c.lexeme;
    """)


def downgrade() -> None:
    op.execute("""
    DROP TRIGGER current_terms_on_insert ON fabric.current_embeddings;
    DROP TRIGGER current_terms_on_delete ON fabric.current_embeddings;
    DROP FUNCTION fabric.count_current_terms();
    ALTER TABLE fabric.term_counts DROP COLUMN current_memories;
    """)
