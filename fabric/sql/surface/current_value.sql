CREATE OR REPLACE FUNCTION fabric_api.current_value(
    p_org text, p_subject text, p_relation text,
    p_valid_at timestamptz DEFAULT now(), p_known_at timestamptz DEFAULT now())
RETURNS SETOF fabric_api.memory_versions LANGUAGE sql STABLE AS $$
    -- The key's versions, and the memories without a key that supersede them: a newer value written
    -- first, with no key its sentence states, is chained by placement to the older version that brought
    -- the key (written after it, as its history). The key follows that chain (as believed at known_at).
    WITH RECURSIVE successor(id) AS (
        SELECT v.superseded_by FROM fabric_api.memory_versions v
        WHERE v.org = p_org AND v.subject = p_subject AND v.relation = p_relation AND v.superseded_by IS NOT NULL
          AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at, p_valid_at, p_known_at, true)
        UNION
        SELECT v.superseded_by FROM successor s
        JOIN fabric_api.memory_versions v ON v.org = p_org AND v.id = s.id
        WHERE v.subject IS NULL AND v.superseded_by IS NOT NULL
          AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at, p_valid_at, p_known_at, true)
    )
    SELECT * FROM (
        SELECT v.* FROM fabric_api.memory_versions v
        WHERE v.org = p_org AND v.subject = p_subject AND v.relation = p_relation
          AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at, p_valid_at, p_known_at)
        UNION ALL
        SELECT v.* FROM fabric_api.memory_versions v
        WHERE v.org = p_org AND v.subject IS NULL AND v.id IN (SELECT id FROM successor)
          AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at, p_valid_at, p_known_at)
    ) found
    ORDER BY found.valid_from DESC, found.recorded_at DESC
    LIMIT 1
$$;
