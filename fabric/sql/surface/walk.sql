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
    members AS (
        SELECT b.hops, v.* FROM branch b
        JOIN fabric_api.memory_versions v ON v.org = p_org AND v.id = b.id
      UNION ALL                         -- from a root: its whole tree shares its root_id, read with
                                        -- the versions in one pass (not found again by id)
        SELECT v.depth - s.depth, v.* FROM start s
        JOIN fabric_api.memory_versions v ON v.org = p_org AND v.root_id = s.id
        WHERE s.is_root AND (p_max_depth IS NULL OR v.depth - s.depth <= p_max_depth)
    )
    SELECT w.org, w.id, w.parent_id, w.root_id, w.depth, w.content, w.subject, w.relation, w.value,
           w.valid_from, w.valid_to, w.recorded_at, w.expired_at, w.superseded_by, w.placement,
           w.source, w.kind, w.durability, w.metadata, w.version, w.state, w.decision_id, w.write_id
    FROM members w
    WHERE fabric_api.holds(w.valid_from, w.valid_to, w.recorded_at, w.expired_at,
                           p_valid_at, p_known_at, p_include_superseded)
    ORDER BY w.hops, w.recorded_at, w.id
$$;
