CREATE OR REPLACE VIEW fabric_api.orgs AS
SELECT o.org, o.created_at
FROM fabric.orgs o;
