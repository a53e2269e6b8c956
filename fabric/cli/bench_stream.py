"""`fabric bench stream`: the hand-written conversational stream; how many distinct facts collapsed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markdown import Markdown

from .app import JsonOpt, connected, console, err_console, handle_errors, print_json
from .bench import bench_app


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
    from ..bench.report import write_json
    from ..bench.stream import load_stream, markdown, run

    started = time.perf_counter()
    with handle_errors():
        turns = load_stream(path)[:limit]
    progress = err_console if as_json else console
    with connected(run_worker=worker) as fab, handle_errors():
        results = run(fab, turns, progress=lambda msg: progress.print(f"[dim]{msg}[/]"))
    command = "fabric bench stream" + (f" --stream {path}" if path else "") + (f" --limit {limit}" if limit else "")
    text = markdown(results, command)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_json(results, out / "stream.json")
        (out / "stream.md").write_text(text)
    if as_json:
        print_json(results)
        return
    page = console if console.is_terminal else Console(width=max(console.width, 130))
    page.print(Markdown(text))
    page.print(f"[dim]{time.perf_counter() - started:.0f} s[/]")
