"""walk(): a walk from a root reads its branch through root_id instead of recursing.

Tree nodes are immutable and carry root_id, so the subtree of a root is exactly the nodes with that
root_id; the recursion stays for walks from an inner node. Measured by `fabric bench scale` at 100k
memories, 1,000-node subtree: 12,261 -> 4,433 buffers, 30 -> 11 ms of server CPU
(docs/performance.md, proposal 5). Same rows, same order, same signature.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from alembic import op

from fabric.sql import surface

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SIGNATURE = "fabric_api.walk(text, uuid, boolean, integer, timestamptz, timestamptz)"

# The body before this revision, restored by downgrade (the current one is fabric/sql/surface/walk.sql).
RECURSIVE = """
CREATE OR REPLACE FUNCTION fabric_api.walk(
    p_org text, p_root uuid, p_include_superseded boolean DEFAULT false, p_max_depth integer DEFAULT NULL,
    p_valid_at timestamptz DEFAULT now(), p_known_at timestamptz DEFAULT now())
RETURNS SETOF fabric_api.memory_versions LANGUAGE sql STABLE AS $$
    WITH RECURSIVE branch (org, id, hops, path) AS (
        SELECT n.org, n.id, 0, ARRAY[n.id]
        FROM fabric_api.memory_nodes n WHERE n.org = p_org AND n.id = p_root
      UNION ALL
        SELECT c.org, c.id, b.hops + 1, b.path || c.id
        FROM branch b
        JOIN fabric_api.memory_nodes c ON c.org = b.org AND c.parent_id = b.id
        WHERE b.hops < coalesce(p_max_depth, 100000)   -- depth guard
          AND c.id <> ALL (b.path)                      -- cycle guard
    )
    SELECT v.* FROM branch b
    JOIN fabric_api.memory_versions v ON v.org = b.org AND v.id = b.id
    WHERE fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at,
                           p_valid_at, p_known_at, p_include_superseded)
    ORDER BY b.hops, v.recorded_at, v.id
$$;
"""


def upgrade() -> None:
    # A database migrated before 0001 loaded the surface files has the recursive body here; a fresh
    # one has this body already (docs/sql.md, "How the surface is defined").
    op.execute(surface.sql("walk"))
    op.execute(f"COMMENT ON FUNCTION {SIGNATURE} IS "
               "'walk(org, root, include_superseded[, max_depth, valid_at, known_at]): the subtree under root "
               "over tree nodes of any state, so a superseded node never hides its live descendants (from a "
               "root: the nodes sharing its root_id; from an inner node: a recursive CTE down parent_id); "
               "superseded or not-yet-valid nodes are left out of the output unless include_superseded. "
               "Ordered by hops from the root.'")


def downgrade() -> None:
    op.execute(RECURSIVE)
    op.execute(f"COMMENT ON FUNCTION {SIGNATURE} IS "
               "'walk(org, root, include_superseded[, max_depth, valid_at, known_at]): the subtree under root "
               "by a recursive CTE over tree nodes of any state, so a superseded node never hides its live "
               "descendants; superseded or not-yet-valid nodes are left out of the output unless "
               "include_superseded. Ordered by hops from the root.'")
