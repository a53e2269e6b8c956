CREATE OR REPLACE FUNCTION fabric_api.under(subject text, prefix text)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- One index range in byte order, [prefix, prefix || '/'): every subject that starts with the
    -- prefix followed by '.' (0x2E) lies in it, since '/' is 0x2F. The range uses leakproof
    -- operators, so it stays an index condition under row-level security (LIKE would not).
    -- Then whole labels only: the prefix itself, or the prefix followed by '.'.
    SELECT subject ~>=~ prefix AND subject ~<~ (prefix || '/')
       AND (subject = prefix OR substr(subject, length(prefix) + 1, 1) = '.')
$$;
