-- name: export_tables
-- The fabric tables keyed by org, with the columns an export carries (generated columns are
-- recomputed on import), read from the catalog so columns added by later migrations come along.
SELECT c.table_name::text AS table_name,
       array_agg(c.column_name::text ORDER BY c.ordinal_position)
           FILTER (WHERE c.is_generated = 'NEVER') AS columns
FROM information_schema.tables t
JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name
WHERE t.table_schema = 'fabric' AND t.table_type = 'BASE TABLE'
GROUP BY c.table_name
HAVING bool_or(c.column_name = 'org')
ORDER BY c.table_name;

-- name: export_keys
-- Primary and foreign keys between fabric tables: the order rows must be written in.
SELECT src.relname::text AS table_name,
       con.contype::text AS kind,
       dst.relname::text AS references_table,
       (SELECT array_agg(a.attname::text ORDER BY k.ord)
        FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
        JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum) AS columns,
       (SELECT array_agg(a.attname::text ORDER BY k.ord)
        FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
        JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum) AS references_columns
FROM pg_constraint con
JOIN pg_class src ON src.oid = con.conrelid
JOIN pg_namespace n ON n.oid = src.relnamespace
LEFT JOIN pg_class dst ON dst.oid = con.confrelid
WHERE n.nspname = 'fabric' AND con.contype IN ('p', 'f')
ORDER BY src.relname, con.conname;

-- name: export_schema_revision
-- The Alembic revision of the database an export comes from (or goes to).
SELECT version_num FROM public.alembic_version;

-- name: import_stage_create
-- Staging for an import: every line lands here first (COPY), then moves table by table.
CREATE TEMP TABLE fabric_import_stage (
    line integer PRIMARY KEY,
    table_name text NOT NULL,
    row_data jsonb NOT NULL,
    done boolean NOT NULL DEFAULT false
) ON COMMIT DROP;

-- name: import_stage_index
CREATE INDEX ON fabric_import_stage (table_name) WHERE NOT done;

-- name: import_stage_copy
COPY fabric_import_stage (line, table_name, row_data) FROM STDIN;

-- name: import_stage_lines
-- The staged lines of one table not inserted yet, in file order (to find a bad one).
SELECT line, row_data FROM fabric_import_stage
WHERE table_name = %(table_name)s AND NOT done
ORDER BY line;
