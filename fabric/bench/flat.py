"""Flat vector baselines: one store, top-k cosine, no idea of time.

This is the "flat RAG" of seed 000: rows sit side by side and similarity alone decides what comes
back. Timestamps may be kept in the metadata, but retrieval never looks at them. Two backends share
one small interface so benchmarks can swap them:

    store = FlatPgvector(url_or_connection, "mycase", dim=384)     # or ChromaFlat("mycase")
    store.add(ids, texts, vectors, metadata)      # vectors: (n, dim) float array; any batch size
    hits = store.query(vector, k=5)               # -> list[FlatHit], best first (score = cosine similarity)
    store.delete(ids)                             # a flat store's only way to forget
    store.count()
    store.drop()                                  # remove the table / collection

Both take embeddings explicitly: the caller embeds once and gives every backend the same vectors.
`FlatPgvector` keeps one table per store, `fabric_bench.flat_<name>`, with the same HNSW cosine
index fabric uses. `ChromaFlat` runs ChromaDB embedded and offline (an optional dependency, the
`bench` extra): check `chroma_available()` first."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ConfigurationError, ValidationError
from ..sql import q

log = logging.getLogger(__name__)

SCHEMA = "fabric_bench"
_NAME = re.compile(r"^[a-z0-9_]{1,50}$")


@dataclass(frozen=True, slots=True)
class FlatHit:
    """One row a flat store returned: its id, text, metadata and cosine similarity to the query."""

    id: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValidationError("name", f"{name!r}: use 1-50 characters of a-z, 0-9 and _")
    return name


def _check_batch(ids: Sequence[str], texts: Sequence[str], vectors: Any,
                 metadata: Sequence[Mapping[str, Any]] | None, dim: int | None) -> tuple[np.ndarray, list]:
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2:
        raise ValidationError("vectors", f"expected a 2-d array (n, dim), got shape {arr.shape}")
    n = len(ids)
    if len(texts) != n or arr.shape[0] != n:
        raise ValidationError("vectors", f"{n} ids, {len(texts)} texts and {arr.shape[0]} vectors: must match")
    if dim is not None and arr.shape[1] != dim:
        raise ValidationError("vectors", f"dimension {arr.shape[1]}, the store holds {dim}")
    meta = list(metadata) if metadata is not None else [{} for _ in range(n)]
    if len(meta) != n:
        raise ValidationError("metadata", f"{len(meta)} entries for {n} ids")
    return arr, meta


class FlatPgvector:
    """A flat pgvector store: table `fabric_bench.flat_<name>`, HNSW cosine, top-k, no time.

    `db` is a PostgreSQL URL (the store opens and owns an autocommit connection) or an open
    psycopg connection (shared, left open; it must be in autocommit mode). pgvector must be
    installed in the database (fabric's migration creates the extension)."""

    def __init__(self, db: Any, name: str, *, dim: int, ef_search: int = 100):
        import psycopg
        from pgvector.psycopg import register_vector
        from psycopg import sql

        self.name = _check_name(name)
        self.dim = int(dim)
        self.ef_search = int(ef_search)
        if isinstance(db, str):
            self._conn = psycopg.connect(db, autocommit=True)
            self._own = True
        else:
            self._conn, self._own = db, False
        if not self._conn.autocommit:
            raise ConfigurationError("FlatPgvector needs an autocommit connection")
        self._conn.execute(sql.SQL(q("flat_create_schema")).format(schema=sql.Identifier(SCHEMA)))
        register_vector(self._conn)
        self._ids = dict(table=sql.Identifier(SCHEMA, f"flat_{self.name}"),
                         index=sql.Identifier(f"flat_{self.name}_hnsw"), schema=sql.Identifier(SCHEMA),
                         dim=sql.Literal(self.dim))
        self._conn.execute(self._sql("flat_create_table"))
        self._conn.execute(self._sql("flat_create_index"))

    def _sql(self, name: str):
        from psycopg import sql

        return sql.SQL(q(name)).format(**self._ids)

    @property
    def table(self) -> str:
        return f"{SCHEMA}.flat_{self.name}"

    def add(self, ids: Sequence[str], texts: Sequence[str], vectors: Any,
            metadata: Sequence[Mapping[str, Any]] | None = None) -> None:
        """Insert rows (ids must be new) with one binary COPY. Metadata is stored as JSON and
        returned with hits."""
        from psycopg.types.json import Jsonb

        arr, meta = _check_batch(ids, texts, vectors, metadata, self.dim)
        if not len(ids):
            return
        with self._conn.cursor() as cur, cur.copy(self._sql("flat_copy")) as cp:
            cp.set_types(["text", "text", "jsonb", "vector"])
            for i, t, v, m in zip(ids, texts, arr, meta):
                cp.write_row((str(i), t, Jsonb(dict(m)), v))

    def query(self, vector: Any, k: int = 5) -> list[FlatHit]:
        """The k rows most similar to `vector` (cosine), best first."""
        if not isinstance(k, int) or k < 1:
            raise ValidationError("k", "must be a positive integer")
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vec.shape[0] != self.dim:
            raise ValidationError("vector", f"dimension {vec.shape[0]}, the store holds {self.dim}")
        from psycopg.rows import tuple_row

        with self._conn.transaction(), self._conn.cursor(row_factory=tuple_row) as cur:
            cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(self.ef_search, k)),))
            rows = cur.execute(self._sql("flat_query"), {"q": vec, "k": k}).fetchall()
        return [FlatHit(id=r[0], text=r[1], metadata=dict(r[2] or {}), score=float(r[3])) for r in rows]

    def delete(self, ids: Sequence[str]) -> None:
        self._conn.execute(self._sql("flat_delete"), {"ids": [str(i) for i in ids]})

    def count(self) -> int:
        from psycopg.rows import tuple_row

        with self._conn.cursor(row_factory=tuple_row) as cur:
            row = cur.execute(self._sql("flat_count")).fetchone()
            return int(row[0]) if row else 0

    def drop(self) -> None:
        """Drop the table; close the connection if the store opened it."""
        self._conn.execute(self._sql("flat_drop"))
        if self._own:
            self._conn.close()


def chroma_available() -> tuple[bool, str]:
    """(True, version) when ChromaDB can be imported, else (False, a note saying how to get it)."""
    try:
        import chromadb  # noqa: F401
    except ImportError as exc:
        return False, f"chromadb is not installed ({exc}); pip install 'fabric-memory[bench]'"
    return True, getattr(chromadb, "__version__", "?")


_client = None


def chroma_client():
    """One embedded, in-memory ChromaDB client per process (telemetry off, nothing downloaded)."""
    global _client
    if _client is None:
        ok, note = chroma_available()
        if not ok:
            raise ConfigurationError(note)
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        _client = chromadb.EphemeralClient(settings=ChromaSettings(anonymized_telemetry=False))
    return _client


class ChromaFlat:
    """A ChromaDB collection in cosine space; embeddings always passed explicitly.

    ChromaDB's traps, handled here: with text alone it tries to download its default embedding
    model (so every add and query passes vectors and the collection has no embedding function);
    its default space is L2 (set to cosine); collection names need at least 3 characters; metadata
    values must be scalars (None values are left out)."""

    def __init__(self, name: str, *, dim: int | None = None, client: Any = None):
        self.name = _check_name(name)
        self.dim = dim
        self._client = client or chroma_client()
        self._col = self._client.get_or_create_collection(
            f"flat_{self.name}", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None)

    def add(self, ids: Sequence[str], texts: Sequence[str], vectors: Any,
            metadata: Sequence[Mapping[str, Any]] | None = None) -> None:
        arr, meta = _check_batch(ids, texts, vectors, metadata, self.dim)
        if not len(ids):
            return
        clean = [{k: v for k, v in m.items() if v is not None} or {"_": 0} for m in meta]
        try:
            batch = int(self._client.get_max_batch_size())
        except Exception:  # a client without the method: Chroma's usual limit
            batch = 5000
        for s in range(0, len(ids), batch):
            self._col.add(ids=[str(i) for i in ids[s:s + batch]], documents=list(texts[s:s + batch]),
                          embeddings=arr[s:s + batch], metadatas=clean[s:s + batch])

    def query(self, vector: Any, k: int = 5) -> list[FlatHit]:
        if not isinstance(k, int) or k < 1:
            raise ValidationError("k", "must be a positive integer")
        n = self._col.count()
        if n == 0:
            return []
        vec = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        res = self._col.query(query_embeddings=vec, n_results=min(k, n),
                              include=["documents", "metadatas", "distances"])
        out = []
        for i, doc, meta, dist in zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0]):
            meta = {k2: v for k2, v in (meta or {}).items() if k2 != "_"}
            out.append(FlatHit(id=i, text=doc, metadata=meta, score=1.0 - float(dist)))
        return out

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._col.delete(ids=[str(i) for i in ids])

    def count(self) -> int:
        return int(self._col.count())

    def drop(self) -> None:
        self._client.delete_collection(self._col.name)
