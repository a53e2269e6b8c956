"""`fabric bench ...`: the benchmark group; each benchmark registers its command in its own module."""

from __future__ import annotations

import typer

from .app import app

bench_app = typer.Typer(help="Benchmarks (each prints figures with a baseline measured in the same run).",
                        no_args_is_help=True)
app.add_typer(bench_app, name="bench")
