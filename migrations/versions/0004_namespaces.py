"""Namespaces: subjects as '.'-separated label paths (the LangGraph store's namespaces), for analysts
and for `fabric.integrations.langgraph`.

- `fabric_api.under(subject, prefix)`: is the subject the namespace `prefix` or below it, by whole
  labels ('alice' matches 'alice' and 'alice.notes', never 'alicex'); no pattern syntax, so '%' and
  '_' in labels are literal. An inlinable SQL function: with a constant prefix the planner turns it
  into a range on `ix_memories_org_subject_pattern`, under row-level security too.
- `fabric_api.namespaces(org, prefix, valid_at, known_at)`: the subjects holding memories at that
  time, with how many, below an optional prefix.
- decision action 'delete': a key's value ended (its valid time closed now), as the store's delete.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from alembic import op

from fabric.sql import surface

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

ACTIONS_BEFORE = "'place', 'revert', 'retract', 'replay', 'invalidate_source'"
ACTIONS_AFTER = ACTIONS_BEFORE + ", 'delete'"


def upgrade() -> None:
    op.execute("""
    -- Prefix search over subjects: a range in byte order (text_pattern_ops), whatever the collation.
    CREATE INDEX ix_memories_org_subject_pattern ON fabric.memories (org, subject text_pattern_ops)
        WHERE subject IS NOT NULL;
    """)
    op.execute(surface.sql("under", "namespaces"))
    op.execute("""
    COMMENT ON FUNCTION fabric_api.under(text, text) IS
        'under(subject, prefix): the subject is the namespace prefix or below it, by whole ''.''-separated '
        'labels (''alice'' matches ''alice'' and ''alice.notes'', not ''alicex'').';
    COMMENT ON FUNCTION fabric_api.namespaces(text, text, timestamptz, timestamptz) IS
        'namespaces(org[, prefix, valid_at, known_at]): the subjects (namespaces) holding memories then, '
        'with how many, below an optional prefix.';
    """)
    op.execute("ALTER TABLE fabric.decisions DROP CONSTRAINT ck_decisions_action")
    op.execute(f"ALTER TABLE fabric.decisions ADD CONSTRAINT ck_decisions_action CHECK (action IN ({ACTIONS_AFTER}))")


def downgrade() -> None:
    op.execute("""
    DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM fabric.decisions WHERE action = 'delete') THEN
            RAISE EXCEPTION 'decisions with action ''delete'' exist: the previous revision cannot hold '
                            'them (nothing was changed)';
        END IF;
    END $$""")
    op.execute("ALTER TABLE fabric.decisions DROP CONSTRAINT ck_decisions_action")
    op.execute(f"ALTER TABLE fabric.decisions ADD CONSTRAINT ck_decisions_action "
               f"CHECK (action IN ({ACTIONS_BEFORE}))")
    op.execute("""
    DROP FUNCTION fabric_api.namespaces(text, text, timestamptz, timestamptz);
    DROP FUNCTION fabric_api.under(text, text);
    DROP INDEX fabric.ix_memories_org_subject_pattern;
    """)
