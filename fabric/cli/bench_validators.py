"""`fabric bench validators`: decision accuracy of the rule and LLM validators on labelled sets."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from .app import EXIT_USAGE, JsonOpt, console, err_console, handle_errors, print_json
from .bench import bench_app


def _ms(x: float | None) -> str:
    return "—" if x is None else (f"{x:.0f} ms" if x >= 10 else f"{x:.2f} ms")


@bench_app.command("validators")
def validators(
    llm: Optional[bool] = typer.Option(None, "--llm/--no-llm",
                                       help="Also run the LLM validator (default: when OPENAI_BASE_URL and "
                                            "FABRIC_LLM_MODEL are set). --llm fails if no endpoint is configured."),
    pairs: Optional[list[Path]] = typer.Option(None, "--pairs", help="A JSONL labelled set; repeat for several "
                                               "(default: tests/data/placement_pairs_v2.jsonl, "
                                               "placement_pairs_v4.jsonl and placement_pairs.jsonl)."),
    split: Optional[str] = typer.Option(None, "--split", help="Only the pairs of this split: tune (what prompt "
                                        "work may look at) or holdout. Sets without splits are skipped."),
    pregate: bool = typer.Option(True, "--pregate/--no-pregate",
                                 help="Decide through the pre-gates as placement does (default), or ask the "
                                      "validator on every pair."),
    rules_first: bool = typer.Option(True, "--rules-first/--llm-alone",
                                     help="The LLM validator asks its rules first and the model only about what "
                                          "they cannot read (default, as placement runs it), or the model about "
                                          "every pair that passes the pre-gates."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write validators.json and validators.md here."),
    as_json: bool = JsonOpt,
) -> None:
    """Accuracy of the rule validator (baseline) and the LLM validator on existing/new pairs.

    Each pair goes through the real decision path (pre-gates, validator, target check) with candidates
    embedded by the real embedder. Prints, per set, accuracy per decision kind (overall and per
    tune/holdout split), wrong invalidations of unrelated facts, the confusion, and the LLM's calls,
    tokens and latency.

    Example: OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_API_KEY=local FABRIC_LLM_MODEL=qwen fabric bench validators --llm
    """
    from ..bench.report import write_json
    from ..bench.validators import DEFAULT_SETS, bench_sets, markdown
    from ..config import Settings

    with handle_errors():
        settings = Settings.from_env()
        if llm and not (settings.openai_base_url and settings.llm_model):
            err_console.print("[red]--llm needs an endpoint:[/] set OPENAI_BASE_URL, OPENAI_API_KEY and "
                              "FABRIC_LLM_MODEL (see scripts/local_llm.py serve)")
            raise typer.Exit(EXIT_USAGE)
        result = bench_sets(settings=settings, use_llm=llm, pairs_paths=pairs or DEFAULT_SETS, pregate=pregate,
                            split=split, rules_first=rules_first)
    if out is not None:
        command = "fabric bench validators" + (" --llm" if llm else "") + (f" --split {split}" if split else "") \
            + ("" if rules_first else " --llm-alone") + "".join(f" --pairs {p}" for p in pairs or ())
        out.mkdir(parents=True, exist_ok=True)
        write_json(result, out / "validators.json")
        (out / "validators.md").write_text(markdown(result, command))
    if as_json:
        print_json(result)
        return
    # Piped output gets a wide page rather than rich's 80 columns (tables are for reading).
    page = console if console.is_terminal else Console(width=max(console.width, 160))
    for one in result["sets"]:
        _print(one, page)
    if not result["llm_configured"]:
        page.print("[dim]LLM validator not run: set OPENAI_BASE_URL, OPENAI_API_KEY and FABRIC_LLM_MODEL "
                      "(e.g. `python scripts/local_llm.py serve`) and pass --llm.[/]")


def _cell(s: dict[str, Any] | None) -> str:
    from ..bench.report import pct

    return "—" if not s or not s["n"] else f"{s['correct']}/{s['n']} {pct(s['accuracy'], 1)}"


def _print(result: dict[str, Any], console: Console) -> None:
    from ..bench.report import pct

    runs = result["runs"]
    names = [r["validator"] + (f" ({r['model']})" if r["model"] else "") for r in runs]
    splits = [sp for sp in ("tune", "holdout") if sp in runs[0]["splits"]]
    console.print(f"[bold]{result['set']}: placement decisions on {result['pairs']} labelled pairs[/]"
                  + (f" (split {result['split']})" if result["split"] else "")
                  + f" (embedder {result['embedder']}, pre-gates {'on' if result['pregate'] else 'off'}, "
                    f"near similarity {result['near_similarity']})")
    acc = Table(title="accuracy (kind right, and target right unless new_branch)")
    acc.add_column("label")
    acc.add_column("pairs", justify="right")
    for n in names:
        acc.add_column(n, justify="right")
        for sp in splits:
            acc.add_column(f"{n}: {sp}", justify="right")

    def cells(pick):
        return [c for r in runs for c in [pick(r), *[pick(r["splits"][sp]) for sp in splits]]]

    for kind, count in result["per_kind"].items():
        acc.add_row(kind, str(count), *cells(lambda s, kind=kind: _cell(s["per_kind"][kind])))
    acc.add_row("[bold]overall[/]", str(result["pairs"]),
                *cells(lambda s: f"[bold]{s['correct']}/{s['pairs']} {pct(s['accuracy'], 1)}[/]"))
    acc.add_row("unrelated facts wrongly invalidated", str(result["per_kind"]["new_branch"]),
                *cells(lambda s: f"{s['wrong_invalidations']}/{s['unrelated']} "
                                 f"({s['wrong_invalidations_per_50'] or 0:.1f} per 50)" if s["unrelated"] else "—"))
    acc.add_row("true facts superseded by a non-correction", "",
                *cells(lambda s: str(s["superseded_wrongly"])))
    console.print(acc)
    short = {"duplicate": "dup", "child_update": "update", "contradiction_fork": "contra", "new_branch": "new",
             "error": "error"}
    for name, r in zip(names, runs):
        conf = Table(title=f"confusion: {name} (rows: label, columns: decision)")
        conf.add_column("label")
        cols = list(next(iter(r["confusion"].values())))
        for c in cols:
            conf.add_column(short.get(c, c), justify="right")
        for label, row in r["confusion"].items():
            conf.add_row(label, *[str(row[c]) if row[c] else "·" for c in cols])
        console.print(conf)
    cost = Table(title="cost")
    cost.add_column("")
    for n in names:
        cost.add_column(n, justify="right")
    for title, fmt in (("pre-gated (no validator call)", lambda r: str(r["pregated"])),
                       ("settled by the rules first (no request)", lambda r: str(r["ruled"])),
                       ("validator calls", lambda r: str(r["validator_calls"])),
                       ("HTTP requests (retries included)", lambda r: str(r["requests"])),
                       ("prompt / completion tokens", lambda r: f"{r['prompt_tokens']} / {r['completion_tokens']}"),
                       ("latency per call: mean", lambda r: _ms(r["latency_ms_mean"])),
                       ("latency per call: p50", lambda r: _ms(r["latency_ms_p50"])),
                       ("latency per call: max", lambda r: _ms(r["latency_ms_max"])),
                       ("right kind, wrong target", lambda r: str(r["wrong_target"])),
                       ("gave up (would park)", lambda r: str(r["errors"])),
                       ("wall time", lambda r: f"{r['seconds']:.1f} s")):
        cost.add_row(title, *[fmt(r) for r in runs])
    console.print(cost)
    for name, r in zip(names, runs):
        if r["misses"]:
            console.print(f"[dim]{name} misses: " + ", ".join(
                f"{m['id']} ({m['label']}→{m['predicted']})" for m in r["misses"]) + "[/]")
