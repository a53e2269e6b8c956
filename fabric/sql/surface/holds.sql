-- The one temporal predicate. Valid time and transaction time are closed-open; NULL = open.
CREATE OR REPLACE FUNCTION fabric_api.holds(
    valid_from timestamptz, valid_to timestamptz, recorded_at timestamptz, expired_at timestamptz,
    valid_at timestamptz, known_at timestamptz, include_superseded boolean DEFAULT false)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT recorded_at <= known_at AND (expired_at IS NULL OR known_at < expired_at)
       AND (include_superseded OR (valid_from <= valid_at AND (valid_to IS NULL OR valid_at < valid_to)))
$$;
