"""current_value follows the key's supersession chain to a memory without a key.

Written out of order, the newest version of a fact may come first with no key its sentence states
("Bäckerei Huber now opens its doors at 07:00."); the older version, placed after it as its history,
brings the key and is superseded by it. current_value found only that history. It now also returns the
memories without a key that supersede the key's versions (as believed at known_at), so the key's
current value is the chain's live version. Nodes are never updated: the key is followed, not copied.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from alembic import op

from fabric.sql import surface

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# The body before this revision, restored by downgrade (the current one is fabric/sql/surface/current_value.sql).
_BEFORE = """
CREATE OR REPLACE FUNCTION fabric_api.current_value(
    p_org text, p_subject text, p_relation text,
    p_valid_at timestamptz DEFAULT now(), p_known_at timestamptz DEFAULT now())
RETURNS SETOF fabric_api.memory_versions LANGUAGE sql STABLE AS $$
    SELECT v.* FROM fabric_api.memory_versions v
    WHERE v.org = p_org AND v.subject = p_subject AND v.relation = p_relation
      AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at, p_valid_at, p_known_at)
    ORDER BY v.valid_from DESC, v.recorded_at DESC
    LIMIT 1
$$;
"""


def upgrade() -> None:
    op.execute(surface.sql("current_value"))


def downgrade() -> None:
    op.execute(_BEFORE)
