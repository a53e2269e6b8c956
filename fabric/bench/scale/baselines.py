"""Flat baselines (fabric/bench/flat.py) bulk-loaded the same way: a pgvector table and a ChromaDB collection."""

from __future__ import annotations

import time
import uuid
from typing import Sequence

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb

from ...db import one
from .config import DIM, EF_SEARCH, K
from .load import BenchDatabase, _build_workers, _maintenance_mem
from .timing import Meter, _explain, backend_cpu_meter, process_cpu_meter

# --------------------------------------------------------------------------------------------------
# flat baselines (fabric/bench/flat.py), bulk-loaded the same way


_FLAT_QUERY = "SELECT id, content, metadata, 1 - (embedding <=> %(q)s) AS score FROM {table} " \
              "ORDER BY embedding <=> %(q)s LIMIT %(k)s"


class FlatBaseline:
    """A flat pgvector table for one tenant: FlatPgvector's table and index DDL, bulk-loaded.

    Queried with `ORDER BY embedding <=> q LIMIT k`: flat.py's own `flat_query` adds `, id` as a
    tie-breaker, which stops PostgreSQL from using the HNSW index (a seq scan + sort), so it would
    measure an exact scan, not the flat pgvector an application runs."""

    def __init__(self, db: BenchDatabase, name: str):
        from ..flat import SCHEMA, FlatPgvector

        self.store = FlatPgvector(db.url, name, dim=DIM, ef_search=EF_SEARCH)
        self.schema = SCHEMA
        self.table = sql.Identifier(SCHEMA, f"flat_{name}")
        self.index_name = f"flat_{name}_hnsw"
        self.index = sql.Identifier(self.index_name)
        self.rows = 0
        self.conn = db.connect()
        self.meter = backend_cpu_meter(self.conn)

    def load(self, ids: Sequence[uuid.UUID], texts: Sequence[str], vectors: np.ndarray,
             metadata: Sequence[dict]) -> dict[str, float]:
        from ...sql import q

        out = {}
        with psycopg.connect(self.conn.info.dsn, autocommit=True) as conn:
            register_vector(conn)
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(self.schema, self.index_name)))
            conn.execute(sql.SQL("TRUNCATE {}").format(self.table))  # a kept database may hold a run's leftovers
            t = time.perf_counter()
            stmt = sql.SQL("COPY {} (id, content, metadata, embedding) FROM STDIN (FORMAT BINARY)").format(self.table)
            with conn.cursor() as cur, cur.copy(stmt) as cp:
                cp.set_types(["text", "text", "jsonb", "vector"])
                for i, t_, v, m in zip(ids, texts, vectors, metadata):
                    cp.write_row((str(i), t_, Jsonb(m), v))
            out["copy_s"] = time.perf_counter() - t
            conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(_maintenance_mem(len(ids)))))
            conn.execute(sql.SQL("SET max_parallel_maintenance_workers = {}").format(sql.Literal(_build_workers())))
            t = time.perf_counter()
            conn.execute(sql.SQL(q("flat_create_index")).format(table=self.table, index=self.index))
            out["hnsw_index_s"] = time.perf_counter() - t
            conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(self.table))
        self.rows = len(ids)
        return out

    def query(self, vec: np.ndarray, k: int = K, ef_search: int = EF_SEARCH) -> list[str]:
        with self.conn.transaction():
            self.conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(ef_search, k)),))
            rows = self.conn.execute(sql.SQL(_FLAT_QUERY).format(table=self.table), {"q": vec, "k": k}).fetchall()
        return [r["id"] for r in rows]

    def explain(self, vec: np.ndarray) -> list[str]:
        with self.conn.transaction():
            self.conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(EF_SEARCH),))
            return _explain(self.conn, sql.SQL(_FLAT_QUERY).format(table=self.table).as_string(self.conn),
                            {"q": vec, "k": K})

    def disk_bytes(self) -> int:
        with self.conn.transaction():
            return int(one(self.conn.execute("SELECT pg_total_relation_size(%s::regclass) AS b",
                                             (f"{self.schema}.flat_{self.store.name}",)))["b"])

    def close(self) -> None:
        self.conn.close()
        self.store.drop()


class ChromaBaseline:
    def __init__(self, name: str):
        from ..flat import ChromaFlat

        self.store = ChromaFlat(f"{name}_{uuid.uuid4().hex[:6]}", dim=DIM)
        self.meter: Meter = process_cpu_meter  # ChromaDB runs in this process

    def load(self, ids, texts, vectors, metadata) -> dict[str, float]:
        t = time.perf_counter()
        batch = 5000
        try:
            batch = int(self.store._client.get_max_batch_size())
        except Exception:  # an older client
            pass
        for s in range(0, len(ids), batch):
            self.store.add([str(i) for i in ids[s:s + batch]], list(texts[s:s + batch]), vectors[s:s + batch],
                           list(metadata[s:s + batch]))
        return {"add_s": time.perf_counter() - t}

    def query(self, vec: np.ndarray, k: int = K) -> list[str]:
        return [h.id for h in self.store.query(vec, k)]

    def close(self) -> None:
        self.store.drop()
