-- name: ensure_org
-- Register a tenant on first use.
INSERT INTO fabric.orgs (org) VALUES (%(org)s) ON CONFLICT (org) DO NOTHING;

-- name: insert_write
-- Accept a write durably; placement happens later in a worker, in received_at order.
INSERT INTO fabric.writes (org, id, content, subject, relation, value, valid_from, valid_to,
                           source, kind, durability, metadata, job_id, received_at)
VALUES (%(org)s, %(id)s, %(content)s, %(subject)s, %(relation)s, %(value)s,
        coalesce(%(valid_from)s, now()), %(valid_to)s, %(source)s, %(kind)s, %(durability)s,
        coalesce(%(metadata)s, '{}'::jsonb), %(job_id)s,
        clock_timestamp())  -- not now(): writes of one batch keep their order
ON CONFLICT (org, id) DO NOTHING;  -- a retry after a lost connection may repeat a committed insert

-- name: write_status
-- Where a write stands, with the decision that settled it.
SELECT w.org, w.id, w.status, w.error, w.memory_id, w.decision_id,
       d.kind AS decision, d.target_id, d.reason, d.confidence, d.validator,
       coalesce((d.details ->> 'out_of_order')::boolean, false) AS out_of_order
FROM fabric.writes w
LEFT JOIN fabric.decisions d ON d.org = w.org AND d.id = w.decision_id
WHERE w.org = %(org)s AND w.id = %(id)s;

-- name: pending_count
-- How many writes of an org (or of all orgs) still wait for placement.
SELECT count(*) AS n FROM fabric.writes
WHERE status = 'pending' AND (%(org)s::text IS NULL OR org = %(org)s);

-- name: pending_for_reconcile
-- Pending writes older than the grace period that no placement transaction holds right now.
SELECT org, id, job_id FROM fabric.writes
WHERE status = 'pending' AND received_at < now() - make_interval(secs => %(grace)s)
ORDER BY received_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: set_job_id
-- Record the job that now carries these writes.
UPDATE fabric.writes SET job_id = %(job_id)s
WHERE org = %(org)s AND id = ANY(%(ids)s::uuid[]) AND status = 'pending'
