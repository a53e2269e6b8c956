CREATE OR REPLACE FUNCTION fabric_api.namespaces(
    p_org text, p_prefix text DEFAULT NULL,
    p_valid_at timestamptz DEFAULT now(), p_known_at timestamptz DEFAULT now())
RETURNS TABLE (namespace text, memories bigint) LANGUAGE sql STABLE AS $$
    SELECT v.subject, count(*)
    FROM fabric_api.memory_versions v
    WHERE v.org = p_org AND v.subject IS NOT NULL
      AND (p_prefix IS NULL OR fabric_api.under(v.subject, p_prefix))
      AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at, p_valid_at, p_known_at)
    GROUP BY v.subject
    ORDER BY v.subject
$$;
