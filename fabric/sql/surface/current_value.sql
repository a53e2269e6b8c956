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
