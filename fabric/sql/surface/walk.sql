CREATE OR REPLACE FUNCTION fabric_api.walk(
    p_org text, p_root uuid, p_include_superseded boolean DEFAULT false, p_max_depth integer DEFAULT NULL,
    p_valid_at timestamptz DEFAULT now(), p_known_at timestamptz DEFAULT now())
RETURNS SETOF fabric_api.memory_versions LANGUAGE sql STABLE AS $$
    WITH RECURSIVE
    start AS (
        SELECT n.id, n.parent_id IS NULL AS is_root, n.depth
        FROM fabric_api.memory_nodes n WHERE n.org = p_org AND n.id = p_root
    ),
    branch (id, hops, path) AS (        -- from an inner node: recurse down parent_id
        SELECT s.id, 0, ARRAY[s.id] FROM start s WHERE NOT s.is_root
      UNION ALL
        SELECT c.id, b.hops + 1, b.path || c.id
        FROM branch b
        JOIN fabric_api.memory_nodes c ON c.org = p_org AND c.parent_id = b.id
        WHERE b.hops < coalesce(p_max_depth, 100000)   -- depth guard
          AND c.id <> ALL (b.path)                      -- cycle guard
    ),
    members (id, hops) AS (
        SELECT id, hops FROM branch
      UNION ALL                         -- from a root: its whole tree shares its root_id
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
