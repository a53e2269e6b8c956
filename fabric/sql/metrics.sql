-- name: metrics_open_writes
-- Writes still waiting, per org and status, for the metrics endpoint (read at scrape time).
SELECT org, status, count(*) AS n
FROM fabric.writes
WHERE status IN ('pending', 'parked')
GROUP BY org, status;
