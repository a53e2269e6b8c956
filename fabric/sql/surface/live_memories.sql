CREATE OR REPLACE VIEW fabric_api.live_memories AS
SELECT v.org, v.id, v.parent_id, v.root_id, v.depth, v.content, v.subject, v.relation, v.value,
       v.valid_from, v.valid_to, v.recorded_at, v.expired_at, v.superseded_by, v.placement,
       v.source, v.kind, v.durability, v.metadata, v.version, v.state, v.decision_id, v.write_id
FROM fabric_api.memory_versions v
WHERE fabric_api.holds(v.valid_from, v.valid_to, v.recorded_at, v.expired_at, now(), now());
