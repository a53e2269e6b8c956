-- Flat vector baselines for the benchmarks (fabric/bench/flat.py): one table, top-k cosine, no time.
-- `{schema}`, `{table}` and `{index}` are identifiers composed with psycopg.sql; `{dim}` a literal.

-- name: flat_create_schema
-- The schema that holds every flat baseline table.
CREATE SCHEMA IF NOT EXISTS {schema}

-- name: flat_create_table
-- One flat store: text, metadata (timestamps are metadata only) and the embedding.
CREATE TABLE IF NOT EXISTS {table} (
    id         text PRIMARY KEY,
    content    text NOT NULL,
    metadata   jsonb NOT NULL,
    embedding  vector({dim}) NOT NULL
)

-- name: flat_create_index
-- The same HNSW cosine index fabric uses on fabric.memories.
CREATE INDEX IF NOT EXISTS {index} ON {table}
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)

-- name: flat_copy
-- Bulk-add rows (binary COPY: text, text, jsonb, vector).
COPY {table} (id, content, metadata, embedding) FROM STDIN (FORMAT BINARY)

-- name: flat_query
-- Top-k by cosine similarity, nothing else: no time, no state. A single ORDER BY key, so the
-- HNSW index serves it (a tie-breaker column would force a sequential scan and a sort).
SELECT id, content, metadata, 1 - (embedding <=> %(q)s) AS score
FROM {table}
ORDER BY embedding <=> %(q)s
LIMIT %(k)s

-- name: flat_delete
-- Remove rows (a flat store's only way to forget).
DELETE FROM {table} WHERE id = ANY(%(ids)s)

-- name: flat_count
-- How many rows the store holds.
SELECT count(*) AS n FROM {table}

-- name: flat_drop
-- Drop the store.
DROP TABLE IF EXISTS {table}
