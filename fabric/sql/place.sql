-- name: load_pending
-- The writes of a job that still wait for placement.
SELECT org, id, content, subject, relation, value, valid_from, valid_to, source, kind, durability, metadata
FROM fabric.writes
WHERE org = %(org)s AND id = ANY(%(ids)s) AND status = 'pending'
ORDER BY received_at, id

-- name: lock_write
-- Claim one write for this transaction; a second runner of the same job sees it settled.
-- now: the transaction time of what its placement writes (read once the locks are held).
SELECT status, clock_timestamp() AS now FROM fabric.writes WHERE org = %(org)s AND id = %(id)s FOR UPDATE

-- name: lock_writes
-- Claim a chunk's writes for this transaction (placement in chunks: see lock_write).
SELECT id, status FROM fabric.writes WHERE org = %(org)s AND id = ANY(%(ids)s) FOR UPDATE

-- name: lock_org
-- Changes to one org's tree apply one at a time (placements in chunks of a few ms; retract, revert,
-- replay, source invalidation). A service role may lock only its own org (migration 0005).
SELECT fabric.lock_placement(%(org)s)

-- name: clock
-- Transaction time for everything this placement writes, read after the lock is held.
SELECT clock_timestamp() AS now

-- name: key_members
-- Every memory currently believed with this structured key, live or superseded, with similarity.
SELECT m.id, m.content, m.parent_id, m.root_id, m.depth, m.subject, m.relation, m.value, m.kind,
       v.valid_from, v.valid_to, v.state, v.version, 1 - (m.embedding <=> %(q)s) AS similarity
FROM fabric.memories m
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
WHERE m.org = %(org)s AND m.subject = %(subject)s AND m.relation = %(relation)s

-- name: chain_members
-- The supersession chain through a memory, as currently believed (for interval insertion).
SELECT id, valid_from, valid_to, value FROM fabric_api.history(%(org)s, %(id)s) WHERE expired_at IS NULL

-- name: insert_memory
-- A new tree node. Nodes are never updated.
INSERT INTO fabric.memories (org, id, write_id, parent_id, root_id, depth, content, subject, relation, value,
                             source, kind, durability, metadata, placement, embedding, created_at)
VALUES (%(org)s, %(id)s, %(write_id)s, %(parent_id)s, coalesce(%(root_id)s, %(id)s), %(depth)s, %(content)s,
        %(subject)s, %(relation)s, %(value)s, %(source)s, %(kind)s, %(durability)s, %(metadata)s,
        %(placement)s, %(embedding)s, %(now)s)

-- name: insert_version
-- A memory's first version.
INSERT INTO fabric.memory_versions (org, memory_id, version, valid_from, valid_to, state, superseded_by,
                                    decision_id, recorded_at)
VALUES (%(org)s, %(memory_id)s, 1, %(valid_from)s, %(valid_to)s, %(state)s, %(superseded_by)s,
        %(decision_id)s, %(now)s)

-- name: revise_version
-- Change what the store believes about a memory: expire the current version, add the next one.
WITH old AS (
    UPDATE fabric.memory_versions SET expired_at = %(now)s
    WHERE org = %(org)s AND memory_id = %(memory_id)s AND expired_at IS NULL
    RETURNING *
)
INSERT INTO fabric.memory_versions (org, memory_id, version, valid_from, valid_to, state, superseded_by,
                                    decision_id, recorded_at)
SELECT org, memory_id, version + 1, valid_from, %(valid_to)s, %(state)s, %(superseded_by)s,
       %(decision_id)s, %(now)s
FROM old
RETURNING memory_id, version

-- name: expire_memory
-- The store stops believing a memory (retraction): its current version's transaction time ends.
UPDATE fabric.memory_versions SET expired_at = %(now)s
WHERE org = %(org)s AND memory_id = %(memory_id)s AND expired_at IS NULL
RETURNING memory_id, version, valid_to, state, superseded_by

-- name: superseded_by
-- Current versions superseded by a memory (to restore them when it is retracted).
SELECT memory_id, version FROM fabric.memory_versions
WHERE org = %(org)s AND superseded_by = %(memory_id)s AND expired_at IS NULL

-- name: version_before_supersession
-- The latest earlier version of a memory that was not superseded by the given memory.
SELECT v.valid_to, v.state, v.superseded_by FROM fabric.memory_versions v
WHERE v.org = %(org)s AND v.memory_id = %(memory_id)s AND v.version < %(version)s
  AND v.superseded_by IS DISTINCT FROM %(by)s
ORDER BY v.version DESC LIMIT 1

-- name: original_valid_to
-- The valid_to a memory was written with.
SELECT w.valid_to FROM fabric.memories m JOIN fabric.writes w ON w.org = m.org AND w.id = m.write_id
WHERE m.org = %(org)s AND m.id = %(memory_id)s

-- name: insert_decision
-- Log a decision with its reason; every mutation of the tree goes through here.
INSERT INTO fabric.decisions (org, id, action, kind, write_id, memory_id, target_id, validator, model, reason,
                              confidence, latency_ms, prompt_tokens, completion_tokens, created_at, reverts,
                              replay_id, details)
VALUES (%(org)s, %(id)s, %(action)s, %(kind)s, %(write_id)s, %(memory_id)s, %(target_id)s, %(validator)s,
        %(model)s, %(reason)s, %(confidence)s, %(latency_ms)s, %(prompt_tokens)s, %(completion_tokens)s,
        %(now)s, %(reverts)s, %(replay_id)s, %(details)s)

-- name: settle_write
-- The write is placed or recorded as a duplicate.
UPDATE fabric.writes SET status = %(status)s, memory_id = %(memory_id)s, decision_id = %(decision_id)s,
                         settled_at = %(now)s, error = NULL
WHERE org = %(org)s AND id = %(id)s

-- name: note_failure
-- A placement attempt failed; park the write once attempts run out.
UPDATE fabric.writes
SET attempts = attempts + 1, error = %(error)s,
    status = CASE WHEN %(park)s OR attempts + 1 >= %(max_attempts)s THEN 'parked' ELSE status END,
    settled_at = CASE WHEN %(park)s OR attempts + 1 >= %(max_attempts)s THEN now() ELSE settled_at END
WHERE org = %(org)s AND id = %(id)s AND status = 'pending'
RETURNING status

-- name: get_decision
-- One decision of the log.
SELECT * FROM fabric.decisions WHERE org = %(org)s AND id = %(id)s

-- name: find_decision
-- One decision by id, whatever its org (for the CLI's revert).
SELECT * FROM fabric.decisions WHERE id = %(id)s

-- name: mark_reverted
-- Link a decision to the event that reverted it.
UPDATE fabric.decisions SET reverted_by = %(by)s WHERE org = %(org)s AND id = %(id)s

-- name: set_decision_details
-- Attach what a logged event did (e.g. which memories a retraction revived).
UPDATE fabric.decisions SET details = details || %(details)s WHERE org = %(org)s AND id = %(id)s

-- name: list_decisions
-- The decision log of an org, newest first, optionally since a time and of one kind or action.
SELECT * FROM fabric.decisions
WHERE org = %(org)s
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s)
  AND (%(action)s::text IS NULL OR action = %(action)s)
ORDER BY created_at DESC
LIMIT %(limit)s

-- name: load_write
-- One write as accepted.
SELECT org, id, content, subject, relation, value, valid_from, valid_to, source, kind, durability, metadata,
       status
FROM fabric.writes WHERE org = %(org)s AND id = %(id)s

-- name: nearest_live_batch
-- Placement's neighbours for a batch of writes of one org, in one statement: for each query vector (i:
-- its position, from 1), the k nearest memories believed now in a live version -- what search_vector
-- returns with live_only -- through the read path's current-state scan (search.sql, current_scan:
-- scan_limit candidates from current_embeddings' HNSW index, then the filter). A write that gets fewer
-- rows than live_available counts is asked again with search_vector, whose exact scan answers when an
-- index scan comes up short. The vectors travel in binary: as a text array, 16 of them cost ~5 ms to
-- format and parse. Parameters: org, vectors, k, scan_limit, subject_prefix (NULL here).
SELECT qv.i, m.id, m.parent_id, m.root_id, m.depth, m.content, m.subject, m.relation, m.value, m.kind,
       v.valid_from, v.valid_to, v.version, 1 - n.distance AS score
FROM unnest(%(vectors)b::vector[]) WITH ORDINALITY AS qv(vec, i)
CROSS JOIN LATERAL (
    SELECT s.id, s.distance
    FROM {{current_scan}} s
    JOIN fabric.memory_versions v ON v.org = %(org)s AND v.memory_id = s.id
    WHERE {{live_version}}
    ORDER BY s.distance
    LIMIT %(k)s
) n
JOIN fabric.memories m ON m.org = %(org)s AND m.id = n.id
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
ORDER BY qv.i, n.distance, m.id

-- name: live_available
-- How many memories of the org nearest_live_batch could return, counted up to k.
SELECT count(*) AS n FROM (
    SELECT 1 FROM fabric.current_embeddings c
    JOIN fabric.memory_versions v ON v.org = c.org AND v.memory_id = c.memory_id
    WHERE c.org = %(org)s AND {{live_version}}
    LIMIT %(k)s) s

-- name: key_members_batch
-- key_members for a batch of writes of one org: for each (subject, relation, query vector) at position i,
-- every memory currently believed under that key, live or superseded, with its similarity to the query.
SELECT k.i, m.id, m.content, m.parent_id, m.root_id, m.depth, m.subject, m.relation, m.value, m.kind,
       v.valid_from, v.valid_to, v.state, v.version, 1 - (m.embedding <=> k.vec) AS similarity
FROM unnest(%(subjects)s::text[], %(relations)s::text[], %(vectors)b::vector[]) WITH ORDINALITY
     AS k(subject, relation, vec, i)
JOIN fabric.memories m ON m.org = %(org)s AND m.subject = k.subject AND m.relation = k.relation
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
ORDER BY k.i
