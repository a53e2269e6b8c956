-- Queries of the LangGraph store (fabric/integrations/langgraph.py). An item is the current memory
-- of a key: subject = the namespace's labels joined by '.', relation = the item's key.

-- name: store_items
-- The items under a namespace prefix (NULL: every namespace) that hold at (valid_at, known_at): per
-- key, the memory current_value would return, with the transaction time its key was first written
-- (first_recorded_at).
SELECT DISTINCT ON (v.subject, v.relation)
       v.*,
       (SELECT min(f.created_at) FROM fabric.memories f
        WHERE f.org = v.org AND f.subject = v.subject AND f.relation = v.relation) AS first_recorded_at
FROM fabric_api.memory_versions v
WHERE v.org = %(org)s AND v.subject IS NOT NULL AND v.relation IS NOT NULL
  AND (%(prefix)s::text IS NULL OR fabric_api.under(v.subject, %(prefix)s))
  AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at, %(valid_at)s, %(known_at)s)
ORDER BY v.subject, v.relation, v.valid_from DESC, v.recorded_at DESC

-- name: store_get
-- The items with these keys (subjects[i], relations[i]) at (valid_at, known_at): current_value per
-- key, with the transaction time the key was first written (first_recorded_at).
SELECT cv.*,
       (SELECT min(f.created_at) FROM fabric.memories f
        WHERE f.org = cv.org AND f.subject = cv.subject AND f.relation = cv.relation) AS first_recorded_at
FROM unnest(%(subjects)s::text[], %(relations)s::text[]) AS k(subject, relation)
CROSS JOIN LATERAL fabric_api.current_value(%(org)s, k.subject, k.relation, %(valid_at)s, %(known_at)s) cv

-- name: store_namespaces
-- The namespaces (subjects) holding items now, below an optional prefix: fabric_api.namespaces.
SELECT namespace FROM fabric_api.namespaces(%(org)s, %(prefix)s, %(valid_at)s, %(known_at)s)

-- name: store_write_states
-- Where several writes stand (after a drain: placed, duplicate or parked).
SELECT id, status, error FROM fabric.writes WHERE org = %(org)s AND id = ANY(%(ids)s)

-- name: store_delete
-- The store's delete: the key's value ends now. Every memory with the key that holds now gets a new
-- version whose valid time closes at now (the old version expires, so known_at before now still
-- sees it, and valid_at before now still answers it), all logged as one 'delete' decision. Run
-- after lock_org, with now from clock.
WITH live AS (
    SELECT v.memory_id
    FROM fabric.memories m
    JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
    WHERE m.org = %(org)s AND m.subject = %(subject)s AND m.relation = %(relation)s
      AND fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at, %(now)s, %(now)s)
),
decision AS (
    INSERT INTO fabric.decisions (org, id, action, memory_id, validator, reason, created_at, details)
    SELECT %(org)s, %(decision_id)s, 'delete', min(l.memory_id::text)::uuid, 'store', %(reason)s, %(now)s,
           jsonb_build_object('memories', jsonb_agg(l.memory_id))
    FROM live l
    HAVING count(*) > 0
),
old AS (
    UPDATE fabric.memory_versions v SET expired_at = %(now)s
    FROM live l
    WHERE v.org = %(org)s AND v.memory_id = l.memory_id AND v.expired_at IS NULL
    RETURNING v.*
)
INSERT INTO fabric.memory_versions (org, memory_id, version, valid_from, valid_to, state, superseded_by,
                                    decision_id, recorded_at)
SELECT org, memory_id, version + 1, valid_from, %(now)s, state, superseded_by, %(decision_id)s, %(now)s
FROM old
RETURNING memory_id
