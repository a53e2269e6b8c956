-- Roles and tenant grants (fabric/roles.py). Templates with {braces} are composed with psycopg.sql:
-- {role} and {group} are identifiers, {password} a literal (CREATE/ALTER ROLE take no bind parameters).

-- name: role_create_login
-- A login role with no special powers; it inherits the privileges of the group it is granted.
CREATE ROLE {role} LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD {password}

-- name: role_read_only
-- An analyst's sessions start read-only (belt and braces: it has no write privilege anyway).
ALTER ROLE {role} SET default_transaction_read_only = on

-- name: role_grant_group
GRANT {group} TO {role}

-- name: role_drop
DROP ROLE {role}

-- name: role_describe
-- A role, and which of fabric's groups it is a direct member of.
SELECT r.rolname AS name, r.rolcanlogin AS login, r.rolsuper AS superuser, r.rolbypassrls AS bypassrls,
       EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members am JOIN pg_catalog.pg_roles g ON g.oid = am.roleid
               WHERE am.member = r.oid AND g.rolname = %(service_group)s) AS service,
       EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members am JOIN pg_catalog.pg_roles g ON g.oid = am.roleid
               WHERE am.member = r.oid AND g.rolname = %(analyst_group)s) AS analyst
FROM pg_catalog.pg_roles r
WHERE r.rolname = %(name)s

-- name: role_groups_present
-- Are fabric's group roles there (migration 0002 creates them)?
SELECT count(*) AS n FROM pg_catalog.pg_roles WHERE rolname IN (%(service_group)s, %(analyst_group)s)

-- name: tenant_grants_present
-- Is this database migrated to 0002 or later?
SELECT to_regclass('fabric.tenant_grants') IS NOT NULL AS present

-- name: list_fabric_roles
-- Every direct member of fabric's groups, with the orgs granted to it in this database.
SELECT r.rolname AS name, r.rolcanlogin AS login,
       bool_or(g.rolname = %(service_group)s) AS service,
       bool_or(g.rolname = %(analyst_group)s) AS analyst,
       coalesce((SELECT array_agg(t.org ORDER BY t.org) FROM fabric.tenant_grants t WHERE t.role = r.rolname),
                '{}'::text[]) AS orgs
FROM pg_catalog.pg_auth_members am
JOIN pg_catalog.pg_roles r ON r.oid = am.member
JOIN pg_catalog.pg_roles g ON g.oid = am.roleid
WHERE g.rolname IN (%(service_group)s, %(analyst_group)s)
GROUP BY r.rolname, r.rolcanlogin
ORDER BY r.rolname

-- name: grant_tenant
-- Let a service role act for an org.
INSERT INTO fabric.tenant_grants (role, org) VALUES (%(role)s, %(org)s)
ON CONFLICT (role, org) DO NOTHING

-- name: revoke_tenant
-- Stop a service role acting for an org.
DELETE FROM fabric.tenant_grants WHERE role = %(role)s AND org = %(org)s

-- name: revoke_all_tenants
-- Every org grant of a role (before the role is dropped).
DELETE FROM fabric.tenant_grants WHERE role = %(role)s

-- name: role_orgs
-- The orgs granted to a role.
SELECT org FROM fabric.tenant_grants WHERE role = %(role)s ORDER BY org
