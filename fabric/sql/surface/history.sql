-- The supersession chain through a memory, oldest first: what it replaced and what replaced it.
CREATE OR REPLACE FUNCTION fabric_api.history(p_org text, p_memory_id uuid)
RETURNS SETOF fabric_api.memory_versions LANGUAGE sql STABLE AS $$
    WITH RECURSIVE
    older (id, n) AS (
        SELECT p_memory_id, 0
      UNION
        SELECT v.id, o.n - 1 FROM older o
        JOIN fabric_api.memory_versions v
          ON v.org = p_org AND v.superseded_by = o.id AND v.expired_at IS NULL
        WHERE o.n > -10000
    ),
    newer (id, n) AS (
        SELECT p_memory_id, 0
      UNION
        SELECT v.superseded_by, w.n + 1 FROM newer w
        JOIN fabric_api.memory_versions v ON v.org = p_org AND v.id = w.id AND v.expired_at IS NULL
        WHERE v.superseded_by IS NOT NULL AND w.n < 10000
    ),
    latest AS (   -- the newest version of each memory on the chain (a retracted one has no current)
        SELECT DISTINCT ON (v.id) v.* FROM fabric_api.memory_versions v
        WHERE v.org = p_org AND v.id IN (SELECT id FROM older UNION SELECT id FROM newer)
        ORDER BY v.id, v.version DESC
    )
    SELECT * FROM latest ORDER BY valid_from, recorded_at
$$;
