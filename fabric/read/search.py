"""Retrieval: vector, lexical and hybrid search, each in one SQL statement, and branch context.

Two indexes. A current-state read (no valid_at / known_at asked, or live_only) searches
fabric.current_embeddings, whose HNSW graph holds only memories that can be current (migration
0006); a time-travel read searches every memory's embedding in fabric.memories.

Dilution. An HNSW scan visits `hnsw.ef_search` candidates and the WHERE clause (tenant, time)
applies after it. With pgvector >= 0.8 the scan is iterative (`hnsw.iterative_scan`): it goes on
until enough rows pass the filter. With an older pgvector (a server reached through DATABASE_URL;
there, setting `hnsw.iterative_scan` is an error), or when the iterative scan gives up
(`hnsw.max_scan_tuples`), the index scan returns fewer rows than asked and the same statement runs
an exact scan over the qualifying rows instead. The lexical leg has no such
hole: each term's postings come from the GIN index and pass the time filter (fabric_api.holds)
before anything is counted, ranked or cut, and its term statistics are those of the memories
that hold, so memories that do not qualify can neither take a slot nor skew a weight.

The candidate list grows with the graph: `ef_search` is a floor, scaled by
(vectors / 100k) ** 0.6 past 100k vectors in the index searched (100 -> ~400 at 1M), the recall
measured by `fabric bench scale` (docs/performance.md). An org with an HNSW index of its own (a
partial index, fabric/read/indexes.py: `fabric index orgs`) is searched through it -- the planner
picks it, as its predicate matches the statement's `org = ...` -- and the candidate list is sized
from that index, the org's own count.

Lexical scoring. A memory's lexical score is BM25's idf summed over the query terms it contains
(its lexemes, normalised as `search_text` is, and adjacent pairs of them as phrases), with binary
term frequency: memories are short. N and each df count the memories that hold, up to `df_cap`;
a term in `df_cap` or more of them carries no weight -- a stop word for this org at this time.
That bounds the postings read per query term to df_cap whatever the size of the org, and in an
org with fewer than df_cap memories that hold it is plain BM25 idf. The index scan behind them is
bounded too: the full-text index is on (org, search_text), so a term's scan sees the org's rows
only, and a term in COMMON_DF_FACTOR x df_cap (1,000) or more of the org's memories of any state
(fabric.term_counts, kept by a trigger) is not scanned at all -- it is a stop word unless nine in
ten of those memories do not hold, which only a query far back in a heavily revised history meets.

Names. Words the query capitalises are the names it asks about (see `named_words`). A memory's
`named_matches` is how many of their lexemes it contains, and the lexical and hybrid rankings
order by it first: a fact about the entity the query names is never ranked behind a near-twin
fact about another entity with a similar name (a shared first name, a shared sentence template),
however close the twin's embedding. The hybrid score is `named_matches + attribute_weight x
attribute + Σ 1 / (rrf_k + rank)` over both legs (reciprocal rank fusion; `attribute`: the memory
states the attribute the question asks about, fabric/read/intent.py) - other_subject_weight x
other_subject (a subject named with more words than another result's: a sister company); both weights
stay below 1, so the named terms matched order first and the order follows the score. A query in lower
case names nothing; fusion alone ranks it."""

from __future__ import annotations

import functools
import re
import time
import uuid
import weakref
from datetime import datetime
from typing import Any, Iterable

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import tuple_row

from ..placement.facts import _GENERIC_HEAD, value_key
from ..placement.keys import same_attribute, subject_key
from ..sql import q
from .indexes import MIN_ROWS, org_index_name
from .intent import read_question

MODES = ("hybrid", "vector", "lexical")
RRF_K = 60          # the usual reciprocal rank fusion constant
HYBRID_POOL = 50    # rows taken from each leg before fusion (at least k)
DF_CAP = 100        # a term in this many of the memories that hold, or more, carries no weight
COMMON_DF_FACTOR = 10   # a term in df_cap x this many of the org's memories is not even scanned
# A memory stating the attribute the question asks about ranks after the named terms and before the
# fused score: both legs' reciprocal ranks sum to at most 2 / (RRF_K + 1) < 0.04 (fabric/read/intent.py).
ATTRIBUTE_WEIGHT = 0.5
# A memory of a subject the question names with other words beside it (a sister company "Nordlys Fisk AS"
# when another result is of "Nordlys AS", named exactly) ranks after the rows of its named-terms tier:
# this much below them, a fraction of the attribute's weight (and none when that is 0).
OTHER_SUBJECT_SHARE = 0.5
CONTEXT_SLACK = 8   # superseded nodes a context walk may pass through beyond n hops
CURRENT_OVERFETCH = 2   # current-state scans take this many candidates per row asked, then filter by time
ITERATIVE_SCAN_SINCE = (0, 8)   # the pgvector release that added hnsw.iterative_scan
# A time-travel fused search (hybrid, lexical) of an org of at most this many memories (of every state)
# is computed exactly (search_exact): no HNSW, no per-term index scans. Its size is read at most every
# ORG_SIZE_TTL seconds. Measured at 1M memories (docs/performance.md, sixth pass).
SMALL_ORG = 1_000
ORG_SIZE_TTL = 60.0
# The HNSW index each kind of read searches (its size sets the candidate list).
CURRENT_INDEX = "fabric.ix_current_embeddings_embedding_hnsw"
ALL_INDEX = "fabric.ix_memories_embedding_hnsw"

SEARCH_SQL = q("search")
EXACT_SQL = q("search_exact")
VECTOR_SQL = q("search_vector")
VECTOR_CURRENT_SQL = q("search_vector_current")
VECTOR_AT_SQL = q("search_vector_at")
ANN_SQL = q("search_vector_ann")
CONTEXT_SQL = q("search_context")

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
# Words that open a request rather than name something ("Tell Bob ...", "List Ada's pets").
_OPENERS = frozenset("""tell list show find give ask name describe explain summarise summarize remind get check
    recall compare please who what which where when why how does did do is are was were can could should would
    will has have had""".split())


def named_words(text: str) -> str:
    """The words of `text` that name something: capitalised words. A sentence's first word counts only
    when the next word is capitalised too and it is not a request opener ("Where does Ada live?" and
    "Ask Ada." name Ada; "Ada Lovelace wrote what?" names Ada Lovelace; "Ada lives where?" names
    nobody). A generic head before a name is not one: "Project Lanternfish" is called "Lanternfish" as
    often (facts._GENERIC_HEAD), so a memory that says only "Lanternfish" matches all the name.
    Returned as one string, for to_tsvector."""
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        toks = _WORD.findall(sentence)
        for i, tok in enumerate(toks):
            if not tok[0].isupper():
                continue
            if i == 0 and (len(toks) < 2 or not toks[1][0].isupper() or tok.casefold() in _OPENERS):
                continue
            if tok.casefold() in _GENERIC_HEAD and i + 1 < len(toks) and toks[i + 1][0].isupper():
                continue
            out.append(tok)
    return " ".join(out)


def search_params(*, org: str, text: str, vector: np.ndarray | None, mode: str, k: int, valid_at: datetime,
                  known_at: datetime, include_superseded: bool = False, live_only: bool = False,
                  pool: int | None = None, rrf_k: int = RRF_K, df_cap: int = DF_CAP, names: bool = True,
                  subject_prefix: str | None = None, current: bool = False,
                  attribute_weight: float = ATTRIBUTE_WEIGHT) -> dict[str, Any]:
    """The `search` statement's parameters. `pool` (rows per leg) defaults to k in vector mode (the plain
    k-nearest search) and to max(k, HYBRID_POOL) otherwise. `current`: valid_at and known_at are now
    (the caller asked for neither), so the vector leg may search fabric.current_embeddings; live_only
    implies it."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if mode != "lexical" and vector is None:
        raise ValueError(f"mode {mode!r} needs the query's embedding")
    if pool is None:
        pool = k if mode == "vector" else max(k, HYBRID_POOL)
    # The attribute the question asks about (hybrid only; an empty reading changes nothing).
    question = read_question(text or "") if mode == "hybrid" else read_question("")
    return {"org": org, "q": vector if mode != "lexical" else None, "query": text or "",
            "names": named_words(text or "") if names else "", "valid_at": valid_at, "known_at": known_at,
            "include_superseded": include_superseded, "live_only": live_only, "mode": mode, "k": k,
            "pool": max(pool, k), "scan_limit": CURRENT_OVERFETCH * (k if mode == "vector" else max(pool, k)),
            "rrf_k": rrf_k, "df_cap": df_cap, "common_df": COMMON_DF_FACTOR * df_cap,
            "subject_prefix": subject_prefix, "current": (current and not include_superseded) or live_only,
            "attribute_relations": list(question.relations), "attribute_words": question.words,
            "question_words": list(question.all_words), "attribute_weight": attribute_weight,
            "other_subject_weight": OTHER_SUBJECT_SHARE * attribute_weight}


def statement_for(mode: str, iterative: bool = False, current: bool = False, small: bool = False) -> str:
    """Hybrid and lexical run `search`, or `search_exact` when `small` (a small org's time-travel read:
    may_be_exact, small_org). Vector mode runs `search_vector` (index scan, exact scan when it comes up
    short); with iterative scans (`iterative`) it first runs the index scan alone, of the
    current state (`current`: search_vector_current) or of every memory (search_vector_at): cheaper to
    plan, and it nearly always returns k rows (see `fallback_for`)."""
    if mode != "vector":
        return EXACT_SQL if small else SEARCH_SQL
    if not iterative:
        return VECTOR_SQL
    return VECTOR_CURRENT_SQL if current else VECTOR_AT_SQL


# The `search` parameters a current-state fused search writes into its statement as literals: the
# org (so a plan can match the org's partial HNSW index, `WHERE org = '...'`, and estimate the org's
# own size) and the sizes and switches (a generic plan of `LIMIT $n` assumes 10% of the rows).
GENERIC_LITERALS = ("org", "mode", "current", "k", "pool", "scan_limit", "df_cap", "common_df", "rrf_k")


def uses_generic_plan(params: dict[str, Any], statement: str, large: bool = False, small: bool = False) -> bool:
    """A search reuses one plan per org and sizes (generic_statement): the fused modes' `search`, current
    state and time travel (planning the 12-CTE statement was ~1/4 of its server CPU; time travel plans
    without sorts, see `avoids_sorts`), and vector mode's current-state index-scan statement,
    search_vector_current (0.5 of its 1.8 ms at 20k memories), and its time-travel one, search_vector_at,
    for an org of MIN_ROWS memories or more (`large`, org_size: planned without sorts, so it walks the
    HNSW index) and for a `small` one (small_org: one plan shared by all small orgs, which sorts the
    org's memories exactly, as the plan for its values does; 0.64 -> 0.41 ms at 10k memories).
    search_vector, whose exact-scan branch a generic plan joins badly, and search_vector_at for an org
    between the two sizes are planned for their values every time (see session_settings)."""
    if params["mode"] != "vector":
        return statement is SEARCH_SQL or statement is EXACT_SQL
    if params["current"]:
        return statement is VECTOR_CURRENT_SQL
    return (large or small) and statement is VECTOR_AT_SQL


def avoids_sorts(params: dict[str, Any], generic: bool) -> bool:
    """A generic plan of a time-travel `search` is made with enable_sort off. Not knowing valid_at and
    known_at, the planner takes the time filter for a very selective one and sorts all of the org's
    memories by distance instead of walking the HNSW index until the pool is full (large org at 20k:
    68 ms against 1.3); with sorts disabled where another path exists, it walks the index, as the plan
    made for the actual values does. Sorts with no alternative (a CTE's ORDER BY) are still made. Not
    for an org under MIN_ROWS memories (the settings statement counts up to that many): there the plan
    for the actual values sorts the org exactly, and so does the generic one with sorts enabled."""
    return generic and not params["current"]


@functools.lru_cache(maxsize=256)
def _with_literals(statement: str, values: tuple[tuple[str, Any], ...]) -> str:
    for name, value in values:
        # A literal's own percent signs are doubled: the statement still goes through psycopg's
        # placeholder parsing (an org may be named "50% %(text)s").
        literal = sql.Literal(value).as_string(None).replace("%", "%%")
        statement = statement.replace(f"%({name})s", literal)
    return statement


def generic_statement(statement: str, params: dict[str, Any], *, shared: bool = False) -> str:
    """`statement` with the GENERIC_LITERALS of `params` written in as SQL literals: one text per org and
    sizes, which psycopg prepares on the server after a few runs; with plan_cache_mode
    force_generic_plan the server then plans it once, not on every search. At 100k memories (large
    org): server CPU p50 5.4 -> 4.8 ms, the same rows (docs/performance.md).
    `shared` (a small org: small_org): the org stays a parameter, so every small org shares one text
    and one plan. psycopg prepares a text after 5 runs on a connection and keeps 100: with a text
    per org, a tenant among many was planned on nearly every search (7.8 ms of server CPU against 3.6
    prepared, 200 memories at 100k); a small org has no graph of its own and the plan for "an org"
    is the plan for a small one (the same rows, docs/performance.md, seventh pass)."""
    names = [n for n in GENERIC_LITERALS if not (shared and n == "org")]
    return _with_literals(statement, tuple((n, params[n]) for n in names))


_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


@functools.lru_cache(maxsize=256)
def raw_statement(statement: str) -> tuple[str, tuple[str, ...]]:
    """`statement` with PostgreSQL's own placeholders ($1, $2 ...: one per parameter name, in order of
    first use) and the names they stand for, for psycopg's RawCursor (see RAW_ABOVE)."""
    names: dict[str, int] = {}

    def placeholder(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return "%"   # a doubled percent sign (in a literal) stands for one
        return f"${names.setdefault(m.group(1), len(names) + 1)}"

    return _PLACEHOLDER.sub(placeholder, statement), tuple(names)


def raw_params(statement: str, params: dict[str, Any]) -> tuple[str, list[Any]]:
    """The raw statement (raw_statement) and its parameters in placeholder order."""
    raw, names = raw_statement(statement)
    return raw, [params[n] for n in names]


# psycopg caches its parse of a statement's %(name)s placeholders only up to 4 kB and re-parses a longer
# one on every execute. The 12 kB `search` statement goes raw instead (RawCursor, $n): 0.11-0.15 ms less
# client CPU per search at 100k; a short statement costs ~0.1 ms more that way (docs/performance.md).
RAW_ABOVE = 4096


def _query(statement: str, params: dict[str, Any]) -> tuple[bool, str, Any]:
    """(raw?, the statement to send, its parameters)."""
    if len(statement) > RAW_ABOVE:
        return (True, *raw_params(statement, params))
    return False, statement, params


def fallback_for(statement: str, rows: list[Any], params: dict[str, Any]) -> str | None:
    """The statement to run next when an index-scan-only statement (search_vector_current, as given or
    with its literals written in, or search_vector_at) came up short of k rows: the full search_vector,
    whose exact scan answers (with custom_plans). None when the rows are the answer."""
    short = params["mode"] == "vector" and statement is not VECTOR_SQL
    return VECTOR_SQL if short and len(rows) < params["k"] else None


def custom_plans(settings: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """`settings` with plans made for the actual parameters (a fallback's statement has no literals)."""
    return [(stmt, dict(args, plan_cache_mode="force_custom_plan", sorts=True) if args and "plan_cache_mode" in args
             else args) for stmt, args in settings]


# An org with a graph of its own (`fabric index orgs`; under MIN_ROWS only with its min_rows lowered)
# counts as large: its reads go through that graph, with plans of their own (generic_statement), and a
# time-travel plan walks it (avoids_sorts).
_ORG_SIZE_SQL = ("SELECT CASE WHEN to_regclass(%(own)s) IS NULL THEN count(*) ELSE %(limit)s END "
                 "FROM (SELECT 1 FROM fabric.memories WHERE org = %(org)s LIMIT %(limit)s) m")


def _org_size_params(org: str) -> dict[str, Any]:
    return {"org": org, "limit": MIN_ROWS, "own": "fabric." + org_index_name("current_embeddings", org)}


# (database, org) -> (its memories counted up to MIN_ROWS, when they were counted: time.monotonic())
_org_sizes: dict[tuple[str, str], tuple[int, float]] = {}
# each connection's dsn, read once: conn.info.dsn parses the connection's parameters on every call
# (~0.3 ms of the client's CPU, a fifth of a small org's search)
_dsns: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _org_key(conn: Any, org: str) -> tuple[str, str]:
    dsn = _dsns.get(conn)
    if dsn is None:
        dsn = _dsns[conn] = conn.info.dsn
    return dsn, org


def _known_size(key: tuple[str, str]) -> int | None:
    size, when = _org_sizes.get(key, (0, -ORG_SIZE_TTL))
    return size if time.monotonic() - when < ORG_SIZE_TTL else None


def _remember_size(key: tuple[str, str], size: int) -> int:
    if len(_org_sizes) > 100_000:   # a bound, not a policy: one count per org again
        _org_sizes.clear()
    _org_sizes[key] = (size, time.monotonic())
    return size


def may_be_exact(mode: str, current: bool, include_superseded: bool, live_only: bool) -> bool:
    """Could this search run search_exact (were its org small)? A fused mode's time-travel read: there the
    index path walks the HNSW graph of every memory and scans each term's postings; a current-state read
    of a small org costs the same either way (docs/performance.md, sixth pass), so it keeps one path."""
    return mode != "vector" and not ((current and not include_superseded) or live_only)


def org_size(conn: psycopg.Connection, org: str) -> int:
    """`org`'s memories (every state) counted up to MIN_ROWS; MIN_ROWS for an org with a graph of its own.
    Counted at most every ORG_SIZE_TTL seconds per database: a count an org has since outgrown (or grown
    into) only picks the other path (search_exact, a shared plan, sorts), and both answer."""
    key = _org_key(conn, org)
    size = _known_size(key)
    if size is None:
        row = conn.cursor(row_factory=tuple_row).execute(_ORG_SIZE_SQL, _org_size_params(org)).fetchone()
        size = _remember_size(key, row[0] if row else 0)
    return size


async def aorg_size(conn: psycopg.AsyncConnection, org: str) -> int:
    """`org_size` on an async connection."""
    key = _org_key(conn, org)
    size = _known_size(key)
    if size is None:
        cur = await conn.cursor(row_factory=tuple_row).execute(_ORG_SIZE_SQL, _org_size_params(org))
        row = await cur.fetchone()
        size = _remember_size(key, row[0] if row else 0)
    return size


def small_org(conn: psycopg.Connection, org: str) -> bool:
    """Has `org` SMALL_ORG memories or fewer, and no graph of its own (search_exact, generic_statement)?"""
    return org_size(conn, org) <= SMALL_ORG


_SETTINGS_SQL = """
SELECT set_config('hnsw.ef_search',
                  greatest(%(ef)s, least(1000, round(%(ef)s * power(greatest(i.reltuples, 0) / 100000.0, 0.6))))
                  ::int::text, true),
       set_config('jit', 'off', true),
       set_config('plan_cache_mode', %(plan_cache_mode)s, true),
       set_config('enable_sort', CASE WHEN %(sorts)s::boolean THEN current_setting('enable_sort')
                                      WHEN NOT %(sorts)s::boolean THEN 'off'
                                      -- sorts not decided by the caller (NULL): an org under MIN_ROWS
                                      -- memories is best sorted exactly (avoids_sorts)
                                      WHEN (SELECT count(*) FROM (SELECT 1 FROM fabric.memories
                                                                  WHERE org = %(org)s LIMIT %(min_rows)s) o)
                                           < %(min_rows)s THEN current_setting('enable_sort')
                                      ELSE 'off' END, true),
       {iterative}set_config('max_parallel_workers_per_gather', '0', true)
FROM (SELECT coalesce((SELECT reltuples FROM pg_class WHERE oid = to_regclass(%(org_index)s)),
                      (SELECT reltuples FROM pg_class WHERE oid = to_regclass(%(index)s)), 0) AS reltuples) i"""
# The settings with and without the iterative scan, in one statement (a second one cost ~0.1 ms of the
# client's CPU per search): on pgvector < 0.8 setting hnsw.iterative_scan is an error.
_SETTINGS_ITERATIVE_SQL = _SETTINGS_SQL.format(
    iterative="set_config('hnsw.iterative_scan', 'relaxed_order', true),\n       ")
_SETTINGS_SQL = _SETTINGS_SQL.format(iterative="")
_PGVECTOR_SQL = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"

# pgvector's version per connection (sync or async), read once
_pgvector_versions: weakref.WeakKeyDictionary[Any, tuple[int, ...]] = weakref.WeakKeyDictionary()


def _version(row: Any) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", row[0])) if row else ()


def pgvector_version(conn: psycopg.Connection) -> tuple[int, ...]:
    """The installed pgvector extension's version, read once per connection."""
    if conn not in _pgvector_versions:
        _pgvector_versions[conn] = _version(conn.cursor(row_factory=tuple_row).execute(_PGVECTOR_SQL).fetchone())
    return _pgvector_versions[conn]


async def apgvector_version(conn: psycopg.AsyncConnection) -> tuple[int, ...]:
    """`pgvector_version` on an async connection."""
    if conn not in _pgvector_versions:
        cur = await conn.cursor(row_factory=tuple_row).execute(_PGVECTOR_SQL)
        _pgvector_versions[conn] = _version(await cur.fetchone())
    return _pgvector_versions[conn]


def session_settings(*, ef_search: int, iterative: bool = False, index: str = ALL_INDEX,
                     org_index: str | None = None, generic: bool = False, sorts: bool | None = True,
                     org: str | None = None) -> list[tuple[str, Any]]:
    """Transaction-local settings a search runs with: the HNSW candidate list (ef_search, scaled up
    with the size of the index searched: `org_index`, the org's own partial index when it exists
    (fabric/read/indexes.py), else the shared `index`); an iterative index scan when pgvector has one (`iterative`: see
    pgvector_version); no JIT (compiling a plan costs more than running a search); and a plan made for
    the actual parameters every time: a generic plan of `search_vector` (which psycopg's automatic
    preparation lets the server pick after a few runs) was measured at ~370 ms against ~17 ms for the
    custom one at 100k memories -- planned for an unknown k, it joins through sequential scans.
    `generic`: the statement carries its org and sizes as literals (`generic_statement`), so the plan
    the server keeps for it is the one to reuse; `sorts` False: plan it with enable_sort off; None: off
    unless `org` has fewer than MIN_ROWS memories, counted by the statement (avoids_sorts)."""
    # No parallel workers: the exact-scan branch would start them on every query even when its
    # one-time filter skips it (~18 ms at 1M; docs/performance.md).
    # relaxed_order (iterative): the statements re-sort the rows by distance themselves.
    return [(_SETTINGS_ITERATIVE_SQL if iterative else _SETTINGS_SQL, {
        "ef": ef_search, "index": index, "org_index": org_index,
        "plan_cache_mode": "force_generic_plan" if generic else "force_custom_plan",
        "sorts": sorts, "org": org, "min_rows": MIN_ROWS})]


def search_settings(params: dict[str, Any], *, ef_search: int, iterative: bool, generic: bool = False,
                    org_rows: int | None = None) -> list[tuple[str, Any]]:
    """The session settings for one search with `params` (from search_params); `iterative`: the server's
    pgvector has iterative index scans (pgvector_version >= ITERATIVE_SCAN_SINCE); `generic`: the
    statement carries its org and sizes as literals (uses_generic_plan, generic_statement); `org_rows`:
    the org's size as org_size counts it, when known (else the settings statement counts it, when a
    plan without sorts is asked: up to MIN_ROWS rows on every search)."""
    if params["mode"] == "vector" or iterative:
        ef = max(ef_search, params["pool"])
    else:
        # Without iterative scans the fused modes fill a pool of `pool` rows after the org and time
        # filter, which keeps ~40% of a shared graph's candidates: visit 8x the pool or the exact
        # fallback runs on every query of a large org (measured at 100k: p50 433 -> 69 ms).
        ef = min(1000, max(ef_search, 8 * params["pool"]))
    table = "current_embeddings" if params["current"] else "memories"
    return session_settings(ef_search=ef, iterative=iterative,
                            index=CURRENT_INDEX if params["current"] else ALL_INDEX,
                            org_index="fabric." + org_index_name(table, params["org"]),
                            generic=generic, sorts=_sorts(params, generic, org_rows), org=params["org"])


def _sorts(params: dict[str, Any], generic: bool, org_rows: int | None) -> bool | None:
    """session_settings' `sorts`: True unless avoids_sorts; then False for an org of MIN_ROWS memories or
    more, True for a smaller one, None (counted by the settings statement) when its size is not known."""
    if not avoids_sorts(params, generic):
        return True
    return None if org_rows is None else org_rows < MIN_ROWS


def search(conn: psycopg.Connection, *, org: str, text: str, vector: np.ndarray | None, mode: str, k: int,
           valid_at: datetime, known_at: datetime, include_superseded: bool = False, live_only: bool = False,
           ef_search: int = 100, pool: int | None = None, rrf_k: int = RRF_K, df_cap: int = DF_CAP,
           names: bool = True, subject_prefix: str | None = None, current: bool = False
           ) -> list[dict[str, Any]]:
    """One round trip: the settings and the mode's statement, sent together in a pipeline.

    Rows carry the memory's columns plus `score`, `vector_rank`, `lexical_rank` and `named_matches`.
    subject_prefix: only memories whose subject is that namespace or below it (fabric_api.under).
    current: the caller asked for neither valid_at nor known_at (both are now)."""
    settings, statement, params = search_plan(
        org=org, text=text, vector=vector, mode=mode, k=k, valid_at=valid_at, known_at=known_at,
        include_superseded=include_superseded, live_only=live_only, ef_search=ef_search, pool=pool,
        rrf_k=rrf_k, df_cap=df_cap, names=names, subject_prefix=subject_prefix, current=current,
        iterative=pgvector_version(conn) >= ITERATIVE_SCAN_SINCE,
        org_rows=org_size(conn, org))
    rows = _run(conn, settings, statement, params)
    fallback = fallback_for(statement, rows, params)
    if fallback is not None:
        rows = _run(conn, custom_plans(settings), fallback, params)
    return search_rows(rows)


def _run(conn: psycopg.Connection, settings: list[tuple[str, Any]], statement: str, params: dict[str, Any]
         ) -> list[Any]:
    """The settings and one statement, sent together in a pipeline (one round trip)."""
    raw, query, args_ = _query(statement, params)
    cur = psycopg.RawCursor(conn, row_factory=conn.row_factory) if raw else conn.cursor()
    if psycopg.Pipeline.is_supported():
        with conn.pipeline():
            for stmt, args in settings:
                conn.execute(stmt, args)
            cur.execute(query, args_)
        return cur.fetchall()
    for stmt, args in settings:  # pragma: no cover - libpq older than 14
        conn.execute(stmt, args)
    return cur.execute(query, args_).fetchall()


async def asearch(conn: psycopg.AsyncConnection, **kw: Any) -> list[dict[str, Any]]:
    """`search` on an async connection: the same plan, the same statement, the same rows."""
    iterative = await apgvector_version(conn) >= ITERATIVE_SCAN_SINCE
    org_rows = await aorg_size(conn, kw["org"])
    settings, statement, params = search_plan(**kw, iterative=iterative, org_rows=org_rows)
    rows = await _arun(conn, settings, statement, params)
    fallback = fallback_for(statement, rows, params)
    if fallback is not None:
        rows = await _arun(conn, custom_plans(settings), fallback, params)
    return search_rows(rows)


async def _arun(conn: psycopg.AsyncConnection, settings: list[tuple[str, Any]], statement: str,
                params: dict[str, Any]) -> list[Any]:
    raw, query, args_ = _query(statement, params)
    cur = psycopg.AsyncRawCursor(conn, row_factory=conn.row_factory) if raw else conn.cursor()
    async with conn.pipeline():
        for stmt, args in settings:
            await conn.execute(stmt, args)
        await cur.execute(query, args_)
    return await cur.fetchall()


def search_plan(*, org: str, text: str, vector: np.ndarray | None, mode: str, k: int, valid_at: datetime,
                known_at: datetime, include_superseded: bool = False, live_only: bool = False,
                ef_search: int = 100, pool: int | None = None, rrf_k: int = RRF_K, df_cap: int = DF_CAP,
                names: bool = True, subject_prefix: str | None = None, current: bool = False,
                iterative: bool = False, small: bool = False, org_rows: int | None = None
                ) -> tuple[list[tuple[str, Any]], str, dict[str, Any]]:
    """(session settings, statement, parameters) of one search; `small`: the org has SMALL_ORG memories
    or fewer (small_org): a fused time-travel read is computed exactly (may_be_exact), and a fused read
    shares one plan with every small org (generic_statement). `org_rows`: the org's size (org_size), when
    counted; it sets `small`, and spares the settings statement its own count (search_settings)."""
    if org_rows is not None:
        small = org_rows <= SMALL_ORG
    params = search_params(org=org, text=text, vector=vector, mode=mode, k=k, valid_at=valid_at,
                           known_at=known_at, include_superseded=include_superseded, live_only=live_only,
                           pool=pool, rrf_k=rrf_k, df_cap=df_cap, names=names, subject_prefix=subject_prefix,
                           current=current)
    exact = small and may_be_exact(mode, current, include_superseded, live_only)
    statement = statement_for(mode, iterative, params["current"], exact)
    generic = uses_generic_plan(params, statement, large=org_rows is not None and org_rows >= MIN_ROWS, small=small)
    if generic:
        statement = generic_statement(statement, params, shared=small)
    return (search_settings(params, ef_search=ef_search, iterative=iterative, generic=generic, org_rows=org_rows),
            statement, params)


def search_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What every search does to its rows, sync or async: post-processing belongs here, once."""
    for row in rows:
        row["score"] = float(row["score"])
    return flag_conflicts(rows)


def _keyed(row: dict[str, Any]) -> bool:
    """A live memory with a complete key (subject, relation, value)."""
    return row.get("state", "live") == "live" and bool(row.get("subject")) and bool(row.get("relation")) \
        and row.get("value") is not None


def _one_fact(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Do two keyed rows of one subject state one fact? The same stored relation; both the attribute the
    question asks about (`attribute_match`); or two relation names of one attribute of one value at a time
    (fabric/placement/keys.py: "works_for" / "employer"; never languages, sites ...)."""
    return a["relation"] == b["relation"] or (a.get("attribute_match") == 1 and b.get("attribute_match") == 1) \
        or same_attribute(a["relation"], b["relation"])


def _facts(rows: list[dict[str, Any]]) -> list[list[int]]:
    """The positions of the keyed live rows, grouped into facts: one subject (`subject_key`: case and the
    first person forgiven, never another name) and one attribute, joined transitively."""
    by_subject: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        if _keyed(row):
            by_subject.setdefault(subject_key(row["subject"]), []).append(i)
    groups = []
    for positions in by_subject.values():
        if len(positions) < 2 or len({value_key(str(rows[i]["value"])) for i in positions}) < 2:
            continue  # one value (a fact and its details): nothing can disagree, nothing to compare
        owner = {i: i for i in positions}
        for n, i in enumerate(positions):
            for j in positions[n + 1:]:
                if owner[j] == j and _one_fact(rows[i], rows[j]):
                    owner[j] = owner[i]
        for head in dict.fromkeys(owner.values()):
            members = [i for i in positions if owner[i] == head]
            if len(members) > 1:
                groups.append(members)
    return groups


def flag_conflicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The read-time safety net for a missed placement: when the results hold two live memories that state
    different values of one fact (one subject, one attribute: see `_facts`), the one with the later
    valid_from is the answer. It takes the best rank the fact had among the results, and each other value
    is flagged with `conflict_with` = the answer's id (and ranked after it). Other rows keep their places.
    Cheap: it compares the keyed rows of one subject (<= k) by their names (no model, no query)."""
    for row in rows:
        row.setdefault("conflict_with", None)
    order = list(range(len(rows)))
    for positions in _facts(rows):
        if len({value_key(str(rows[i]["value"])) for i in positions}) < 2:
            continue  # one value (a fact and its details): nothing disagrees
        answer = max(positions, key=lambda i: (rows[i]["valid_from"], rows[i]["recorded_at"]))
        for i in positions:
            if value_key(str(rows[i]["value"])) != value_key(str(rows[answer]["value"])):
                rows[i]["conflict_with"] = rows[answer]["id"]
        # The fact's best slot goes to the answer; the other members follow in their own order.
        for slot, i in zip(positions, [answer] + [i for i in positions if i != answer]):
            order[slot] = i
    return [rows[i] for i in order]


def vector_search(conn: psycopg.Connection, *, org: str, query: np.ndarray, k: int, valid_at: datetime,
                  known_at: datetime, include_superseded: bool = False, live_only: bool = False,
                  ef_search: int = 100, current: bool = False) -> list[dict[str, Any]]:
    """The k memories nearest to `query` that hold at (valid_at, known_at); score = cosine similarity.
    Never fewer than k when k qualify (the exact scan backs the index scan)."""
    return search(conn, org=org, text="", vector=query, mode="vector", k=k, valid_at=valid_at,
                  known_at=known_at, include_superseded=include_superseded, live_only=live_only,
                  ef_search=ef_search, current=current)


def branch_context(conn: psycopg.Connection[Any], *, org: str, ids: Iterable[uuid.UUID], n: int, valid_at: datetime,
                   known_at: datetime, include_superseded: bool = False) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Up to n neighbours of each memory on its branch (parent chain and subtree, nearest first), walked
    through superseded nodes and filtered at the output. One query for all the memories."""
    ids = list(dict.fromkeys(ids))
    if not ids or n <= 0:
        return {i: [] for i in ids}
    rows = conn.execute(CONTEXT_SQL, context_params(org=org, ids=ids, n=n, valid_at=valid_at, known_at=known_at,
                                                    include_superseded=include_superseded)).fetchall()
    return context_by_hit(ids, rows)


async def abranch_context(conn: psycopg.AsyncConnection[Any], *, org: str, ids: Iterable[uuid.UUID], n: int,
                          valid_at: datetime, known_at: datetime, include_superseded: bool = False
                          ) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """`branch_context` on an async connection."""
    ids = list(dict.fromkeys(ids))
    if not ids or n <= 0:
        return {i: [] for i in ids}
    cur = await conn.execute(CONTEXT_SQL, context_params(org=org, ids=ids, n=n, valid_at=valid_at,
                                                         known_at=known_at, include_superseded=include_superseded))
    return context_by_hit(ids, await cur.fetchall())


def context_params(*, org: str, ids: list[uuid.UUID], n: int, valid_at: datetime, known_at: datetime,
                   include_superseded: bool) -> dict[str, Any]:
    return {"org": org, "ids": ids, "n": n, "max_hops": n + CONTEXT_SLACK, "valid_at": valid_at,
            "known_at": known_at, "include_superseded": include_superseded}


def context_by_hit(ids: list[uuid.UUID], rows: Iterable[dict[str, Any]]) -> dict[uuid.UUID, list[dict[str, Any]]]:
    out: dict[uuid.UUID, list[dict[str, Any]]] = {i: [] for i in ids}
    for row in rows:
        out[row["hit"]].append(row)
    return out
