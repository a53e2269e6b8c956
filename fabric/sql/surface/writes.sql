CREATE OR REPLACE VIEW fabric_api.writes AS
SELECT w.org, w.id, w.content, w.subject, w.relation, w.value, w.valid_from, w.valid_to, w.source,
       w.kind, w.durability, w.metadata, w.status, w.error, w.attempts, w.job_id, w.received_at,
       w.settled_at, w.memory_id, w.decision_id
FROM fabric.writes w;
