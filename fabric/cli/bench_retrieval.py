"""`fabric bench retrieval`: vector vs lexical vs hybrid retrieval, quality and latency."""

from __future__ import annotations

import time
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from .app import EXIT_ERROR, EXIT_OK, JsonOpt, console, err_console, handle_errors, print_json
from .bench import bench_app


def _sizes(value: Optional[str]) -> list[int] | None:
    from ..errors import ValidationError

    if value is None:
        return None
    try:
        sizes = [int(x.replace("_", "")) for x in value.split(",") if x.strip()]
    except ValueError:
        raise ValidationError("sizes", f"expected comma-separated integers, got {value!r}") from None
    if not sizes or any(n < 100 or n > 1_000_000 for n in sizes):
        raise ValidationError("sizes", "each size must be between 100 and 1,000,000 memories")
    return sizes


@bench_app.command("retrieval")
def retrieval(
    quick: bool = typer.Option(False, "--quick", help="CI smoke run: ~100 questions, latency at 2k memories."),
    seed: int = typer.Option(7, "--seed", help="Seed of the generators (the same seed, the same corpus)."),
    sizes: Optional[str] = typer.Option(None, "--sizes", help="Latency corpus sizes (default 10000,100000)."),
    questions: Optional[int] = typer.Option(None, "--questions", min=20, help="Labelled questions (default 240)."),
    queries: Optional[int] = typer.Option(None, "--queries", min=10, help="Timed queries per size (default 200)."),
    database_url: Optional[str] = typer.Option(None, "--database-url",
                                               help="Server for the scratch database (default: DATABASE_URL, "
                                                    "else the embedded PostgreSQL)."),
    keep: bool = typer.Option(False, "--keep", help="Keep the scratch database afterwards."),
    as_json: bool = JsonOpt,
) -> None:
    """Measure retrieval: top-1, recall@5 and "twin ahead" (a fact about a different person with a
    similar name ranked above the answer) for vector, lexical and hybrid search on generated
    near-twin questions; p50/p95 latency of each mode on bulk-loaded corpora; EXPLAIN of a hybrid
    query. The vector-only baseline runs in the same run, on the same data. Runs in a scratch
    database, dropped afterwards. Exits 1 if hybrid ranks a near-twin above a named person's fact
    or a hybrid plan does not use both the HNSW and the GIN index.

    Example: fabric bench retrieval --quick
    """
    from ..bench.retrieval import index_lines, run

    started = time.perf_counter()
    progress = err_console if as_json else console
    with handle_errors():
        report = run(database_url=database_url, quick=quick, seed=seed, sizes=_sizes(sizes), questions=questions,
                     latency_queries=queries, keep=keep, progress=lambda msg: progress.print(f"[dim]{msg}[/]"))
    ok = report.named_twin_ahead("hybrid") == 0 and report.both_indexes_used()
    if as_json:
        print_json({**report.to_dict(), "ok": ok, "seconds": round(time.perf_counter() - started, 1)})
        raise typer.Exit(EXIT_OK if ok else EXIT_ERROR)
    page = console if console.is_terminal else Console(width=max(console.width, 120))
    q = Table(title=f"Retrieval quality: {report.questions} questions over {report.facts} near-twin facts "
                    f"(seed {report.settings['seed']})")
    for col in ("mode", "top-1", "recall@5", "twin ahead", "top-1 named", "top-1 lowercase", "twin ahead named"):
        q.add_column(col, justify="left" if col == "mode" else "right")
    for r in report.quality:
        named, lower = r.by_style.get("named", {}), r.by_style.get("lowercase", {})
        q.add_row(r.mode + (" (baseline)" if r.mode == "vector" else ""), f"{r.top1:.3f}", f"{r.recall5:.3f}",
                  f"{r.twin_ahead:.3f}", f"{named.get('top1', 0):.3f}", f"{lower.get('top1', 0):.3f}",
                  f"{named.get('twin_ahead', 0):.3f}")
    page.print(q)
    lat = Table(title="Latency of one search, database round trip (ms); the same queries, modes interleaved")
    for col in ("memories", "mode", "queries", "p50", "p95", "mean", "p50 vs vector"):
        lat.add_column(col, justify="left" if col == "mode" else "right")
    base = {r.size: r.p50_ms for r in report.latency if r.mode == "vector"}
    for lr in report.latency:
        lat.add_row(f"{lr.size:,}", lr.mode + (" (baseline)" if lr.mode == "vector" else ""), str(lr.queries),
                    f"{lr.p50_ms:.1f}", f"{lr.p95_ms:.1f}", f"{lr.mean_ms:.1f}", f"{lr.p50_ms / base[lr.size]:.2f}x")
    page.print(lat)
    page.print(f"embedding one query (shared by vector and hybrid, not in the figures above): "
               f"p50 {report.embed_ms_p50:.1f} ms; load average during the run: "
               f"{', '.join(f'{x:.1f}' for x in report.load_average)}")
    for size, plan in report.explain.items():
        page.print(f"[bold]EXPLAIN ANALYZE, hybrid, {size:,} memories[/] (index lines):")
        for line in index_lines(plan):
            page.print("  " + line, markup=False, highlight=False)
    verdict = "[green]ok[/]" if ok else "[red]FAILED[/]"
    page.print(f"{verdict}: hybrid named twin-ahead {report.named_twin_ahead('hybrid'):.3f}, both indexes used: "
               f"{report.both_indexes_used()} ({time.perf_counter() - started:.0f} s)")
    raise typer.Exit(EXIT_OK if ok else EXIT_ERROR)
