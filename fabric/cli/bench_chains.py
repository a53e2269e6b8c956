"""`fabric bench chains`: the blind temporal chains, text only, against a flat pgvector baseline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from .app import JsonOpt, connected, console, err_console, handle_errors
from .bench import bench_app, emit


@bench_app.command("chains")
def chains(
    path: Optional[Path] = typer.Option(None, "--chains", help="A JSONL set of fact chains "
                                        "(default: tests/data/temporal_chains_v3.jsonl)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N chains."),
    backends: str = typer.Option("fabric-text,pgvector", "--backends", help="Comma-separated: fabric-text, pgvector."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write chains.json and chains.md here."),
    worker: bool = typer.Option(True, "--worker/--no-worker",
                                help="Start a placement worker for the run (off: rely on running workers)."),
    as_json: bool = JsonOpt,
) -> None:
    """Write each hand-written fact chain (versions in other words, with distractors) into fabric as
    plain text, in valid_from order and out of order, then ask for the current value and the value
    at a mid date by search and by current_value on the extracted key; a flat pgvector store
    (top-1 cosine over every version) answers the same questions in the same run.

    Example: fabric bench chains --out bench-results
    """
    from ..bench.chains import load_chains, markdown, run

    started = time.perf_counter()
    names = [b.strip() for b in backends.split(",") if b.strip()]
    with handle_errors():
        loaded = load_chains(path)[:limit]
    progress = err_console if as_json else console
    with connected(run_worker=worker) as fab, handle_errors():
        results = run(fab, loaded, backends=names, progress=lambda msg: progress.print(f"[dim]{msg}[/]"))
    command = "fabric bench chains" + (f" --chains {path}" if path else "") + (f" --limit {limit}" if limit else "") \
        + (f" --backends {backends}" if backends != "fabric-text,pgvector" else "")
    emit(results, markdown(results, command), name="chains", out=out, as_json=as_json, started=started,
         json_view={k: v for k, v in results.items() if k != "queries"})
