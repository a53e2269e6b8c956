"""The bench database, the bulk load (binary COPY, indexes rebuilt after) and its disk bytes."""

from __future__ import annotations

import os
import time
import uuid
from datetime import datetime, timedelta
from typing import Any, Sequence
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import dict_row

from ...db import Conn, one
from ...errors import ConfigurationError, DatabaseError
from ...read import indexes as org_indexes
from .config import DIM, EPOCH, NEVER, Progress
from .corpus import KIND_CODES, Corpus

# --------------------------------------------------------------------------------------------------
# the bench database and the bulk load


def database_url_with(url: str, dbname: str) -> str:
    """The same server URL with another database name (fabric.db.migrate wants a postgresql:// URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres", "postgresql+psycopg"):
        raise ConfigurationError("the scale benchmark needs DATABASE_URL as a postgresql:// URL")
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, parts.fragment))


def _ts(us: int) -> datetime | None:
    return None if us >= NEVER else EPOCH + timedelta(microseconds=int(us))


def _at(us: int) -> datetime:
    """`_ts` of a time that is never open-ended (a recording time, a valid_from)."""
    return EPOCH + timedelta(microseconds=int(us))


class BenchDatabase:
    """A database of its own on the configured server: created, migrated, dropped at the end."""

    def __init__(self, server_url: str, label: str):
        self.name = f"fabric_bench_scale_{label}_{uuid.uuid4().hex[:6]}"
        self.admin_url = database_url_with(server_url, "postgres")
        self.url = database_url_with(server_url, self.name)

    @classmethod
    def kept(cls, url: str) -> BenchDatabase:
        """A database an earlier run kept (`--keep`): read, never created nor dropped here."""
        db = cls.__new__(cls)
        db.url = url
        db.name = urlsplit(url).path.lstrip("/")
        db.admin_url = database_url_with(url, "postgres")
        return db

    def create(self) -> None:
        from ...db import migrate

        try:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot create the benchmark database {self.name} on the server (the role "
                                f"needs CREATEDB): {exc}") from exc
        try:
            migrate(self.url, embedding_dim=DIM)
        except BaseException:
            self.drop()
            raise

    def drop(self) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name)))

    def connect(self, *, autocommit: bool = False) -> Conn:
        conn = psycopg.connect(self.url, autocommit=autocommit, row_factory=dict_row)
        register_vector(conn)
        if not autocommit:
            conn.commit()
        return conn


FABRIC_TABLES = ("orgs", "writes", "decisions", "memories", "memory_versions", "current_embeddings", "term_counts")

_SECONDARY = """
SELECT c.relname AS table_name, i.relname AS index_name, pg_get_indexdef(i.oid) AS ddl,
       am.amname AS method
FROM pg_index x
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_am am ON am.oid = i.relam
JOIN pg_namespace s ON s.oid = c.relnamespace
WHERE s.nspname = 'fabric' AND c.relname = ANY(%(tables)s) AND NOT x.indisunique
ORDER BY c.relname, i.relname
"""

_FOREIGN_KEYS = """
SELECT c.relname AS table_name, k.conname AS name, pg_get_constraintdef(k.oid) AS ddl
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_namespace s ON s.oid = c.relnamespace
WHERE s.nspname = 'fabric' AND c.relname = ANY(%(tables)s) AND k.contype = 'f'
ORDER BY c.relname, k.conname
"""


# Which memories can be current: believed, and not superseded with their valid time over. Written
# here from the model's definition (docs/architecture.md), not copied from migration 0006's trigger.
_FILL_CURRENT = """
INSERT INTO fabric.current_embeddings (org, memory_id, embedding)
SELECT m.org, m.id, m.embedding
FROM fabric.memories m
JOIN fabric.memory_versions v ON v.org = m.org AND v.memory_id = m.id AND v.expired_at IS NULL
WHERE v.state = 'live' OR v.valid_to IS NULL OR v.valid_to > now()
"""


# Per org and lexeme: the memories that contain it, and how many of them are current (after _FILL_CURRENT).
_FILL_TERM_COUNTS = """
INSERT INTO fabric.term_counts (org, lexeme, memories, current_memories)
SELECT m.org, w.lexeme, count(*), count(c.memory_id)
FROM fabric.memories m
LEFT JOIN fabric.current_embeddings c ON c.org = m.org AND c.memory_id = m.id
CROSS JOIN LATERAL unnest(m.search_text) AS w
GROUP BY m.org, w.lexeme
"""


def _build_workers() -> int:
    """Parallel maintenance workers for the index builds: every core but the leader's."""
    return max(1, (os.cpu_count() or 2) - 1)


def _maintenance_mem(rows: int) -> str:
    """Enough for the HNSW graph to fit (pgvector builds slowly once it does not)."""
    # ~1.6 kB of vector + ~0.6 kB of neighbour lists per element at m = 16, with headroom
    mb = int(min(8192, max(256, rows * 4 * 1024 / 1_000_000)))
    return f"{mb}MB"


def bulk_load(db: BenchDatabase, c: Corpus, progress: Progress) -> dict[str, float]:
    """COPY the corpus into fabric's tables; rebuild indexes and foreign keys after; VACUUM ANALYZE."""
    timings: dict[str, float] = {}
    with db.connect(autocommit=True) as conn:
        conn.add_notice_handler(lambda d: progress(f"  server notice: {d.message_primary}"))
        indexes = conn.execute(_SECONDARY, {"tables": list(FABRIC_TABLES)}).fetchall()
        fks = conn.execute(_FOREIGN_KEYS, {"tables": list(FABRIC_TABLES)}).fetchall()
        for fk in fks:
            conn.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(
                sql.Identifier("fabric", fk["table_name"]), sql.Identifier(fk["name"])))
        for ix in indexes:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier("fabric", ix["index_name"])))
        t = time.perf_counter()
        # The triggers that keep current_embeddings and term_counts would see every row in one
        # statement; fill those tables once after the COPY instead.
        conn.execute("ALTER TABLE fabric.memory_versions DISABLE TRIGGER current_embeddings_on_insert")
        conn.execute("ALTER TABLE fabric.memories DISABLE TRIGGER term_counts_on_insert")
        _copy_all(conn, c, progress)
        conn.execute("ALTER TABLE fabric.memory_versions ENABLE TRIGGER current_embeddings_on_insert")
        conn.execute("ALTER TABLE fabric.memories ENABLE TRIGGER term_counts_on_insert")
        timings["copy_s"] = time.perf_counter() - t
        t = time.perf_counter()
        progress("  fill fabric.current_embeddings and fabric.term_counts")
        # term_counts is filled whole after current_embeddings, not counted by its trigger meanwhile
        conn.execute("ALTER TABLE fabric.current_embeddings DISABLE TRIGGER current_terms_on_insert")
        conn.execute(_FILL_CURRENT)
        conn.execute("ALTER TABLE fabric.current_embeddings ENABLE TRIGGER current_terms_on_insert")
        conn.execute(_FILL_TERM_COUNTS)
        timings["derived_tables_fill_s"] = time.perf_counter() - t
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(_maintenance_mem(c.n))))
        conn.execute(sql.SQL("SET max_parallel_maintenance_workers = {}").format(sql.Literal(_build_workers())))
        t = time.perf_counter()
        for ix in [i for i in indexes if i["method"] != "hnsw"]:
            conn.execute(ix["ddl"])
        timings["btree_gin_indexes_s"] = time.perf_counter() - t
        t = time.perf_counter()
        for fk in fks:
            conn.execute(sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} ").format(
                sql.Identifier("fabric", fk["table_name"]), sql.Identifier(fk["name"])) + sql.SQL(fk["ddl"]))
        timings["foreign_keys_s"] = time.perf_counter() - t
        for ix in [i for i in indexes if i["method"] == "hnsw"]:
            progress(f"  building {ix['index_name']} on {ix['table_name']} "
                     f"(maintenance_work_mem {_maintenance_mem(c.n)}, {_build_workers()} parallel workers)")
            t = time.perf_counter()
            conn.execute(ix["ddl"])
            key = "hnsw_index_s" if ix["table_name"] == "memories" else f"hnsw_{ix['table_name']}_s"
            timings[key] = time.perf_counter() - t
        # The per-org HNSW indexes, as `fabric index orgs` builds them (not concurrently: nothing writes)
        t = time.perf_counter()
        built = org_indexes.apply(conn, org_indexes.plan(conn), concurrently=False, analyze=False,
                                  progress=progress)
        timings["org_hnsw_indexes_s"] = time.perf_counter() - t
        progress(f"  per-org HNSW indexes: {len(built)} built in {timings['org_hnsw_indexes_s']:.0f} s")
        t = time.perf_counter()
        conn.execute("VACUUM (ANALYZE) fabric.orgs, fabric.writes, fabric.decisions, fabric.memories, "
                     "fabric.memory_versions, fabric.current_embeddings, fabric.term_counts")
        timings["vacuum_analyze_s"] = time.perf_counter() - t
    return timings


def _copy(conn: Conn, table: str, columns: Sequence[str], types: Sequence[str], rows) -> None:
    stmt = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier("fabric", table), sql.SQL(", ").join(map(sql.Identifier, columns)))
    with conn.cursor() as cur, cur.copy(stmt) as cp:
        cp.set_types(list(types))
        for row in rows:
            cp.write_row(row)


def _copy_all(conn: Conn, c: Corpus, progress: Progress) -> None:
    n = c.n
    org = c.orgs
    org_first: dict[int, int] = {}
    for i in range(n):
        org_first.setdefault(int(c.org_of[i]), i)
    _copy(conn, "orgs", ("org", "created_at"), ("text", "timestamptz"),
          ((org[o], _ts(int(c.rec[i]))) for o, i in sorted(org_first.items())))
    ids = [c.mem_uuid(i) for i in range(n)]
    wids = [c.uid(c.write_ids, i) for i in range(n)]
    dids = [c.uid(c.decision_ids, i) for i in range(n)]
    rec = [_at(int(x)) for x in c.rec]
    vf = [_ts(int(x)) for x in c.vf]
    wvt = [_ts(int(x)) for x in c.wvt]
    kinds = [KIND_CODES[k] for k in c.kind]
    progress(f"  COPY fabric.writes ({n:,} rows)")
    _copy(conn, "writes",
          ("org", "id", "content", "subject", "relation", "value", "valid_from", "valid_to", "source", "kind",
           "durability", "status", "job_id", "received_at", "settled_at", "memory_id", "decision_id"),
          ("text", "uuid", "text", "text", "text", "text", "timestamptz", "timestamptz", "text", "text", "text",
           "text", "text", "timestamptz", "timestamptz", "uuid", "uuid"),
          ((org[c.org_of[i]], wids[i], c.content[i], c.subject[i], c.relation[i], c.value[i], vf[i], wvt[i],
            c.source[i], "fact", "durable", "placed", "bulk-load", rec[i] - timedelta(milliseconds=40), rec[i],
            ids[i], dids[i]) for i in range(n)))
    progress(f"  COPY fabric.decisions ({n:,} placements + retractions)")
    retract = np.flatnonzero(c.retracted_at < NEVER)

    def decisions():
        for i in range(n):
            k = kinds[i]
            tgt = int(c.target[i])
            validator = "rule" if k != "new_branch" else "pregate"
            reason = {"new_branch": "nothing near", "child_update": "extends the existing memory with more detail",
                      "contradiction_fork": "same key with a different value"}[k]
            yield (org[c.org_of[i]], dids[i], "place", k, wids[i], ids[i], ids[tgt] if tgt >= 0 else None,
                   validator, reason, 0.9, 0.2, rec[i])
        for i in retract:
            yield (org[c.org_of[i]], uuid.uuid4(), "retract", None, None, ids[i], None, "admin",
                   "retracted: the source was wrong", 1.0, None, _ts(int(c.retracted_at[i])))

    _copy(conn, "decisions",
          ("org", "id", "action", "kind", "write_id", "memory_id", "target_id", "validator", "reason",
           "confidence", "latency_ms", "created_at"),
          ("text", "uuid", "text", "text", "uuid", "uuid", "uuid", "text", "text", "float4", "float4",
           "timestamptz"),
          decisions())
    progress(f"  COPY fabric.memories ({n:,} rows with {DIM}-d vectors)")
    vecs = c.vectors
    _copy(conn, "memories",
          ("org", "id", "write_id", "parent_id", "root_id", "depth", "content", "subject", "relation", "value",
           "source", "kind", "durability", "placement", "embedding", "created_at"),
          ("text", "uuid", "uuid", "uuid", "uuid", "int4", "text", "text", "text", "text", "text", "text",
           "text", "text", "vector", "timestamptz"),
          ((org[c.org_of[i]], ids[i], wids[i], ids[c.parent[i]] if c.parent[i] >= 0 else None, ids[c.root[i]],
            int(c.depth[i]), c.content[i], c.subject[i], c.relation[i], c.value[i], c.source[i], "fact",
            "durable", kinds[i], vecs[i], rec[i]) for i in range(n)))
    nv = len(c.v_mem)
    progress(f"  COPY fabric.memory_versions ({nv:,} rows)")
    _copy(conn, "memory_versions",
          ("org", "memory_id", "version", "valid_from", "valid_to", "state", "superseded_by", "decision_id",
           "recorded_at", "expired_at"),
          ("text", "uuid", "int4", "timestamptz", "timestamptz", "text", "uuid", "uuid", "timestamptz",
           "timestamptz"),
          ((org[c.org_of[c.v_mem[j]]], ids[c.v_mem[j]], int(c.v_no[j]), _ts(int(c.v_vf[j])),
            _ts(int(c.v_vt[j])), "superseded" if c.v_state[j] else "live",
            ids[c.v_sup[j]] if c.v_sup[j] >= 0 else None, dids[c.v_dec[j]], _ts(int(c.v_rec[j])),
            _ts(int(c.v_exp[j]))) for j in range(nv)))

# --------------------------------------------------------------------------------------------------
# disk


_DISK = """
SELECT c.relname AS table_name, pg_table_size(c.oid) AS table_bytes, pg_indexes_size(c.oid) AS index_bytes,
       pg_total_relation_size(c.oid) AS total_bytes
FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
WHERE s.nspname = 'fabric' AND c.relname = ANY(%(tables)s)
"""


def measure_disk(db: BenchDatabase, c: Corpus) -> dict[str, Any]:
    with db.connect(autocommit=True) as conn:
        rows = {r["table_name"]: r for r in conn.execute(_DISK, {"tables": list(FABRIC_TABLES)}).fetchall()}
        hnsw = one(conn.execute("SELECT pg_relation_size('fabric.ix_memories_embedding_hnsw') AS b"))["b"]
    mem = sum(rows[t]["total_bytes"] for t in ("memories", "memory_versions", "current_embeddings"))
    allb = sum(r["total_bytes"] for r in rows.values())
    current = rows["current_embeddings"]["total_bytes"]
    return {"tables": {t: {k: int(v) for k, v in r.items() if k != "table_name"} for t, r in rows.items()},
            "hnsw_index_bytes": int(hnsw),
            "memory_tables_bytes_per_memory": round(mem / c.n, 1),
            "all_tables_bytes_per_memory": round(allb / c.n, 1),
            "hnsw_bytes_per_memory": round(hnsw / c.n, 1),
            "current_embeddings_bytes_per_memory": round(current / c.n, 1)}
