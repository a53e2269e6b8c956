"""walk(): from a root, read the branch and its versions in one pass.

0003's walk found a root's members through root_id, then fetched each one again by id through the
memory_versions view (a primary-key probe of memories per node, then one of memory_versions). Now
the view is joined on root_id directly, so each member's memory row is read once. Measured on a 20k
bench database, 1,000-node subtree (697 rows): server CPU p50 14.7 -> 9.8 ms (docs/performance.md,
fifth pass). Same rows, same order, same signature; walks from an inner node are unchanged.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from alembic import op

from fabric.sql import surface

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# The body before this revision (0003's), restored by downgrade; the current one is fabric/sql/surface/walk.sql.
_BEFORE = """
CREATE OR REPLACE FUNCTION fabric_api.walk(
    p_org text, p_root uuid, p_include_superseded boolean DEFAULT false, p_max_depth integer DEFAULT NULL,
    p_valid_at timestamptz DEFAULT now(), p_known_at timestamptz DEFAULT now())
RETURNS SETOF fabric_api.memory_versions LANGUAGE sql STABLE AS $$
    WITH RECURSIVE
    start AS (
        SELECT n.id, n.parent_id IS NULL AS is_root, n.depth
        FROM fabric_api.memory_nodes n WHERE n.org = p_org AND n.id = p_root
    ),
    branch (id, hops, path) AS (
        SELECT s.id, 0, ARRAY[s.id] FROM start s WHERE NOT s.is_root
      UNION ALL
        SELECT c.id, b.hops + 1, b.path || c.id
        FROM branch b
        JOIN fabric_api.memory_nodes c ON c.org = p_org AND c.parent_id = b.id
        WHERE b.hops < coalesce(p_max_depth, 100000)
          AND c.id <> ALL (b.path)
    ),
    members (id, hops) AS (
        SELECT id, hops FROM branch
      UNION ALL
        SELECT n.id, n.depth - s.depth FROM start s
        JOIN fabric_api.memory_nodes n ON n.org = p_org AND n.root_id = s.id
        WHERE s.is_root AND (p_max_depth IS NULL OR n.depth - s.depth <= p_max_depth)
    )
    SELECT v.* FROM members b
    JOIN fabric_api.memory_versions v ON v.org = p_org AND v.id = b.id
    WHERE fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at,
                           p_valid_at, p_known_at, p_include_superseded)
    ORDER BY b.hops, v.recorded_at, v.id
$$;
"""


def upgrade() -> None:
    op.execute(surface.sql("walk"))


def downgrade() -> None:
    op.execute(_BEFORE)
