-- name: metrics_open_writes
-- Writes still waiting, per org and status, for the metrics endpoint (read at scrape time).
-- Both counts come from partial indexes (ix_writes_pending, ix_writes_parked), not a table scan.
SELECT org, 'pending' AS status, count(*) AS n
FROM fabric.writes
WHERE status = 'pending'
GROUP BY org
UNION ALL
SELECT org, 'parked' AS status, count(*) AS n
FROM fabric.writes
WHERE status = 'parked'
GROUP BY org;
