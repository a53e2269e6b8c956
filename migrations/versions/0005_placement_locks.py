"""Placement locks a service role can take only for its own org.

Before: placements, retractions, reverts and source invalidations serialised on
`pg_advisory_xact_lock(hashtextextended('fabric.place:' || org, 0))`, a key any role could compute and
take, so a service role granted org A could stall org B's writes by holding B's lock.

Now:
* `fabric.lock_placement(org)` takes the org's placement lock until the transaction ends. It runs as its
  owner (SECURITY DEFINER) and refuses a service role any org but the one it acts for (`fabric.org`,
  granted in `fabric.tenant_grants`), with SQLSTATE 42501.
* The advisory-lock functions are no longer executable by PUBLIC in this database (a superuser, as the
  owner of fabric's tables and workers usually are in the embedded default and docker-compose, is not
  bound by that), so the function above is the only way a service role can take one. Revoking needs a
  superuser to migrate; otherwise it is skipped with a NOTICE and the README's tenancy section says
  what that leaves open.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Every advisory-lock function (session and transaction level, shared, try, unlock), both signatures.
ADVISORY = "SELECT p.oid::regprocedure AS f FROM pg_catalog.pg_proc p WHERE p.proname ~ '^pg_(try_)?advisory_'"


def upgrade() -> None:
    op.execute("""
    CREATE FUNCTION fabric.lock_placement(p_org text) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    DECLARE
        -- The role the session acts as (SECURITY DEFINER changes current_user, not this).
        caller text := coalesce(nullif(current_setting('role'), 'none'), session_user::text);
    BEGIN
        -- Bound like fabric.sees_all_orgs(): a member of fabric_service that row-level security
        -- applies to (pg_has_role is true for a superuser whatever its grants).
        IF pg_has_role(caller, 'fabric_service', 'USAGE')
           AND NOT (SELECT r.rolsuper OR r.rolbypassrls FROM pg_catalog.pg_roles r WHERE r.rolname = caller)
           AND NOT EXISTS (
                SELECT 1 FROM fabric.tenant_grants g
                WHERE g.role = caller AND g.org = p_org AND g.org = current_setting('fabric.org', true)) THEN
            RAISE EXCEPTION 'role % may not take placement locks of org %', caller, p_org
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        PERFORM pg_advisory_xact_lock(hashtextextended('fabric.place:' || p_org, 0));
    END
    $$;
    COMMENT ON FUNCTION fabric.lock_placement(text) IS
        'Take the org''s placement lock until the transaction ends (placements, retractions, reverts, '
        'replays and source invalidations serialise on it). A service role may take only its own org''s.';
    REVOKE ALL ON FUNCTION fabric.lock_placement(text) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION fabric.lock_placement(text) TO fabric_service;
    """)
    op.execute(f"""
    DO $$
    DECLARE f regprocedure;
    BEGIN
        IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
            RAISE NOTICE 'not a superuser: advisory-lock functions stay executable by every role '
                         '(see the README, Tenancy)';
            RETURN;
        END IF;
        FOR f IN {ADVISORY} LOOP
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        END LOOP;
    END
    $$;
    """)


def downgrade() -> None:
    op.execute(f"""
    DO $$
    DECLARE f regprocedure;
    BEGIN
        IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
            FOR f IN {ADVISORY} LOOP
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', f);
            END LOOP;
        END IF;
    END
    $$;
    DROP FUNCTION fabric.lock_placement(text);
    """)
