CREATE OR REPLACE VIEW fabric_api.decisions AS
SELECT d.org, d.id, d.action, d.kind, d.write_id, d.memory_id, d.target_id, d.validator, d.model,
       d.reason, d.confidence, d.latency_ms, d.prompt_tokens, d.completion_tokens, d.created_at,
       d.reverts, d.reverted_by, d.replay_id, d.details
FROM fabric.decisions d;
