CREATE OR REPLACE VIEW fabric_api.duplicates AS
SELECT w.org, w.id AS write_id, w.content, w.subject, w.relation, w.value, w.source, w.kind,
       w.received_at, w.settled_at, w.memory_id AS duplicate_of, n.content AS duplicate_of_content,
       n.source AS duplicate_of_source, w.decision_id, d.validator, d.model, d.confidence, d.reason
FROM fabric_api.writes w
LEFT JOIN fabric_api.decisions d ON d.org = w.org AND d.id = w.decision_id
LEFT JOIN fabric_api.memory_nodes n ON n.org = w.org AND n.id = w.memory_id
WHERE w.status = 'duplicate';
