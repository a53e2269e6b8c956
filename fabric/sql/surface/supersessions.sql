CREATE OR REPLACE VIEW fabric_api.supersessions AS
SELECT s.org, s.memory_id, s.superseded_by, o.subject, o.relation,
       o.value AS old_value, n.value AS new_value, o.content AS old_content, n.content AS new_content,
       o.created_at AS written_at, s.superseded_at, s.superseded_at - o.created_at AS believed_for,
       s.arrived_superseded, s.believed
FROM (
    SELECT org, id AS memory_id, superseded_by,
           min(recorded_at) AS superseded_at,
           min(version) = 1 AS arrived_superseded,
           bool_or(expired_at IS NULL) AS believed
    FROM fabric_api.memory_versions
    WHERE superseded_by IS NOT NULL
    GROUP BY org, id, superseded_by
) s
JOIN fabric_api.memory_nodes o ON o.org = s.org AND o.id = s.memory_id
JOIN fabric_api.memory_nodes n ON n.org = s.org AND n.id = s.superseded_by;
