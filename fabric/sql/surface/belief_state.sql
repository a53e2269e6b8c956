CREATE OR REPLACE FUNCTION fabric_api.belief_state(
    p_org text, p_valid_at timestamptz DEFAULT now(), p_known_at timestamptz DEFAULT now(),
    p_include_superseded boolean DEFAULT false)
RETURNS SETOF fabric_api.memory_versions LANGUAGE sql STABLE AS $$
    SELECT v.* FROM fabric_api.memory_versions v
    WHERE v.org = p_org
      AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at,
                           p_valid_at, p_known_at, p_include_superseded)
$$;
