"""`fabric index`: the per-org HNSW indexes (fabric/read/indexes.py)."""

from __future__ import annotations

import typer

from .app import JsonOpt, app, connected, console, print_json, titled_table

index_app = typer.Typer(help="Per-org HNSW indexes: search recall and speed for orgs a few percent of the store.",
                        no_args_is_help=True)
app.add_typer(index_app, name="index")


@index_app.command("orgs")
def orgs(
    min_rows: int = typer.Option(2_000, "--min-rows", help="An org needs at least this many memories."),
    max_share: float = typer.Option(0.5, "--max-share", help="...and at most this share of all memories."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print what would be created and dropped."),
    as_json: bool = JsonOpt,
) -> None:
    """Create a partial HNSW index (`WHERE org = ...`) on current_embeddings and on memories for every
    org that qualifies, and drop those of orgs that no longer do. Builds CONCURRENTLY (writes go on).
    Run after a bulk load, and from time to time as orgs grow.

    Example: fabric index orgs --min-rows 5000
    """
    import psycopg

    from ..read import indexes

    with connected(run_worker=False) as fab:
        with psycopg.connect(fab.database_url, autocommit=True) as conn:
            p = indexes.plan(conn, min_rows=min_rows, max_share=max_share)
            took = {} if dry_run else indexes.apply(conn, p, concurrently=True)
    created = [{"table": t, "org": o, "index": n, "seconds": took.get(n)} for t, o, n in p.create]
    if as_json:
        print_json({"created": created, "dropped": p.drop, "kept": p.keep, "dry_run": dry_run})
        return
    verb = "would create" if dry_run else "created"
    for row in created:
        console.print(f"{verb} {row['index']} on fabric.{row['table']} for org {row['org']!r}"
                      + (f" in {row['seconds']} s" if row["seconds"] is not None else ""))
    for name in p.drop:
        console.print(f"{'would drop' if dry_run else 'dropped'} {name}")
    console.print(f"{len(p.keep)} per-org index(es) kept as they were")


@index_app.command("list")
def list_(as_json: bool = JsonOpt) -> None:
    """The per-org HNSW indexes: name, table, org predicate, rows, size.

    Example: fabric index list --json
    """
    import psycopg

    from ..read import indexes

    with connected(run_worker=False) as fab:
        with psycopg.connect(fab.database_url) as conn:
            rows = indexes.list_indexes(conn)
    if as_json:
        print_json(rows)
        return
    table = titled_table("per-org HNSW indexes", ("name", "table", "predicate", "rows", "MB", "valid"))
    for r in rows:
        table.add_row(r["name"], r["table_name"], r["predicate"], str(r["rows"]), f"{r['bytes'] / 2**20:.1f}",
                      "yes" if r["valid"] else "no (a failed build: `fabric index orgs` rebuilds it)")
    console.print(table)
