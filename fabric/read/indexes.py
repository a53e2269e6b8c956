"""Per-org HNSW indexes: a partial index (`WHERE org = '...'`) on each of the two embedding tables for
every org big enough to need one.

Why. A search filters its org after the shared HNSW scan. For an org that holds most of a graph the
filter keeps most candidates; for a medium org (a few percent of a 1M graph) the relaxed-order iterative
scan walks a graph that is 96% other tenants' vectors, and recall fell to 0.90-0.94 at 1M
(docs/performance.md). A partial index holds the org's vectors only: its graph is the org's, the org
filter is implied by the index predicate (the planner drops it), and `ef_search` is sized from the
org's own count (fabric/read/search.py reads the index's size by its name).

Which orgs. At least `min_rows` memories (below that the shared graph, or an exact scan, is cheap and
complete) and at most `max_share` of all memories (an org that is most of the shared graph gains
nothing and would double the biggest build). `fabric index orgs` creates the missing ones and drops
the ones whose org no longer qualifies; run it after a bulk load and from time to time (as ANALYZE).

Names are derived from the org (md5, so any org name fits PostgreSQL's 63-byte identifiers): the
search finds its org's index with to_regclass, no catalogue table to keep in step. The command
recognises its own indexes by the whole name (prefix and 16 hex digits), the HNSW method and a
predicate, never by a prefix alone: migrations' B-tree indexes are named ix_memories_org_... too."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row, tuple_row

from ..errors import ValidationError
from ..sql import q

MIN_ROWS = 2_000      # an org smaller than this is searched through the shared graph
MAX_SHARE = 0.5       # an org holding more than this share of the memories is the shared graph
# The two embedding tables: current-state reads search current_embeddings, time travel memories.
TABLES = ("current_embeddings", "memories")
# Distinct from every index a migration creates (ix_memories_org_root_id and the like): the command
# drops what matches its pattern and is not wanted (fabric/sql/admin.sql, org_indexes).
PREFIX = {"current_embeddings": "ix_current_embeddings_embedding_org_", "memories": "ix_memories_embedding_org_"}
# As the shared indexes (migrations 0001, 0006): one graph shape everywhere.
HNSW_WITH = "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"


def org_index_name(table: str, org: str) -> str:
    """The name of `org`'s partial HNSW index on fabric.`table` (without the schema)."""
    return PREFIX[table] + hashlib.md5(org.encode()).hexdigest()[:16]


@dataclass
class OrgIndexPlan:
    create: list[tuple[str, str, str]]   # (table, org, index name)
    drop: list[str]                      # index names whose org no longer qualifies
    keep: list[str]


def plan(conn: psycopg.Connection, *, min_rows: int = MIN_ROWS, max_share: float = MAX_SHARE) -> OrgIndexPlan:
    """What `apply` would do: the qualifying orgs' missing indexes, and the existing per-org indexes
    of orgs that no longer qualify."""
    if min_rows < 1:
        raise ValidationError("min_rows", f"must be at least 1, not {min_rows}")
    if not 0 < max_share <= 1:
        raise ValidationError("max_share", f"must be in (0, 1], not {max_share}")
    cur = conn.cursor(row_factory=tuple_row)
    orgs = [r[0] for r in cur.execute(q("org_index_candidates"),
                                      {"min_rows": min_rows, "max_share": max_share}).fetchall()]
    found = cur.execute(q("org_indexes")).fetchall()
    existing = {r[0] for r in found if r[5]}
    invalid = {r[0] for r in found if not r[5]}   # a failed CONCURRENTLY build: drop it, build again
    wanted = {org_index_name(t, o): (t, o) for o in orgs for t in TABLES}
    return OrgIndexPlan(create=[(t, o, name) for name, (t, o) in sorted(wanted.items()) if name not in existing],
                        drop=sorted((existing - set(wanted)) | invalid), keep=sorted(existing & set(wanted)))


def create_sql(table: str, org: str, *, concurrently: bool) -> sql.Composed:
    return sql.SQL("CREATE INDEX {cc} IF NOT EXISTS {name} ON {table} {how} WHERE org = {org}").format(
        cc=sql.SQL("CONCURRENTLY" if concurrently else ""), name=sql.Identifier(org_index_name(table, org)),
        table=sql.Identifier("fabric", table), how=sql.SQL(HNSW_WITH), org=sql.Literal(org))


def apply(conn: psycopg.Connection, p: OrgIndexPlan, *, concurrently: bool = True, analyze: bool = True,
          progress: Any = None) -> dict[str, float]:
    """Create and drop what `p` says, then ANALYZE the two tables (the planner's row counts for the new
    predicates). `conn` must be in autocommit mode (CONCURRENTLY: writes go on during the build).
    Returns seconds per index built."""
    import time

    took: dict[str, float] = {}
    cc = sql.SQL("CONCURRENTLY" if concurrently else "")
    for name in p.drop:
        conn.execute(sql.SQL("DROP INDEX {} IF EXISTS {}").format(cc, sql.Identifier("fabric", name)))
    for table, org, name in p.create:
        if progress:
            progress(f"  building {name} on fabric.{table} for org {org!r}")
        t = time.perf_counter()
        conn.execute(create_sql(table, org, concurrently=concurrently))
        took[name] = round(time.perf_counter() - t, 2)
    if analyze and (p.create or p.drop):
        conn.execute("ANALYZE fabric.current_embeddings, fabric.memories")
    return took


def list_indexes(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """The per-org indexes that exist: name, table, predicate, rows (the index's tuple count), bytes."""
    cur = conn.cursor(row_factory=dict_row)
    return cur.execute(q("org_indexes")).fetchall()
