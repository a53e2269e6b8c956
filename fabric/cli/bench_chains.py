"""`fabric bench chains`: the blind temporal chains, text only, against a flat pgvector baseline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markdown import Markdown

from .app import JsonOpt, connected, console, err_console, handle_errors, print_json
from .bench import bench_app


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
    from ..bench.report import write_json

    started = time.perf_counter()
    names = [b.strip() for b in backends.split(",") if b.strip()]
    with handle_errors():
        loaded = load_chains(path)[:limit]
    progress = err_console if as_json else console
    with connected(run_worker=worker) as fab, handle_errors():
        results = run(fab, loaded, backends=names, progress=lambda msg: progress.print(f"[dim]{msg}[/]"))
    command = "fabric bench chains" + (f" --chains {path}" if path else "") + (f" --limit {limit}" if limit else "") \
        + (f" --backends {backends}" if backends != "fabric-text,pgvector" else "")
    text = markdown(results, command)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_json(results, out / "chains.json")
        (out / "chains.md").write_text(text)
    if as_json:
        print_json({k: v for k, v in results.items() if k != "queries"})
        return
    page = console if console.is_terminal else Console(width=max(console.width, 130))
    page.print(Markdown(text))
    page.print(f"[dim]{time.perf_counter() - started:.0f} s[/]")
