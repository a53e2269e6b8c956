CREATE OR REPLACE VIEW fabric_api.memory_nodes AS
SELECT org, id, write_id, parent_id, root_id, depth, content, subject, relation, value,
       source, kind, durability, metadata, placement, created_at
FROM fabric.memories;
