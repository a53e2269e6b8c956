"""Placement locks a service role can take only for its own org.

Before: placements, retractions, reverts and source invalidations serialised on
`pg_advisory_xact_lock(hashtextextended('fabric.place:' || org, 0))`, a key any role could compute and
take, so a service role granted org A could stall org B's writes by holding B's lock.

Now:
* `fabric.lock_placement(org, keys)` takes fabric's locks. keys NULL: the whole org, exclusively (a
  retraction, revert, replay or source invalidation). keys given: the org shared, then each key
  exclusively, in a fixed order (no deadlock between two placements): placements that touch different
  keys and candidates run side by side, and an org-wide operation still waits for all of them. It runs
  as its owner (SECURITY DEFINER) and refuses a service role any org but the one it acts for
  (`fabric.org`, granted in `fabric.tenant_grants`), with SQLSTATE 42501.
* The advisory-lock functions are no longer executable by PUBLIC in this database (only by the
  migrating role, which owns fabric's tables), so the function above is the only way a service role
  can take one. This needs a superuser to migrate (the embedded default and docker-compose's Postgres
  do); otherwise the revoke is skipped with a NOTICE and the README's tenancy section says what that
  leaves open.

Revision ID: 0007
Revises: 0003
Create Date: 2026-11-30
"""

from alembic import op

revision = "0007"
down_revision = "0003"
branch_labels = None
depends_on = None

# Every advisory-lock function (session and transaction level, shared, try, unlock), both signatures.
ADVISORY = "SELECT p.oid::regprocedure AS f FROM pg_catalog.pg_proc p WHERE p.proname ~ '^pg_(try_)?advisory_'"


def upgrade() -> None:
    op.execute("""
    CREATE FUNCTION fabric.lock_placement(p_org text, p_keys text[] DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    DECLARE
        -- The role the session acts as (SECURITY DEFINER changes current_user, not this).
        caller text := coalesce(nullif(current_setting('role'), 'none'), session_user::text);
        lock_key bigint;
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
        IF p_keys IS NULL THEN
            PERFORM pg_advisory_xact_lock(hashtextextended('fabric.place:' || p_org, 0));
            RETURN;
        END IF;
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('fabric.place:' || p_org, 0));
        FOR lock_key IN
            SELECT DISTINCT hashtextextended('fabric.place:' || p_org || ':' || k, 0) FROM unnest(p_keys) k ORDER BY 1
        LOOP
            PERFORM pg_advisory_xact_lock(lock_key);
        END LOOP;
    END
    $$;
    COMMENT ON FUNCTION fabric.lock_placement(text, text[]) IS
        'Take fabric''s placement locks until the transaction ends: the whole org (keys NULL) or the org '
        'shared plus each key. A service role may take them only for the org it acts for.';
    REVOKE ALL ON FUNCTION fabric.lock_placement(text, text[]) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION fabric.lock_placement(text, text[]) TO fabric_service;
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
    DROP FUNCTION fabric.lock_placement(text, text[]);
    """)
