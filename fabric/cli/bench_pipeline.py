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
    kills: int = typer.Option(0, "--kills", min=0,
                              help="Also run the worker-kill campaign: this many kill -9s of busy workers."),
    kill_writes: int = typer.Option(1000, "--kill-writes", min=1, help="Writes sent during the kill campaign."),
    burst_writes: int = typer.Option(0, "--burst", min=0,
                                     help="Also send a burst of N writes into one org; report worker and Redis memory."),
    burst_seconds: float = typer.Option(0, "--burst-seconds", min=0,
                                        help="Stop the burst after this long and check what was placed (0: none)."),
    as_json: bool = JsonOpt,
) -> None:
    """Write latency, embedding throughput, validator calls per write on a mixed stream.

    Example: fabric bench pipeline --writes 1000
             fabric bench pipeline --only-placement --placement-writes 2000 --kills 100 --burst 20000
    """
    from ..bench import pipeline as bp

    def progress(msg: str) -> None:
        err_console.print(f"[dim]{msg}[/]")

    with connected() as fab:
        res = {} if only_placement else bp.run(fab, writes=writes, subjects=subjects)
        if placement_writes:
            res["placement"] = bp.placement_throughput(fab.database_url, fab.redis_url, writes=placement_writes,
                                                       progress=progress)
        if kills:
            res["kills"] = bp.kill_campaign(fab.database_url, fab.redis_url, writes=kill_writes, kills=kills,
                                            progress=progress)
        if burst_writes:
            res["burst"] = bp.burst(fab.database_url, fab.redis_url, writes=burst_writes,
                                  max_seconds=burst_seconds, progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pipeline.json").write_text(json.dumps(res, indent=2))
    if as_json:
        print_json(res)
        return
    if not only_placement:
        bp.print_report(res, console)
    if placement_writes:
        bp.print_placement(res["placement"], console)
    if kills:
        bp.print_kills(res["kills"], console)
    if burst_writes:
        bp.print_burst(res["burst"], console)
