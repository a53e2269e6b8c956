"""`fabric bench ...`: the benchmark group; each benchmark registers its command in its own module."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from .app import app

bench_app = typer.Typer(help="Benchmarks (each prints figures with a baseline measured in the same run).",
                        no_args_is_help=True)
app.add_typer(bench_app, name="bench")


def emit(results: dict[str, Any], text: str, *, name: str, out: Path | None, as_json: bool, started: float,
         json_view: dict[str, Any] | None = None) -> None:
    """A benchmark's results: `<name>.json` and `<name>.md` under `out`, then JSON (`json_view`, else
    everything) or the markdown page with the elapsed time."""
    # rich.markdown pulls in markdown_it and pygments (~0.1 s): only a benchmark's page needs them.
    from rich.markdown import Markdown

    from ..bench.report import write_json
    from .app import console, print_json

    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_json(results, out / f"{name}.json")
        (out / f"{name}.md").write_text(text)
    if as_json:
        print_json(results if json_view is None else json_view)
        return
    page = console if console.is_terminal else Console(width=max(console.width, 130))
    page.print(Markdown(text))
    page.print(f"[dim]{time.perf_counter() - started:.0f} s[/]")
