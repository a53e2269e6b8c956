"""`fabric bench pipeline`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from .app import JsonOpt, connected, console, err_console, print_json
from .bench import bench_app


@bench_app.command("pipeline")
def pipeline(
    writes: int = typer.Option(500, help="write() calls to time."),
    subjects: int = typer.Option(20, help="Subjects in the mixed stream (5 writes each)."),
    out: Path = typer.Option(Path("bench-results"), help="Folder for pipeline.json."),
    placement_writes: int = typer.Option(0, "--placement-writes", min=0,
                                         help="Also time placement by 1 and 2 worker processes (N writes)."),
    only_placement: bool = typer.Option(False, "--only-placement", help="Skip the write-path figures."),
    as_json: bool = JsonOpt,
) -> None:
    """Write latency, embedding throughput, validator calls per write on a mixed stream.

    Example: fabric bench pipeline --writes 1000
    """
    from ..bench.pipeline import placement_throughput, print_placement, print_report, run

    with connected() as fab:
        res = {} if only_placement else run(fab, writes=writes, subjects=subjects)
        if placement_writes:
            res["placement"] = placement_throughput(
                fab.database_url, fab.redis_url, writes=placement_writes,
                progress=lambda msg: err_console.print(f"[dim]{msg}[/]"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "pipeline.json").write_text(json.dumps(res, indent=2))
    if as_json:
        print_json(res)
        return
    if not only_placement:
        print_report(res, console)
    if placement_writes:
        print_placement(res["placement"], console)
