"""Export an org to JSON Lines and import it into another database, ids and times preserved.

The tables and their columns come from the catalog (every `fabric` table with an `org` column,
generated columns left out), so columns and tables added by later migrations travel without edits
here. The file is a header line, then one line per row, tables in foreign-key order:

    {"format": "fabric-export", "version": 1, "org": "acme", "schema_revision": "0003",
     "tables": {"orgs": ["org", "created_at"], ...}, "counts": {"orgs": 1, ...}}
    {"table": "orgs", "row": {"org": "acme", "created_at": "2026-11-30T18:57:16.1+00:00"}}

Rows are the database's own JSON (`to_jsonb`), read back with `jsonb_populate_record`, so every
value (timestamps to the microsecond, vectors, JSONB) round-trips exactly. The export reads one
snapshot (REPEATABLE READ); the import runs in one transaction: every line is checked and staged
first (a bad line is an error naming it), then rows move table by table, and any error leaves the
target untouched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, TextIO

import psycopg
from psycopg import sql

from .admin.orgs import UnknownOrg
from .db import one
from .errors import FabricError
from .sql import q
from .types import check_org

if TYPE_CHECKING:
    from .db import Conn

FORMAT = "fabric-export"
VERSION = 1
SCHEMA = "fabric"
# Which database roles may act for an org is the target operator's decision, not data of the org.
# current_embeddings and term_counts are derived: the triggers of migration 0006 rebuild them on import.
NOT_EXPORTED = frozenset({"tenant_grants", "current_embeddings", "term_counts"})

# progress(table, rows_done_now): called as rows are written or read, for progress bars.
Progress = Callable[[str, int], None]


class ExportFormatError(FabricError, ValueError):
    """An export file that cannot be imported; the message names the line."""

    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(f"line {line}: {message}")


class ImportRefused(FabricError):
    """The target cannot take this import (the org already has data, the schema lacks a column...)."""


@dataclass
class Table:
    name: str
    columns: list[str]
    primary_key: list[str] = field(default_factory=list)
    # (columns, referenced columns) of foreign keys from this table to itself, e.g. a memory's parent.
    self_refs: list[tuple[list[str], list[str]]] = field(default_factory=list)
    depends_on: set[str] = field(default_factory=set)


def org_tables(conn: Conn) -> list[Table]:
    """The tables an org's data lives in, parents before children (foreign-key order)."""
    tables = {r["table_name"]: Table(r["table_name"], list(r["columns"]))
              for r in conn.execute(q("export_tables")).fetchall() if r["table_name"] not in NOT_EXPORTED}
    for r in conn.execute(q("export_keys")).fetchall():
        t = tables.get(r["table_name"])
        if t is None:
            continue
        if r["kind"] == "p":
            t.primary_key = list(r["columns"])
        elif r["references_table"] == t.name:
            t.self_refs.append((list(r["columns"]), list(r["references_columns"])))
        elif r["references_table"] in tables:
            t.depends_on.add(r["references_table"])
    ordered: list[Table] = []
    placed: set[str] = set()
    while len(ordered) < len(tables):
        ready = [t for n, t in sorted(tables.items()) if n not in placed and t.depends_on <= placed]
        if not ready:
            cycle = sorted(set(tables) - placed)
            raise FabricError(f"foreign keys between {', '.join(cycle)} form a cycle; export cannot order them")
        ordered.extend(ready)
        placed.update(t.name for t in ready)
    return ordered


def _schema_revision(conn: Conn) -> str | None:
    row = conn.execute(q("export_schema_revision")).fetchone()
    return row["version_num"] if row else None


# ---------------------------------------------------------------- export

def export_org(conn: Conn, org: str, out: TextIO, *, progress: Progress | None = None,
               on_counts: Callable[[dict[str, int]], None] | None = None) -> dict[str, int]:
    """Write every row of `org` to `out` as JSON Lines, from one consistent snapshot. Returns row counts.

    `conn` must be able to read every row of the org (the table owner, or a role granted the org)."""
    check_org(org)
    conn.rollback()
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    conn.read_only = True
    try:
        with conn.transaction():
            conn.execute("SELECT set_config('fabric.org', %s, true)", (org,))
            tables = org_tables(conn)
            counts = {t.name: one(conn.execute(sql.SQL("SELECT count(*) AS n FROM {} WHERE org = %s").format(
                sql.Identifier(SCHEMA, t.name)), (org,)))["n"] for t in tables}
            if counts.get("orgs", 0) == 0:
                raise UnknownOrg(org)  # a NotFound, as for every other command that names an org
            if on_counts:
                on_counts(counts)
            header = {"format": FORMAT, "version": VERSION, "org": org, "schema_revision": _schema_revision(conn),
                      "tables": {t.name: t.columns for t in tables}, "counts": counts}
            out.write(json.dumps(header) + "\n")
            for t in tables:
                _export_table(conn, t, org, out, progress)
    finally:
        conn.isolation_level = None
        conn.read_only = None
    return counts


def _export_table(conn: Conn, t: Table, org: str, out: TextIO, progress: Progress | None) -> None:
    query = sql.SQL("SELECT to_jsonb(r)::text AS row_json FROM (SELECT {cols} FROM {table} WHERE org = %s "
                    "ORDER BY {key}) r").format(
        cols=sql.SQL(", ").join(map(sql.Identifier, t.columns)), table=sql.Identifier(SCHEMA, t.name),
        key=sql.SQL(", ").join(map(sql.Identifier, t.primary_key or t.columns[:1])))
    prefix = '{"table": ' + json.dumps(t.name) + ', "row": '
    with conn.cursor(name=f"export_{t.name}") as cur:  # server-side: the table never sits in memory
        cur.itersize = 2000
        cur.execute(query, (org,))
        n = 0
        for row in cur:
            out.write(prefix + row["row_json"] + "}\n")
            n += 1
            if progress and n % 500 == 0:
                progress(t.name, 500)
        if progress and n % 500:
            progress(t.name, n % 500)


# ---------------------------------------------------------------- import

@dataclass
class Header:
    org: str
    schema_revision: str | None
    tables: dict[str, list[str]]
    counts: dict[str, int]


def read_header(first_line: str) -> Header:
    try:
        h = json.loads(first_line)
    except json.JSONDecodeError as exc:
        raise ExportFormatError(1, f"not JSON ({exc.msg}); is this a fabric export?") from None
    if not isinstance(h, dict) or h.get("format") != FORMAT:
        raise ExportFormatError(1, f"not a fabric export header (expected \"format\": \"{FORMAT}\")")
    if h.get("version") != VERSION:
        raise ExportFormatError(1, f"export format version {h.get('version')!r}; this fabric reads {VERSION}")
    tables, counts = h.get("tables"), h.get("counts")
    if not isinstance(tables, dict) or not isinstance(counts, dict) or not isinstance(h.get("org"), str):
        raise ExportFormatError(1, "header lacks org, tables or counts")
    return Header(h["org"], h.get("schema_revision"), tables, counts)


def import_org(conn: Conn, lines: Iterable[str], *, org: str | None = None,
               progress: Progress | None = None, on_header: Callable[[Header], None] | None = None
               ) -> dict[str, int]:
    """Restore an export into an org with no data in this database (default: the exported org's name;
    `org` renames it). One transaction: on any error nothing is imported. Returns row counts.

    `conn` must bypass row-level security (the table owner: what migrations and workers use)."""
    it = iter(lines)
    first = next(it, None)
    if first is None:
        raise ExportFormatError(1, "the file is empty")
    header = read_header(first)
    target = check_org(org or header.org)
    if on_header:
        on_header(header)
    conn.rollback()
    with conn.transaction():
        tables = _check_target(conn, header, target)
        conn.execute(q("import_stage_create"))
        seen = _stage(conn, it, header, target, progress)
        for name, expected in header.counts.items():
            if seen.get(name, 0) != expected:
                raise ExportFormatError(sum(seen.values()) + 2, f"the file ends early: the header promises "
                                        f"{expected} row(s) of {name}, the file holds {seen.get(name, 0)}")
        conn.execute(q("import_stage_index"))
        conn.execute("ANALYZE fabric_import_stage")
        for t in tables:
            if header.counts.get(t.name):
                _move_table(conn, t, [c for c in header.tables[t.name] if c in t.columns])
    return seen


def _check_target(conn: Conn, header: Header, org: str) -> list[Table]:
    tables = org_tables(conn)
    by_name = {t.name: t for t in tables}
    for name, cols in header.tables.items():
        if name not in by_name:
            raise ImportRefused(f"the export has table {name!r}, which this database lacks "
                                f"(export from schema {header.schema_revision}; run `fabric migrate`?)")
        missing = [c for c in cols if c not in by_name[name].columns]
        if missing:
            raise ImportRefused(f"table {name!r} of this database lacks column(s) {', '.join(missing)} the "
                                f"export carries (export from schema {header.schema_revision}); nothing imported")
    busy = [t.name for t in tables if one(conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE org = %s) AS x")
                                                       .format(sql.Identifier(SCHEMA, t.name)), (org,)))["x"]]
    if busy:
        raise ImportRefused(f"org {org!r} already has rows in {', '.join(busy)}: import goes into an empty org "
                            f"(choose another name with --org)")
    return tables


def _stage(conn: Conn, lines: Iterable[str], header: Header, org: str,
           progress: Progress | None) -> dict[str, int]:
    """Check every line and COPY it into the staging table. Returns rows per table."""
    seen: dict[str, int] = {}
    columns = {name: set(cols) for name, cols in header.tables.items()}
    with conn.cursor() as cur, cur.copy(q("import_stage_copy")) as copy:
        for number, text in enumerate(lines, start=2):
            if not text.strip():
                continue
            try:
                item = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ExportFormatError(number, f"not JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(item, dict) or set(item) != {"table", "row"} or not isinstance(item["row"], dict):
                raise ExportFormatError(number, 'expected {"table": ..., "row": {...}}')
            name, row = item["table"], item["row"]
            if name not in columns:
                raise ExportFormatError(number, f"table {name!r} is not in the header")
            if set(row) != columns[name]:
                odd = sorted(set(row) ^ columns[name])
                raise ExportFormatError(number, f"{name} row does not match the header's columns ({', '.join(odd)})")
            if row.get("org") != header.org:
                raise ExportFormatError(number, f"row of org {row.get('org')!r} in an export of {header.org!r}")
            row["org"] = org
            copy.write_row((number, name, json.dumps(row)))
            seen[name] = seen.get(name, 0) + 1
            if progress:
                progress(name, 1)
    return seen


def _move_table(conn: Conn, t: Table, columns: list[str]) -> None:
    """Insert a table's staged rows; a table that references itself goes in passes, referenced rows first."""
    target = sql.Identifier(SCHEMA, t.name)
    record = sql.SQL("jsonb_populate_record(NULL::{}, s.row_data)").format(target)
    ready: list[sql.Composable] = [sql.SQL("true")]
    for cols, ref_cols in t.self_refs:
        field_of = lambda c: sql.SQL("({}).{}").format(record, sql.Identifier(c))  # noqa: E731
        refs = sql.SQL(", ").join(field_of(c) for c in cols)
        # Null, or a reference to the row itself, or to a row already in the table.
        ready.append(sql.SQL("({null} OR ({refs}) = ({own}) OR EXISTS (SELECT 1 FROM {target} x "
                             "WHERE ({xcols}) = ({refs})))").format(
            null=sql.SQL(" OR ").join(sql.SQL("{} IS NULL").format(field_of(c)) for c in cols),
            refs=refs, own=sql.SQL(", ").join(field_of(c) for c in ref_cols), target=target,
            xcols=sql.SQL(", ").join(sql.SQL("x.{}").format(sql.Identifier(c)) for c in ref_cols)))
    step = sql.SQL(
        "WITH ready AS (UPDATE fabric_import_stage s SET done = true "
        "WHERE s.table_name = %(table_name)s AND NOT s.done AND {ready} RETURNING s.row_data) "
        "INSERT INTO {target} ({cols}) SELECT {rcols} FROM ready, "
        "jsonb_populate_record(NULL::{target}, ready.row_data) r").format(
        ready=sql.SQL(" AND ").join(ready), target=target, cols=sql.SQL(", ").join(map(sql.Identifier, columns)),
        rcols=sql.SQL(", ").join(sql.SQL("r.{}").format(sql.Identifier(c)) for c in columns))
    while True:
        try:
            with conn.transaction():
                moved = conn.execute(step, {"table_name": t.name}).rowcount
        except psycopg.DataError as exc:
            raise _find_bad_line(conn, t, exc) from exc
        left = one(conn.execute("SELECT count(*) AS n FROM fabric_import_stage WHERE table_name = %s AND NOT done",
                                (t.name,)))["n"]
        if left == 0:
            return
        if moved == 0:
            first = one(conn.execute(q("import_stage_lines"), {"table_name": t.name}))
            raise ExportFormatError(first["line"], f"{t.name} row references a row the file does not hold")


def _find_bad_line(conn: Conn, t: Table, exc: Exception) -> Exception:
    """A staged value the column type refuses: name its line."""
    check = sql.SQL("SELECT jsonb_populate_record(NULL::{}, %s::jsonb) IS NOT NULL").format(
        sql.Identifier(SCHEMA, t.name))
    for row in conn.execute(q("import_stage_lines"), {"table_name": t.name}).fetchall():
        try:
            with conn.transaction():
                conn.execute(check, (json.dumps(row["row_data"]),))
        except psycopg.DataError as bad:
            return ExportFormatError(row["line"], f"{t.name}: {str(bad).splitlines()[0]}")
    return ImportRefused(f"{t.name}: {exc}")
