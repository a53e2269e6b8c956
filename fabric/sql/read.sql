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

