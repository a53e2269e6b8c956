"""`fabric bench scale`: reads and placement at 10k, 100k and 1M memories, beside flat pgvector and ChromaDB."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from .app import JsonOpt, err_console, console, handle_errors, print_json
from .bench import bench_app


@bench_app.command("scale")
def scale(
    sizes: Optional[str] = typer.Option(None, "--sizes", help="Corpus sizes, e.g. 10k,100k,1m (default 10k,100k)."),
    quick: bool = typer.Option(False, "--quick", help="One small size (5k) for CI: about a minute."),
    out: Path = typer.Option(Path("bench-results"), "--out", help="Folder for scale.json and scale.png."),
    keep: bool = typer.Option(False, "--keep", help="Keep each size's benchmark database (prints its URL)."),
    chroma: bool = typer.Option(True, "--chroma/--no-chroma", help="Measure the ChromaDB baseline."),
    seed: int = typer.Option(7, "--seed", help="Corpus seed."),
    reuse: Optional[str] = typer.Option(None, "--reuse", metavar="URL",
                                        help="Only the reads (flat baselines, cases, reads; no load, no ingest) "
                                             "on the database a run kept with --keep (the URL it printed)."),
    queries: Optional[int] = typer.Option(None, "--queries", min=10,
                                          help="Timed queries per search measure (default 200; 40 with --quick)."),
    as_json: bool = JsonOpt,
) -> None:
    """Build a realistic corpus per size in a dedicated database, time every read (database time and
    end to end), recall@10 against exact search, ingest with real workers, disk per memory; the same
    queries on flat pgvector and ChromaDB. Prints tables (or JSON) and writes JSON + a PNG chart.

    Example: fabric bench scale --sizes 10k,100k --out bench-results
    Reads again on a kept database: fabric bench scale --reuse postgresql://…/fabric_bench_scale_1m_30a519
    """
    from .. import servers
    from ..bench import scale as sc

    with handle_errors():
        if reuse:  # the size comes from the kept database (checked against --sizes when given)
            size_list = sc.parse_sizes(sizes) if sizes else []
        else:
            size_list = [sc.QUICK_SIZE] if quick else sc.parse_sizes(sizes or "10k,100k")
        cfg = sc.ScaleConfig(sizes=size_list, out=out, keep=keep, seed=seed, chroma=chroma, queries=queries,
                             quick=quick, reuse=reuse)
        from ..config import Settings

        s = Settings.from_env()
        db_url, redis_url, _, _ = servers.resolve(s.database_url, s.redis_url, s.data_dir)

        def progress(msg: str) -> None:
            err_console.print(f"[dim]{msg}[/]")

        results = sc.run(cfg, db_url, redis_url, progress)
    if as_json:
        print_json(results)
    else:
        # the tables are wide: do not wrap them at 80 columns when the output is not a terminal
        sc.render(results, console if console.is_terminal else Console(width=max(console.width, 150)))
