"""Vector search without post-filter dilution.

pgvector's HNSW scan (0.6.x) visits `hnsw.ef_search` candidates and only then applies the
WHERE clause, so a filtered index scan can return fewer than k rows, or miss the best row
that qualifies. fabric runs the index scan first; when it returns k rows that qualify they
are the k best that qualify (up to the index's approximation), and when it returns fewer,
it runs an exact scan over the qualifying rows instead. Never fewer than k when k qualify."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from ..sql import q

_BASE = q("search_base")
ANN_SQL = _BASE + "\nORDER BY distance\nLIMIT %(k)s"
EXACT_SQL = ("WITH qualifying AS MATERIALIZED (\n" + _BASE + "\n)\n"
             "SELECT * FROM qualifying ORDER BY distance LIMIT %(k)s")


def vector_search(conn: psycopg.Connection, *, org: str, query: np.ndarray, k: int, valid_at: datetime,
                  known_at: datetime, include_superseded: bool = False, live_only: bool = False,
                  ef_search: int = 100) -> list[dict[str, Any]]:
    params = {"org": org, "q": query, "k": k, "valid_at": valid_at, "known_at": known_at,
              "include_superseded": include_superseded, "live_only": live_only}
    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(ef_search, k)),))
    rows = conn.execute(ANN_SQL, params).fetchall()
    if len(rows) < k:
        rows = conn.execute(EXACT_SQL, params).fetchall()
    for row in rows:
        row["score"] = 1.0 - float(row.pop("distance"))
    return rows
