"""`fabric bench pipeline`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from .app import JsonOpt, connected, console, print_json
from .bench import bench_app


@bench_app.command("pipeline")
def pipeline(
    writes: int = typer.Option(500, help="write() calls to time."),
    subjects: int = typer.Option(20, help="Subjects in the mixed stream (5 writes each)."),
    out: Path = typer.Option(Path("bench-results"), help="Folder for pipeline.json."),
    as_json: bool = JsonOpt,
) -> None:
    """Write latency, embedding throughput, validator calls per write on a mixed stream.

    Example: fabric bench pipeline --writes 1000
    """
    from ..bench.pipeline import print_report, run

    with connected() as fab:
        res = run(fab, writes=writes, subjects=subjects)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pipeline.json").write_text(json.dumps(res, indent=2))
    print_json(res) if as_json else print_report(res, console)
