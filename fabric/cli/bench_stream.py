"""`fabric bench stream`: the hand-written conversational stream; how many distinct facts collapsed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from .app import JsonOpt, connected, console, err_console, handle_errors
from .bench import bench_app, emit


@bench_app.command("stream")
def stream(
    path: Optional[Path] = typer.Option(None, "--stream", help="A JSONL stream, one {id, text} turn a line "
                                        "(default: tests/data/stream_v5.jsonl)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Only the first N turns."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write stream.json and stream.md here."),
    worker: bool = typer.Option(True, "--worker/--no-worker",
                                help="Start a placement worker for the run (off: rely on running workers)."),
    as_json: bool = JsonOpt,
) -> None:
    """Write each turn of a conversational stream (every turn a distinct fact about the same few
    people and companies) into one org as plain text, then count the turns recorded as duplicates
    or superseded, and the parked ones, listing each collapsed turn with what it collapsed into.

    Example: fabric bench stream --json
    """
    from ..bench.stream import load_stream, markdown, run

    started = time.perf_counter()
    with handle_errors():
        turns = load_stream(path)[:limit]
    progress = err_console if as_json else console
    with connected(run_worker=worker) as fab, handle_errors():
        results = run(fab, turns, progress=lambda msg: progress.print(f"[dim]{msg}[/]"))
    command = "fabric bench stream" + (f" --stream {path}" if path else "") + (f" --limit {limit}" if limit else "")
    emit(results, markdown(results, command), name="stream", out=out, as_json=as_json, started=started)
