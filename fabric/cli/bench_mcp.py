"""`fabric bench mcp`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from .app import JsonOpt, connected, console, print_json
from .bench import bench_app


@bench_app.command("mcp")
def mcp_bench(
    queries: int = typer.Option(100, help="search_memory calls per path."),
    memories: int = typer.Option(300, help="Memories in the benchmark org."),
    out: Path = typer.Option(Path("bench-results"), help="Folder for mcp.json."),
    as_json: bool = JsonOpt,
) -> None:
    """search_memory round trip over MCP stdio and streamable HTTP, against in-process search.

    Example: fabric bench mcp --queries 200
    """
    from ..bench.mcp import print_report, run

    with connected() as fab:
        res = run(fab, queries=queries, memories=memories)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mcp.json").write_text(json.dumps(res, indent=2))
    print_json(res) if as_json else print_report(res, console)
