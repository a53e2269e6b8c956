"""`fabric export` / `fabric import`: move an org between databases as JSON Lines (fabric/export.py)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional

import typer

from .app import EXIT_USAGE, JsonOpt, app, connected, console, err_console, print_json, progress_bars

if TYPE_CHECKING:
    from rich.progress import Progress


@contextmanager
def _bars() -> Iterator[tuple[Progress, dict]]:
    """One bar per table, on stderr (stdout may carry the export itself)."""
    with progress_bars("{task.description:>16}", console=err_console, transient=False) as bars:
        yield bars, {}


def _advance(bars: Progress, tasks: dict):
    return lambda table, n: bars.advance(tasks[table], n)


def _add_tasks(bars: Progress, tasks: dict, counts: dict[str, int]) -> None:
    for table, n in counts.items():
        tasks[table] = bars.add_task(table, total=n)


@app.command("export")
def export_cmd(
    org: str = typer.Option(..., "--org", "-o", help="The org to export."),
    out: Optional[Path] = typer.Option(None, "--out", help="File to write (default: standard output)."),
) -> None:
    """Write everything an org's answers depend on to JSON Lines (one consistent snapshot).

    Example: fabric export --org acme --out acme.jsonl
    """
    from ..export import export_org

    with connected(run_worker=False) as fab:
        fab.require_org(org)  # before the bars, which would leave an empty line above the message
        with _bars() as (bars, tasks):
            stream = out.open("w", encoding="utf-8") if out else sys.stdout
            try:
                with fab.pool.connection() as conn:
                    counts = export_org(conn, org, stream, progress=_advance(bars, tasks),
                                        on_counts=lambda c: _add_tasks(bars, tasks, c))
            except BaseException:
                if out:
                    stream.close()
                    out.unlink(missing_ok=True)  # no partial file left behind to be imported later
                raise
            if out:
                stream.close()
    if out:
        console.print(f"exported org [bold]{org}[/] to {out}: " + ", ".join(f"{n} {t}" for t, n in counts.items()))


@app.command("import")
def import_cmd(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="A file written by `fabric export`."),
    org: Optional[str] = typer.Option(None, "--org", "-o", help="Import under this org (default: the exported one)."),
    as_json: bool = JsonOpt,
) -> None:
    """Restore an exported org into an empty org of this database, in one transaction.

    Example: fabric import acme.jsonl           |  fabric import acme.jsonl --org acme-staging
    """
    from ..export import ExportFormatError, ImportRefused, import_org

    with connected(run_worker=False) as fab, _bars() as (bars, tasks):
        try:
            with fab.pool.connection() as conn, file.open(encoding="utf-8") as lines:
                counts = import_org(conn, lines, org=org, progress=_advance(bars, tasks),
                                    on_header=lambda h: _add_tasks(bars, tasks, h.counts))
        except (ExportFormatError, ImportRefused) as exc:
            bars.stop()
            err_console.print(f"[red]{'corrupt file' if isinstance(exc, ExportFormatError) else 'refused'}:[/] "
                              f"{exc}; nothing was imported")
            raise typer.Exit(EXIT_USAGE) from None
    if as_json:
        print_json(counts)
    else:
        console.print(f"imported {file}: " + ", ".join(f"{n} {t}" for t, n in counts.items()))
