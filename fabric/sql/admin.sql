-- Admin queries: replay, source invalidation, stats, decision review, ingest summaries.

-- name: org_exists
-- Is this tenant known (has anything ever been written to it)?
SELECT 1 AS found FROM fabric.orgs WHERE org = %(org)s

-- name: replay_family
-- The memories a replay of `root` covers: the branch under it (walked through superseded nodes),
-- closed over supersession in both directions. A contradiction of a root starts a new root, so the
-- versions of one fact can span branches; replaying half of such a chain would misplace it.
WITH RECURSIVE fam (id) AS (
    SELECT id FROM fabric.memories WHERE org = %(org)s AND id = %(root)s
  UNION
    SELECT x.id FROM fam f
    CROSS JOIN LATERAL (
        SELECT c.id FROM fabric.memories c WHERE c.org = %(org)s AND c.parent_id = f.id
      UNION ALL
        SELECT v.superseded_by FROM fabric.memory_versions v
        WHERE v.org = %(org)s AND v.memory_id = f.id AND v.expired_at IS NULL AND v.superseded_by IS NOT NULL
      UNION ALL
        SELECT v.memory_id FROM fabric.memory_versions v
        WHERE v.org = %(org)s AND v.superseded_by = f.id AND v.expired_at IS NULL
    ) x
)
SELECT id FROM fam

-- name: replay_writes
-- The writes a replay re-places: those whose memory (currently believed) is in the family, and
-- those recorded as duplicates of one; in their original transaction-time order (the time of
-- their first placement), with the decision and the node they have now.
SELECT w.org, w.id, w.content, w.subject, w.relation, w.value, w.valid_from, w.valid_to, w.source, w.kind,
       w.durability, w.metadata, w.status, w.memory_id, w.decision_id, w.received_at,
       d.kind AS old_kind, d.target_id AS old_target, tm.write_id AS old_target_write,
       m.parent_id AS node_parent, m.root_id AS node_root, m.depth AS node_depth, m.subject AS node_subject,
       m.relation AS node_relation, m.value AS node_value, m.placement AS node_placement,
       m.embedding AS node_embedding, cv.valid_to AS cur_valid_to, cv.state AS cur_state,
       cv.superseded_by AS cur_superseded_by, cv.decision_id AS cur_decision_id,
       coalesce((SELECT min(p.created_at) FROM fabric.decisions p
                 WHERE p.org = w.org AND p.write_id = w.id AND p.action = 'place'), w.received_at) AS placed_at
FROM fabric.writes w
JOIN fabric.memories m ON m.org = w.org AND m.id = w.memory_id
JOIN fabric.memory_versions cv ON cv.org = m.org AND cv.memory_id = m.id AND cv.expired_at IS NULL
LEFT JOIN fabric.decisions d ON d.org = w.org AND d.id = w.decision_id
LEFT JOIN fabric.memories tm ON tm.org = d.org AND tm.id = d.target_id
WHERE w.org = %(org)s AND w.memory_id = ANY(%(ids)s) AND w.status IN ('placed', 'duplicate')
ORDER BY placed_at, w.received_at, w.id

-- name: memories_created
-- When each of these memories entered the tree, and the write that made it.
SELECT id, write_id, created_at FROM fabric.memories WHERE org = %(org)s AND id = ANY(%(ids)s)

-- name: reinstate_version
-- A replay keeps a node whose placement did not change: it becomes believed again as the next version.
INSERT INTO fabric.memory_versions (org, memory_id, version, valid_from, valid_to, state, superseded_by,
                                    decision_id, recorded_at)
SELECT %(org)s, %(memory_id)s, coalesce(max(version), 0) + 1, %(valid_from)s, %(valid_to)s, %(state)s,
       %(superseded_by)s, %(decision_id)s, %(now)s
FROM fabric.memory_versions WHERE org = %(org)s AND memory_id = %(memory_id)s

-- name: replay_unchanged_versions
-- Memories whose belief a replay left as it was: the version current after equals the one current before.
SELECT n.memory_id, p.version AS prev_version
FROM fabric.memory_versions n
JOIN fabric.memory_versions p ON p.org = n.org AND p.memory_id = n.memory_id
     AND p.recorded_at < %(now)s AND p.expired_at = %(now)s
WHERE n.org = %(org)s AND n.recorded_at = %(now)s AND n.expired_at IS NULL
  AND p.valid_from = n.valid_from AND p.valid_to IS NOT DISTINCT FROM n.valid_to AND p.state = n.state
  AND p.superseded_by IS NOT DISTINCT FROM n.superseded_by

-- name: replay_drop_versions
-- Drop the versions a replay recorded for memories it left unchanged (never visible: same transaction).
DELETE FROM fabric.memory_versions
WHERE org = %(org)s AND memory_id = ANY(%(ids)s) AND recorded_at = %(now)s

-- name: replay_restore_versions
-- ... and believe their previous version again, as if it had never been touched.
UPDATE fabric.memory_versions v SET expired_at = NULL
FROM unnest(%(ids)s::uuid[], %(versions)s::int[]) AS t(memory_id, version)
WHERE v.org = %(org)s AND v.memory_id = t.memory_id AND v.version = t.version

-- name: replay_drop_transient
-- Versions recorded and expired in the same replay transaction held for no known_at at all.
DELETE FROM fabric.memory_versions WHERE org = %(org)s AND recorded_at = %(now)s AND expired_at = %(now)s

-- name: replay_renumber
-- Close the gaps the dropped transient versions left, so version numbers stay consecutive.
UPDATE fabric.memory_versions v
SET version = coalesce((SELECT max(p.version) FROM fabric.memory_versions p
                        WHERE p.org = v.org AND p.memory_id = v.memory_id AND p.recorded_at < %(now)s), 0) + 1
WHERE v.org = %(org)s AND v.recorded_at = %(now)s

-- name: replay_states
-- Each memory a replay touched, as believed just before it and after it.
SELECT m.id, m.write_id, m.content, m.created_at,
       b.state AS before_state, b.valid_to AS before_valid_to, b.superseded_by AS before_superseded_by,
       a.state AS after_state, a.valid_to AS after_valid_to, a.superseded_by AS after_superseded_by
FROM fabric.memories m
LEFT JOIN fabric.memory_versions b ON b.org = m.org AND b.memory_id = m.id AND b.recorded_at < %(now)s
     AND (b.expired_at IS NULL OR b.expired_at >= %(now)s)
LEFT JOIN fabric.memory_versions a ON a.org = m.org AND a.memory_id = m.id AND a.expired_at IS NULL
WHERE m.org = %(org)s
  AND m.id IN (SELECT memory_id FROM fabric.memory_versions
               WHERE org = %(org)s AND (recorded_at = %(now)s OR expired_at = %(now)s))

-- name: source_live_versions
-- Live memories from a source whose valid time holds at `at` (a source change ends them there).
SELECT v.memory_id, v.valid_from, v.valid_to, v.state, v.superseded_by
FROM fabric.memories m
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
WHERE m.org = %(org)s AND m.source = %(source)s AND v.state = 'live'
  AND v.valid_from < %(at)s AND (v.valid_to IS NULL OR v.valid_to > %(at)s)
ORDER BY v.valid_from, v.memory_id

-- name: stats_orgs
-- The tenants to report on: one, or all.
SELECT org FROM fabric.orgs WHERE (%(org)s::text IS NULL OR org = %(org)s) ORDER BY org

-- name: stats_memories
-- Memories per org by their current belief: live, superseded, or no longer believed (retracted / replaced).
SELECT m.org, coalesce(v.state, 'retracted') AS state, count(*) AS n
FROM fabric.memories m
LEFT JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
WHERE (%(org)s::text IS NULL OR m.org = %(org)s)
GROUP BY 1, 2 ORDER BY 1, 2

-- name: stats_writes
-- Writes per org by status.
SELECT org, status, count(*) AS n FROM fabric.writes
WHERE (%(org)s::text IS NULL OR org = %(org)s)
GROUP BY 1, 2 ORDER BY 1, 2

-- name: stats_decisions
-- Decisions per org by action and kind.
SELECT org, action, coalesce(kind, '') AS kind, count(*) AS n FROM fabric.decisions
WHERE (%(org)s::text IS NULL OR org = %(org)s)
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3

-- name: stats_conflicts
-- Facts that hold two or more different values now in live memories: missed placements, which search's
-- safety net resolves by valid_from and flags (Memory.conflict_with). One fact is one subject and one
-- relation, compared as the safety net compares them (fabric/placement/keys.py): the subject with case,
-- punctuation, spacing, a leading "the" and a possessive forgiven, and the first person ("I", "my",
-- "User") one subject; the relation name in snake case ("works for" = "works_for"). Values differ when
-- they differ in more than case, spacing and punctuation ("+44 7700 900 123" = "+44 7700 900123").
-- Not counted here: two relation names of one attribute ("works_for" / "employer"), which the safety
-- net also joins (keys.same_attribute reads the lexicon, which SQL does not have).
WITH live_facts AS (
    SELECT m.org,
           btrim(regexp_replace(lower(regexp_replace(btrim(m.subject), '[''’]s?$', '')), '[^[:alnum:]]+', ' ', 'g'))
               AS subject_words,
           btrim(regexp_replace(lower(m.relation), '[^[:alnum:]]+', '_', 'g'), '_') AS relation_key,
           regexp_replace(lower(m.value), '[^[:alnum:]]+', '', 'g') AS value_key
    FROM fabric.memories m
    JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
    WHERE (%(org)s::text IS NULL OR m.org = %(org)s)
      AND m.subject IS NOT NULL AND m.relation IS NOT NULL AND m.value IS NOT NULL AND v.state = 'live'
      AND v.valid_from <= now() AND (v.valid_to IS NULL OR v.valid_to > now())
),
keyed AS (   -- the subject as compared: "the" and the first person
    SELECT org, relation_key, value_key,
           CASE WHEN regexp_replace(subject_words, '^the ', '') IN ('i', 'me', 'my', 'mine', 'myself', 'user')
                THEN 'user' ELSE regexp_replace(subject_words, '^the ', '') END AS subject_key
    FROM live_facts
)
SELECT org, count(*) AS n FROM (
    SELECT org FROM keyed
    GROUP BY org, subject_key, relation_key
    HAVING count(DISTINCT value_key) > 1
) conflicting
GROUP BY org

-- name: sample_decisions
-- A random sample of the decision log for review (seed 001: sample model-driven invalidations).
SELECT * FROM fabric.decisions
WHERE org = %(org)s
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s)
  AND (%(action)s::text IS NULL OR action = %(action)s)
ORDER BY random()
LIMIT %(limit)s

-- name: writes_summary
-- Where a set of writes stands: status and decision kind, counted.
SELECT w.status, d.kind, count(*) AS n
FROM unnest(%(orgs)s::text[], %(ids)s::uuid[]) AS t(org, id)
JOIN fabric.writes w ON w.org = t.org AND w.id = t.id
LEFT JOIN fabric.decisions d ON d.org = w.org AND d.id = w.decision_id
GROUP BY 1, 2 ORDER BY 1, 2

-- name: replay_members_create
-- The memories a replay re-places (plus the nodes it creates): exempt from the as-of filter below.
CREATE TEMP TABLE replay_members (id uuid PRIMARY KEY) ON COMMIT DROP

-- name: replay_members_add
INSERT INTO pg_temp.replay_members (id) SELECT unnest(%(ids)s::uuid[]) ON CONFLICT DO NOTHING

-- name: replay_near_base
-- Live memories a write could be placed against, as of its first placement: members of the replay,
-- and other memories only if they had entered the tree by then. Composed by fabric/replay.py like
-- the search: an index scan (ORDER BY distance LIMIT k), then an exact scan when it comes up short.
SELECT m.id, m.content, m.parent_id, m.root_id, m.depth, m.subject, m.relation, m.value, m.kind,
       v.valid_from, v.valid_to, v.version, v.state, m.embedding <=> %(q)s AS distance
FROM fabric.memories m
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL AND v.state = 'live'
WHERE m.org = %(org)s
  AND (m.created_at <= %(placed_at)s OR EXISTS (SELECT 1 FROM pg_temp.replay_members r WHERE r.id = m.id))

-- name: replay_key_members
-- Every memory currently believed under a key, as of the write's first placement (see replay_near_base).
SELECT m.id, m.content, m.parent_id, m.root_id, m.depth, m.subject, m.relation, m.value, m.kind,
       v.valid_from, v.valid_to, v.state, v.version, 1 - (m.embedding <=> %(q)s) AS similarity
FROM fabric.memories m
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
WHERE m.org = %(org)s AND m.subject = %(subject)s AND m.relation = %(relation)s
  AND (m.created_at <= %(placed_at)s OR EXISTS (SELECT 1 FROM pg_temp.replay_members r WHERE r.id = m.id))

-- name: replay_expire_nodes
-- Undo, in one statement: the store stops believing the nodes a replay re-places.
UPDATE fabric.memory_versions SET expired_at = %(now)s
WHERE org = %(org)s AND memory_id = ANY(%(ids)s) AND expired_at IS NULL

-- name: replay_superseded_outside
-- Memories still believed as superseded by a node the replay took back (to believe them as before).
SELECT memory_id, version, superseded_by FROM fabric.memory_versions
WHERE org = %(org)s AND superseded_by = ANY(%(ids)s) AND expired_at IS NULL


-- name: replay_current_version
-- A memory's current version (to carry an ended valid time over a replay).
SELECT valid_from, valid_to, state, superseded_by FROM fabric.memory_versions
WHERE org = %(org)s AND memory_id = %(memory_id)s AND expired_at IS NULL

-- name: org_index_candidates
-- The orgs that get HNSW indexes of their own (fabric/read/indexes.py): at least min_rows memories,
-- and at most max_share of all memories.
SELECT org
FROM fabric.memories
GROUP BY org
HAVING count(*) >= %(min_rows)s
   AND count(*) <= %(max_share)s * (SELECT count(*) FROM fabric.memories)
ORDER BY org

-- name: org_indexes
-- The per-org HNSW indexes that exist (fabric/read/indexes.py names them
-- ix_current_embeddings_embedding_org_<16 hex> / ix_memories_embedding_org_<16 hex>), with their
-- predicate (which org), size in rows (as of the build or the last ANALYZE) and bytes. Only partial
-- HNSW indexes with such a name: `fabric index orgs` drops what this returns and no org needs.
SELECT c.relname AS name, t.relname AS table_name, pg_get_expr(i.indpred, i.indrelid) AS predicate,
       greatest(c.reltuples, 0)::bigint AS rows, pg_relation_size(c.oid) AS bytes,
       i.indisvalid AS valid   -- false: a CONCURRENTLY build that failed half way
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_am a ON a.oid = c.relam
WHERE n.nspname = 'fabric' AND a.amname = 'hnsw' AND i.indpred IS NOT NULL
  AND c.relname ~ '^ix_(current_embeddings|memories)_embedding_org_[0-9a-f]{16}$'
ORDER BY c.relname

-- name: memory_ids_from
-- Memory ids of the org in [lo, hi]: the ids a short form (the CLI tables' first 8 characters) stands for.
SELECT id FROM fabric.memories WHERE org = %(org)s AND id BETWEEN %(lo)s AND %(hi)s ORDER BY id LIMIT 2

-- name: decision_ids_from
-- Decision ids in [lo, hi], of the org or (org NULL) of any.
SELECT id FROM fabric.decisions
WHERE (%(org)s::text IS NULL OR org = %(org)s) AND id BETWEEN %(lo)s AND %(hi)s ORDER BY id LIMIT 2
