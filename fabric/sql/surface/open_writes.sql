CREATE OR REPLACE VIEW fabric_api.open_writes AS
SELECT w.org, w.id, w.status, w.error, w.attempts, w.received_at, w.settled_at,
       now() - w.received_at AS age, w.job_id, w.content, w.subject, w.relation, w.value, w.source,
       w.kind
FROM fabric_api.writes w
WHERE w.status IN ('pending', 'parked');
