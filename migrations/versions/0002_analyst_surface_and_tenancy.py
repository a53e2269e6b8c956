"""The analyst SQL surface (fabric_api views and functions, each commented) and tenancy enforced
by PostgreSQL (row-level security keyed by the connection's org and a per-role grant).

Tenancy
-------
* `fabric_service` (NOLOGIN group): the privileges a service's login role needs to run the
  library. Row-level security on every fabric table lets a member see and change only the rows
  of `fabric.tenant_org()`: the org set on the connection (`fabric.org`, which the library sets
  per operation) *and* granted to `current_user` in `fabric.tenant_grants`. Setting
  `fabric.org` by hand to an org the role was not granted yields nothing, and WITH CHECK refuses
  rows for any other org.
* `fabric_analyst` (NOLOGIN group): SELECT on the fabric_api views only (all orgs), no table
  privileges, no writes.
* `fabric_reader` (NOLOGIN; no members, save a migrating role that is not a superuser, which
  must be one to hand the views over): owns the fabric_api views. A view runs with its owner's
  privileges, so an analyst reads it without any right on fabric's tables; row-level security
  applies to the owner `fabric_reader`, and its policy (`api_reader`) shows every org to those
  the tenancy rule does not bind (the table owner, superusers, analysts) and only
  `fabric.tenant_org()`'s rows to a service role (`current_user` in a policy is the querying
  role). So the views are no way around RLS for a service, and, being RLS-filtered rather than
  security-barrier views, they keep the planner's index paths (parameterised nested loops).
* The table owner (migrations, the embedded superuser, workers) is unaffected (RLS is enabled,
  not forced).

The roles are cluster-wide: downgrade revokes this database's privileges and keeps the roles.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

from fabric.sql import surface

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SERVICE = "fabric_service"
ANALYST = "fabric_analyst"
READER = "fabric_reader"
TABLES = ("orgs", "writes", "decisions", "memories", "memory_versions")
VIEWS = ("memory_nodes", "memory_versions", "orgs", "decisions", "writes", "live_memories", "supersessions",
         "duplicates", "open_writes")


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _if_alembic_version(statement: str) -> str:
    """`statement`, run only when Alembic's version table is `public.alembic_version`."""
    return f"""DO $$
    BEGIN
        IF to_regclass('public.alembic_version') IS NOT NULL THEN
            {statement};
        END IF;
    END
    $$;"""


def _comments(kind: str, name: str, comment: str, columns: dict[str, str] | None = None) -> None:
    stmts = [f"COMMENT ON {kind} {name} IS {_lit(comment)};"]
    for col, text in (columns or {}).items():
        stmts.append(f"COMMENT ON COLUMN {name}.{col} IS {_lit(text)};")
    op.execute("\n".join(stmts))


# ---------------------------------------------------------------------------------------------- upgrade


def upgrade() -> None:
    _roles()
    _tenancy()
    _views()
    _document()
    _grants()


def _roles() -> None:
    comments = {
        SERVICE: "fabric: a service's login roles are members; row-level security limits them to the org set "
                 "on the connection (fabric.org) when fabric.tenant_grants grants it to them.",
        ANALYST: "fabric: read-only analysts; SELECT on the fabric_api views (all orgs), nothing else.",
        READER: "fabric: owns the fabric_api views (row-level security policy api_reader filters them by "
                "the querying role); no members, no login.",
    }
    # Cluster-wide: created once (a DBA may create them beforehand); concurrent migrations of two
    # databases on one cluster may race to create them.
    for role, comment in comments.items():
        op.execute(f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '{role}') THEN
                CREATE ROLE {role} NOLOGIN;
                COMMENT ON ROLE {role} IS {_lit(comment)};
            END IF;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END
        $$;
        """)


def _tenancy() -> None:
    op.execute("""
    -- Which org each service role may act for. Read by fabric.tenant_org() (as the service role:
    -- row-level security shows a role its own grants only).
    CREATE TABLE fabric.tenant_grants (
        role        text NOT NULL,
        org         text NOT NULL,
        granted_at  timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT pk_tenant_grants PRIMARY KEY (role, org)
    );

    -- Both functions run with the caller's rights (current_user is the querying role) and are
    -- PL/pgSQL, so each session plans their bodies once: a policy calls them once per query
    -- (an InitPlan) for a few microseconds. search_path is pinned so that a caller's own
    -- search_path cannot redirect a name or operator in them.

    -- True for those the tenancy rule does not bind: whoever row-level security does not apply to
    -- on fabric's tables (the owner, superusers, BYPASSRLS roles), and analysts. A service role is
    -- bound even when it is also an analyst. Reads catalogs only, so any role may call it.
    CREATE FUNCTION fabric.sees_all_orgs() RETURNS boolean LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp AS $$
    BEGIN
        IF NOT pg_catalog.row_security_active((
                SELECT c.oid FROM pg_catalog.pg_class c
                JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'fabric' AND c.relname = 'memories')) THEN
            RETURN true;
        END IF;
        IF pg_catalog.pg_has_role('fabric_service', 'USAGE') THEN
            RETURN false;
        END IF;
        RETURN pg_catalog.pg_has_role('fabric_analyst', 'USAGE');
    END
    $$;

    -- The org this connection acts for: the one set in fabric.org, if granted to current_user.
    -- NULL (nothing visible) when unset or not granted: SET fabric.org = 'B' alone opens nothing.
    -- (An analyst, who has no right on schema fabric, never calls it: the policy's CASE stops first.)
    CREATE FUNCTION fabric.tenant_org() RETURNS text LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp AS $$
    BEGIN
        RETURN (SELECT g.org FROM fabric.tenant_grants g
                WHERE g.role = current_user::text AND g.org = pg_catalog.current_setting('fabric.org', true));
    END
    $$;

    COMMENT ON TABLE fabric.tenant_grants IS
        'Which orgs each service role (a member of fabric_service) may act for; `fabric roles grant/revoke`.';
    COMMENT ON FUNCTION fabric.sees_all_orgs() IS
        'Tenancy: true for the table owner, superusers and analysts (every org), false for a service role.';
    COMMENT ON FUNCTION fabric.tenant_org() IS
        'Tenancy: the org set on the connection (fabric.org) if granted to current_user, else NULL.';

    ALTER TABLE fabric.tenant_grants ENABLE ROW LEVEL SECURITY;
    CREATE POLICY own_grants ON fabric.tenant_grants FOR SELECT TO fabric_service
        USING (role = current_user::text);
    """)
    for table in TABLES:
        # Each sub-select is an InitPlan: evaluated once per query, usable as an index condition.
        # In api_reader, CASE fixes the order (an analyst never evaluates tenant_org()).
        op.execute(f"""
        ALTER TABLE fabric.{table} ENABLE ROW LEVEL SECURITY;
        CREATE POLICY tenant_isolation ON fabric.{table} AS PERMISSIVE FOR ALL TO {SERVICE}
            USING (org = (SELECT fabric.tenant_org()))
            WITH CHECK (org = (SELECT fabric.tenant_org()));
        COMMENT ON POLICY tenant_isolation ON fabric.{table} IS
            'A service role sees and writes only rows of fabric.tenant_org(): the org set on the connection
             (fabric.org) and granted to current_user in fabric.tenant_grants.';
        CREATE POLICY api_reader ON fabric.{table} AS PERMISSIVE FOR SELECT TO {READER}
            USING (CASE WHEN (SELECT fabric.sees_all_orgs()) THEN true
                        ELSE org = (SELECT fabric.tenant_org()) END);
        COMMENT ON POLICY api_reader ON fabric.{table} IS
            'Reads through the fabric_api views (owned by fabric_reader): every org for the table owner,
             superusers and analysts; only fabric.tenant_org()''s rows for a service role.';
        """)


def _views() -> None:
    # From fabric/sql/surface/ (docs/sql.md, "How the surface is defined"); the two views of 0001 are
    # unchanged in definition (their owner changes in _grants).
    op.execute(surface.sql("orgs", "decisions", "writes", "live_memories", "supersessions", "duplicates",
                           "open_writes"))


_VERSION_COLUMNS = {
    "org": "Tenant. Every key starts with it.",
    "id": "The memory (tree node) id.",
    "parent_id": "Parent node; NULL for a root.",
    "root_id": "Root of the node's branch (itself for a root).",
    "depth": "Hops from the root (0 for a root).",
    "content": "The memory's text.",
    "subject": "Structured key: subject (NULL when the memory has no key).",
    "relation": "Structured key: relation (lower case).",
    "value": "Structured key: value.",
    "valid_from": "Valid time: when the fact became true in the world (inclusive).",
    "valid_to": "Valid time: when it stopped being true (exclusive); NULL = still true.",
    "recorded_at": "Transaction time: when the store began to believe this version (inclusive).",
    "expired_at": "Transaction time: when the store stopped believing this version (exclusive); NULL = current.",
    "superseded_by": "The memory that superseded this one (a contradiction fork), in this version.",
    "placement": "The decision kind that created the node: child_update, contradiction_fork or new_branch.",
    "source": "Provenance: the system the write came from.",
    "kind": "The write's kind (fact, preference, episodic, ...).",
    "durability": "Durability class of the write.",
    "metadata": "Caller-supplied JSON.",
    "version": "Version number of the memory (1 = as first placed).",
    "state": "live, or superseded (its valid time was closed by a correction).",
    "decision_id": "The decision (fabric_api.decisions) that produced this version.",
    "write_id": "The write (fabric_api.writes) that created the node.",
}


_WRITE_COLUMNS = {
    "org": "Tenant.",
    "id": "Write id (the receipt id the library returned).",
    "content": "The text written.",
    "subject": "Structured key given by the caller: subject.",
    "relation": "Structured key: relation.",
    "value": "Structured key: value.",
    "valid_from": "Valid time the caller gave (or the time of the write).",
    "valid_to": "Valid end the caller gave, if any.",
    "source": "Provenance: the system the write came from.",
    "kind": "The write's kind.",
    "durability": "Durability class.",
    "metadata": "Caller-supplied JSON.",
    "status": "pending | placed | duplicate | parked.",
    "error": "The last placement error (kept when parked).",
    "attempts": "Failed placement attempts.",
    "job_id": "The RQ job that carries the write.",
    "received_at": "When the write was accepted.",
    "settled_at": "When it was placed, recorded as a duplicate or parked.",
    "memory_id": "The memory created (placed) or repeated (duplicate).",
    "decision_id": "The decision that settled it.",
}


def _document() -> None:
    _comments("SCHEMA", "fabric_api",
              "fabric's stable SQL surface for analysts and the library: views and set-returning functions. "
              "The library calls these same functions, so SQL and library answers agree. See docs/sql.md.")
    _comments("VIEW", "fabric_api.memory_nodes",
              "Every tree node (memory) ever placed, whatever its state; nodes are immutable. No embeddings.",
              {k: _VERSION_COLUMNS[k] for k in ("org", "id", "write_id", "parent_id", "root_id", "depth",
                                                "content", "subject", "relation", "value", "source", "kind",
                                                "durability", "metadata", "placement")}
              | {"created_at": "Transaction time the node was placed."})
    _comments("VIEW", "fabric_api.memory_versions",
              "Every version of every memory: the transaction-time history. A change expires the current "
              "version (expired_at) and adds the next; a retraction expires it with no successor. "
              "expired_at IS NULL selects what the store believes now.", _VERSION_COLUMNS)
    _comments("VIEW", "fabric_api.live_memories",
              "Live memories: the current belief (expired_at IS NULL) valid now - what "
              "fabric_api.belief_state(org) returns, for every org. A memory whose valid time a correction "
              "has closed (superseded) is not valid now and is left out. Same columns as memory_versions.",
              _VERSION_COLUMNS)
    _comments("VIEW", "fabric_api.supersessions",
              "One row per (memory, the memory that superseded it), from the version history: who replaced "
              "what, when, and whether the store still believes it.",
              {"org": "Tenant.",
               "memory_id": "The superseded memory.",
               "superseded_by": "The memory that superseded it.",
               "subject": "Key subject of the superseded memory.",
               "relation": "Key relation of the superseded memory.",
               "old_value": "Key value of the superseded memory.",
               "new_value": "Key value of the memory that superseded it.",
               "old_content": "Text of the superseded memory.",
               "new_content": "Text of the memory that superseded it.",
               "written_at": "Transaction time the superseded memory was placed.",
               "superseded_at": "Transaction time the store first recorded the supersession.",
               "believed_for": "superseded_at - written_at: how long the store believed it current.",
               "arrived_superseded": "True when the memory was written already superseded (a late-arriving "
                                     "older fact: history, not a correction).",
               "believed": "True while the store still believes the supersession (false once the newer "
                           "memory was retracted or its fork reverted)."})
    _comments("VIEW", "fabric_api.decisions",
              "The audit log: every placement decision (action place, with its kind) and every later "
              "mutation (revert, retract, replay, invalidate_source), with its reason.",
              {"org": "Tenant.",
               "id": "Decision id.",
               "action": "place | revert | retract | replay | invalidate_source.",
               "kind": "For placements: duplicate | child_update | contradiction_fork | new_branch.",
               "write_id": "The write decided on.",
               "memory_id": "The memory created (for a duplicate: the memory repeated; for a retraction: "
                            "the memory retracted).",
               "target_id": "The existing memory the decision is about (parent, superseded or repeated).",
               "validator": "Who decided: rule, llm, pregate, admin, ...",
               "model": "The LLM model, when one decided.",
               "reason": "Why, in words.",
               "confidence": "The validator's confidence in [0, 1].",
               "latency_ms": "Validator latency in milliseconds.",
               "prompt_tokens": "LLM prompt tokens.",
               "completion_tokens": "LLM completion tokens.",
               "created_at": "Transaction time of the decision.",
               "reverts": "For a revert: the decision it reverts.",
               "reverted_by": "The revert event that undid this decision, if any.",
               "replay_id": "The replay that produced this decision, if any.",
               "details": "What the event did (superseded, revived, out_of_order, ...), as JSON."})
    _comments("VIEW", "fabric_api.writes",
              "Intake: every accepted write and where it stands (pending, placed, duplicate, parked).",
              _WRITE_COLUMNS)
    _comments("VIEW", "fabric_api.open_writes",
              "Writes not settled yet: pending (waiting for a worker) or parked (an admin must look; error "
              "says why).",
              {**{k: _WRITE_COLUMNS[k] for k in ("org", "id", "status", "error", "attempts", "received_at",
                                                 "job_id", "content", "subject", "relation", "value", "source",
                                                 "kind")},
               "status": "pending | parked.",
               "settled_at": "When it was parked (NULL while pending).",
               "age": "now() - received_at."})
    _comments("VIEW", "fabric_api.duplicates",
              "Writes recorded as duplicates, with the memory each one repeats.",
              {**{k: _WRITE_COLUMNS[k] for k in ("org", "content", "subject", "relation", "value", "source",
                                                 "kind", "received_at")},
               "write_id": "The duplicate write.",
               "settled_at": "When it was recorded as a duplicate.",
               "duplicate_of": "The memory it repeats.",
               "duplicate_of_content": "That memory's text.",
               "duplicate_of_source": "That memory's source.",
               "decision_id": "The duplicate decision.",
               "validator": "Who decided it was a duplicate (pregate: an exact repeat).",
               "model": "The LLM model, when one decided.",
               "confidence": "The validator's confidence.",
               "reason": "Why."})
    _comments("VIEW", "fabric_api.orgs", "Tenants, registered on first write.",
              {"org": "Tenant.", "created_at": "First write."})
    _comments("FUNCTION", "fabric_api.holds(timestamptz, timestamptz, timestamptz, timestamptz, timestamptz, "
              "timestamptz, boolean)",
              "THE temporal predicate: a version holds at (valid_at, known_at) when the store believed it at "
              "known_at (recorded_at <= known_at < expired_at) and, unless include_superseded, it was valid at "
              "valid_at (valid_from <= valid_at < valid_to). NULL ends are open.")
    _comments("FUNCTION", "fabric_api.belief_state(text, timestamptz, timestamptz, boolean)",
              "Belief state: every memory of p_org valid at p_valid_at as the store knew it at p_known_at "
              "(both default now()). With p_known_at in the past it answers what fabric believed then - the "
              "audit question. Rows are fabric_api.memory_versions.")
    _comments("FUNCTION", "fabric_api.current_value(text, text, text, timestamptz, timestamptz)",
              "current_value(org, subject, relation[, valid_at, known_at]): the one memory holding that "
              "structured key, the latest valid_from first. An exact lookup; no embeddings.")
    _comments("FUNCTION", "fabric_api.walk(text, uuid, boolean, integer, timestamptz, timestamptz)",
              "walk(org, root, include_superseded[, max_depth, valid_at, known_at]): the subtree under root "
              "by a recursive CTE over tree nodes of any state, so a superseded node never hides its live "
              "descendants; superseded or not-yet-valid nodes are left out of the output unless "
              "include_superseded. Ordered by hops from the root.")
    _comments("FUNCTION", "fabric_api.history(text, uuid)",
              "history(org, memory_id): the supersession chain through a memory - what it replaced and what "
              "replaced it - oldest first, each at its newest version.")


def _grants() -> None:
    views = ", ".join(f"fabric_api.{v}" for v in VIEWS)
    op.execute(f"""
    -- The views' owner: reads fabric's tables (under its api_reader policy), nothing else.
    GRANT USAGE ON SCHEMA fabric TO {READER};
    GRANT SELECT ON {", ".join(f"fabric.{t}" for t in TABLES)} TO {READER};
    GRANT USAGE, CREATE ON SCHEMA fabric_api TO {READER};
    DO $$
    BEGIN
        -- ALTER ... OWNER needs the migrating role to be able to SET ROLE to the new owner.
        IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
            EXECUTE format('GRANT {READER} TO %I', current_user);
        END IF;
    END
    $$;
    """)
    op.execute("\n".join(f"ALTER VIEW fabric_api.{v} OWNER TO {READER};" for v in VIEWS))
    op.execute(f"""
    GRANT USAGE ON SCHEMA fabric_api TO {ANALYST}, {SERVICE};
    GRANT SELECT ON {views} TO {ANALYST}, {SERVICE};

    GRANT USAGE ON SCHEMA fabric TO {SERVICE};
    GRANT SELECT, INSERT ON fabric.orgs, fabric.memories TO {SERVICE};
    GRANT SELECT, INSERT, UPDATE ON fabric.writes, fabric.decisions, fabric.memory_versions TO {SERVICE};
    GRANT SELECT ON fabric.tenant_grants TO {SERVICE};

    -- Fabric.connect() migrates to head first: a service role must be able to read the revision.
    {_if_alembic_version(f"GRANT SELECT ON public.alembic_version TO {SERVICE}")}
    """)


# -------------------------------------------------------------------------------------------- downgrade


def downgrade() -> None:
    op.execute(f"""
    {_if_alembic_version(f"REVOKE ALL ON public.alembic_version FROM {SERVICE}")}
    DROP VIEW fabric_api.open_writes, fabric_api.duplicates, fabric_api.supersessions,
              fabric_api.live_memories, fabric_api.writes, fabric_api.decisions, fabric_api.orgs;

    -- 0001's views, whole, back to the migrating role.
    ALTER VIEW fabric_api.memory_nodes OWNER TO CURRENT_USER;
    ALTER VIEW fabric_api.memory_versions OWNER TO CURRENT_USER;
    """ + surface.sql("memory_nodes", "memory_versions") + f"""
    REVOKE ALL ON ALL TABLES IN SCHEMA fabric_api FROM {ANALYST}, {SERVICE}, {READER};
    REVOKE ALL ON SCHEMA fabric_api FROM {ANALYST}, {SERVICE}, {READER};
    REVOKE ALL ON ALL TABLES IN SCHEMA fabric FROM {SERVICE}, {READER};
    REVOKE ALL ON SCHEMA fabric FROM {SERVICE}, {READER};

    COMMENT ON SCHEMA fabric_api IS NULL;
    COMMENT ON VIEW fabric_api.memory_nodes IS NULL;
    COMMENT ON VIEW fabric_api.memory_versions IS NULL;
    COMMENT ON FUNCTION fabric_api.holds(timestamptz, timestamptz, timestamptz, timestamptz, timestamptz,
                                         timestamptz, boolean) IS NULL;
    COMMENT ON FUNCTION fabric_api.belief_state(text, timestamptz, timestamptz, boolean) IS NULL;
    COMMENT ON FUNCTION fabric_api.current_value(text, text, text, timestamptz, timestamptz) IS NULL;
    COMMENT ON FUNCTION fabric_api.walk(text, uuid, boolean, integer, timestamptz, timestamptz) IS NULL;
    COMMENT ON FUNCTION fabric_api.history(text, uuid) IS NULL;
    """)
    # Column comments on the two kept views.
    for view, cols in (("memory_nodes", ("org", "id", "write_id", "parent_id", "root_id", "depth", "content",
                                         "subject", "relation", "value", "source", "kind", "durability",
                                         "metadata", "placement", "created_at")),
                       ("memory_versions", tuple(_VERSION_COLUMNS))):
        op.execute("\n".join(f"COMMENT ON COLUMN fabric_api.{view}.{c} IS NULL;" for c in cols))
    for table in TABLES:
        op.execute(f"""
        DROP POLICY api_reader ON fabric.{table};
        DROP POLICY tenant_isolation ON fabric.{table};
        ALTER TABLE fabric.{table} DISABLE ROW LEVEL SECURITY;
        """)
    op.execute("""
    DROP FUNCTION fabric.tenant_org();
    DROP FUNCTION fabric.sees_all_orgs();
    DROP TABLE fabric.tenant_grants;
    """)
