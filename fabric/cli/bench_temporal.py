"""`fabric bench temporal`: what did the store know at time T — fabric against flat vector baselines."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from .app import EXIT_ERROR, JsonOpt, console, connected, err_console, handle_errors, print_json
from .bench import bench_app


@bench_app.command("temporal")
def temporal(
    quick: bool = typer.Option(False, "--quick", help="A few cases per kind (CI smoke run, under 2 minutes)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the case generator (the same seed, the same cases)."),
    out: Path = typer.Option(Path("bench-results"), "--out", help="Folder for temporal.json, .md and .png."),
    backends: str = typer.Option("all", "--backends",
                                 help="Comma-separated: fabric-keys, fabric-text, pgvector, chroma "
                                      "(or fabric, flat, all); opt-in, with an LLM endpoint: "
                                      "fabric-keys-llm, fabric-text-llm (or llm)."),
    llm_url: Optional[str] = typer.Option(None, "--llm-url",
                                          help="OpenAI-compatible endpoint for the -llm backends "
                                               "(default: OPENAI_BASE_URL)."),
    llm_model: Optional[str] = typer.Option(None, "--llm-model",
                                            help="Model name for the -llm backends (default: FABRIC_LLM_MODEL)."),
    per_kind: Optional[int] = typer.Option(None, "--per-kind", min=1, help="Cases per kind (default 20; 4 with --quick)."),
    phrasing: str = typer.Option("both", "--phrasing",
                                 help="same (every version of a fact in one template), rephrased (each version "
                                      "in another style) or both."),
    turns: Optional[int] = typer.Option(None, "--turns", min=0,
                                        help="Turns of the conversational stream, written text-only when "
                                             "fabric-text runs (default 150; 40 with --quick; 0: skip)."),
    stream_only: bool = typer.Option(False, "--stream-only",
                                     help="Run only the conversational stream (no cases, no flat baselines' "
                                          "questions): the quick way to measure collapsed turns with an LLM."),
    worker: bool = typer.Option(True, "--worker/--no-worker",
                                help="Start a placement worker for the run (off: rely on running workers)."),
    as_json: bool = JsonOpt,
) -> None:
    """Run the temporal benchmark: every kind of temporal question against fabric (with keys and
    text only) and flat vector memory (pgvector, ChromaDB) on the same embeddings; print the
    tables, write a JSON file of all results and a chart. Exits 1 if fabric misses its bar
    (100% on staleness/historical/out-of-order/known-at/retraction, no stale answer, no escalation).
    fabric-keys and fabric-text use the rule validator; the -llm backends the LLM validator, placed
    by a second worker in the same run.

    Example: fabric bench temporal --quick --out bench-results
    Example: fabric bench temporal --quick --backends fabric-text,fabric-text-llm,pgvector \\
             --llm-url http://127.0.0.1:8080/v1 --llm-model qwen2.5-coder-1.5b-instruct
    """
    from ..bench.report import tables, write_outputs
    from ..bench.temporal import LLM_BACKENDS, llm_endpoint, parse_backends, parse_phrasing, run
    from ..config import Settings

    started = time.perf_counter()
    endpoint = None
    with handle_errors():
        names = parse_backends(backends)
        phrasings = parse_phrasing(phrasing)
        if any(n in LLM_BACKENDS for n in names):
            env = Settings.from_env()
            endpoint = llm_endpoint(llm_url or env.openai_base_url, llm_model or env.llm_model, env.openai_api_key)
    progress = err_console if as_json else console
    # The rules' columns are the rule validator's, even when an LLM endpoint is in the environment.
    with connected(run_worker=worker, validator="rule") as fab:
        results = run(fab, quick=quick, seed=seed, backends=names, out=None, per_kind=per_kind,
                      phrasings=phrasings, turns=turns, progress=lambda msg: progress.print(f"[dim]{msg}[/]"),
                      llm=endpoint, stream_only=stream_only)
    command = "fabric bench temporal" + (" --quick" if quick else "") + (f" --seed {seed}" if seed else "") + \
        (f" --per-kind {per_kind}" if per_kind else "") + (f" --backends {backends}" if backends != "all" else "") + \
        (f" --phrasing {phrasing}" if phrasing != "both" else "") + (f" --turns {turns}" if turns is not None else "") + \
        (" --stream-only" if stream_only else "")
    try:
        results["files"] = write_outputs(results, out, command=command)
    except OSError as exc:
        err_console.print(f"[red]cannot write the results to {out}:[/] {exc}")
        raise typer.Exit(EXIT_ERROR) from None
    elapsed = time.perf_counter() - started
    if as_json:
        print_json({k: v for k, v in results.items() if k not in ("queries", "cases", "placements")})
    else:
        # Piped output gets a wide page rather than rich's 80 columns (tables are for reading).
        page = console if console.is_terminal else Console(width=max(console.width, 130))
        for t in tables(results):
            page.print(t)
        for name, note in results["notes"].items():
            page.print(f"[yellow]{name}[/]: {note}")
        for key, who in (("conversation", ""), ("conversation_llm", " (LLM)")):
            for ex in (results.get(key) or {}).get("examples", []):
                page.print(f"[dim]collapsed turn{who}: {ex['turn']!r} {ex['how']}"
                           + (f" {ex['other']!r}" if ex["other"] else "") + "[/]")
        for name, bar in results["bar"].items():
            mark = "[green]meets its bar[/]" if bar["ok"] else "[red]misses its bar:[/] " + "; ".join(bar["failures"])
            page.print(f"{name}: {mark}")
        page.print(f"[dim]{elapsed:.0f} s; wrote {', '.join(results['files'].values())}[/]")
    if any(not b["ok"] for b in results["bar"].values()):
        raise typer.Exit(EXIT_ERROR)
