CREATE OR REPLACE VIEW fabric_api.memory_versions AS
SELECT m.org, m.id, m.parent_id, m.root_id, m.depth, m.content, m.subject, m.relation, m.value,
       v.valid_from, v.valid_to, v.recorded_at, v.expired_at, v.superseded_by, m.placement,
       m.source, m.kind, m.durability, m.metadata, v.version, v.state, v.decision_id, m.write_id
FROM fabric.memories m
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id;
