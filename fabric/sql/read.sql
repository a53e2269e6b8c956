-- name: search_base
-- Memories of an org that hold at (valid_at, known_at), with their cosine distance to the query.
-- Composed by fabric/read/search.py into an index scan (ORDER BY distance LIMIT k) and an exact
-- scan (a MATERIALIZED CTE the vector index cannot serve) used when the index scan comes up short.
SELECT m.id, m.org, m.parent_id, m.root_id, m.depth, m.content, m.subject, m.relation, m.value,
       v.valid_from, v.valid_to, v.recorded_at, v.expired_at, v.superseded_by, m.placement,
       m.source, m.kind, m.durability, m.metadata, v.version, v.state, v.decision_id,
       m.embedding <=> %(q)s AS distance
FROM fabric.memories m
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id
WHERE m.org = %(org)s
  AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at,
                       %(valid_at)s, %(known_at)s, %(include_superseded)s)
  AND (NOT %(live_only)s OR (v.expired_at IS NULL AND v.state = 'live'))

-- name: current_value
-- The exact structural lookup: no embedding involved.
SELECT * FROM fabric_api.current_value(%(org)s, %(subject)s, %(relation)s, %(valid_at)s, %(known_at)s)

-- name: walk
-- A branch, walked through superseded nodes, filtered at the output.
SELECT * FROM fabric_api.walk(%(org)s, %(root)s, %(include_superseded)s, %(max_depth)s,
                              %(valid_at)s, %(known_at)s)

-- name: history
-- The supersession chain through a memory, oldest first.
SELECT * FROM fabric_api.history(%(org)s, %(id)s)

-- name: belief_state
-- Everything the org's store held as valid at valid_at, as known at known_at.
SELECT * FROM fabric_api.belief_state(%(org)s, %(valid_at)s, %(known_at)s)
ORDER BY valid_from, recorded_at, id

-- name: memory_exists
-- Does a memory exist in this org (in any version)?
SELECT 1 AS found FROM fabric.memories WHERE org = %(org)s AND id = %(id)s

-- name: memory_current
-- The current version of one memory (none if retracted).
SELECT * FROM fabric_api.memory_versions WHERE org = %(org)s AND id = %(id)s AND expired_at IS NULL

-- name: memories_by_id
-- Current versions of several memories.
SELECT * FROM fabric_api.memory_versions
WHERE org = %(org)s AND id = ANY(%(ids)s) AND expired_at IS NULL
