"""Benchmark output shared by the benchmarks: rich tables, a JSON file, a markdown table, a PNG chart.

The temporal benchmark's results dict (see `fabric.bench.temporal.run`) carries `by_kind` rows
(backend x kind), `by_backend` figures and `behaviours`; these helpers only format them."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from rich.table import Table


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if isinstance(obj, datetime):
        return obj.isoformat()
    return obj


def write_json(results: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(results), indent=1, default=str) + "\n")
    return path


def pct(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{100 * x:.{digits}f}%"


def ms(x: float | None) -> str:
    return "—" if x is None else (f"{x:.1f}" if x < 100 else f"{x:.0f}")


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "—"
    return f"{pct(row['accuracy'])} ({row['correct']}/{row['queries']})"


def _kind_rows(results: dict[str, Any]) -> tuple[dict[tuple[str, str], dict[str, Any]], list[tuple[str, str]]]:
    """by_kind rows keyed by (backend, row label), and the row labels in order: each kind, same-template
    first, then its rephrased cases ("kind ~r"); results without phrasings keep plain kind labels."""
    def label(r: dict[str, Any]) -> str:
        return r["kind"] + (" ~r" if r.get("phrasing") == "rephrased" else "")

    idx = {(r["backend"], label(r)): r for r in results["by_kind"]}
    order = [(k, k + suffix) for suffix in ("", " ~r") for k in results["kinds"]
             if any(lab == k + suffix for _, lab in idx)]
    return idx, order


def kind_grid(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Accuracy by kind x backend, as header + rows of strings ("~r": rephrased cases)."""
    backends = results["backends"]
    idx, order = _kind_rows(results)
    rows = []
    for kind, lab in order:
        mark = " *" if kind in results.get("must_kinds", ()) else ""
        rows.append([kind + mark + lab[len(kind):]] + [_cell(idx.get((b, lab))) for b in backends])
    return ["kind"] + list(backends), rows


def failure_grid(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Stale facts returned as current, wrong-epoch answers and loop escalations by kind x backend."""
    backends = results["backends"]
    idx, order = _kind_rows(results)
    rows = []
    for kind, lab in order:
        cells = []
        for b in backends:
            r = idx.get((b, lab))
            if r is None:
                cells.append("—")
                continue
            parts = []
            if r["now_queries"]:
                parts.append(f"stale {r['stale']}/{r['now_queries']}")
            if r["asof_queries"] and kind != "multi_hop":
                parts.append(f"epoch {r['wrong_epoch']}/{r['asof_queries']}")
            if r["loops"]:
                parts.append(f"esc {r['escalations']}/{r['loops']}")
            if r.get("consistency") is not None:
                parts.append(f"consistent {pct(r['consistency'])}")
            cells.append(" · ".join(parts) or "—")
        if any(c != "—" for c in cells):
            rows.append([lab] + cells)
    return ["kind"] + list(backends), rows


def backend_grid(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    backends = results["backends"]
    pb = results["by_backend"]

    def row(label: str, fn) -> list[str]:
        return [label] + [fn(pb[b]) for b in backends]

    rows = [
        row("accuracy (all questions)", lambda x: pct(x["accuracy"])),
        row("stale returned as current", lambda x: f"{x['stale_returned']} ({pct(x['stale_rate'])})"),
        row("as-of accuracy", lambda x: pct(x["asof_accuracy"])),
        row("loop escalation rate", lambda x: f"{pct(x['escalation_rate'])} ({x['escalations']})"),
        row("  on staleness questions", lambda x: pct(x["escalation_rate_staleness"])),
        row("loop false approvals", lambda x: str(x["false_approvals"])),
        row("validator calls / write", lambda x: "—" if x["validator_calls_per_write"] is None
            else f"{x['validator_calls_per_write']:.2f}"),
    ]
    if any(pb[b].get("llm_calls_per_write") is not None for b in backends):
        rows += [
            row("  of them LLM calls / write", lambda x: "—" if x.get("llm_calls_per_write") is None
                else f"{x['llm_calls_per_write']:.2f}"),
            row("  ms / LLM call (mean)", lambda x: ms(x.get("llm_ms_per_call"))),
        ]
    rows += [
        row("ingest ms / write (until placed)", lambda x: ms(x["ingest_ms_per_write"])),
        row("accept ms / write (the write call)", lambda x: ms(x["accept_ms_per_write"])),
        row("query p50 / p95 ms", lambda x: f"{ms(x['query_p50_ms'])} / {ms(x['query_p95_ms'])}"),
    ]
    return ["metric"] + list(backends), rows


def behaviour_grid(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    backends = results["backends"]
    rows = [[b["behaviour"], ", ".join(k.replace("_", "-") for k in b["kinds"])]
            + [pct(b["accuracy"].get(n)) for n in backends] for b in results["behaviours"]]
    return ["seed 001 behaviour", "kinds"] + list(backends), rows


def conversation_grid(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The conversational stream (fabric-text, and fabric-text-llm when it ran): distinct facts wrongly
    collapsed. No rows when not run."""
    runs = [(name, c) for name, c in (("fabric-text", results.get("conversation")),
                                      ("fabric-text-llm", results.get("conversation_llm"))) if c]
    header = ["conversational stream"] + [name for name, _ in runs]
    if not runs:
        return header, []

    def row(label: str, fn) -> list[str]:
        return [label] + [fn(c) for _, c in runs]

    rows = [
        row("distinct facts (turns)", lambda c: str(c["turns"])),
        row("wrongly collapsed (target <= 1%)", lambda c: f"{c['collapsed']} ({pct(c['collapsed_share'], 1)})"),
        row("  refused as duplicates", lambda c: str(c["duplicates"])),
        row("  superseded by a later turn", lambda c: str(c["superseded"])),
        row("decisions", lambda c: ", ".join(f"{k} {v}" for k, v in c["decisions"].items())),
        row("validator calls / write", lambda c: f"{c['validator_calls_per_write']:.2f}"),
    ]
    if len(runs) > 1:
        rows.append(row("  of them LLM calls / write", lambda c: f"{c.get('llm_calls_per_write') or 0:.2f}"))
        rows.append(row("  ms / LLM call (mean)", lambda c: ms(c.get("llm_ms_per_call"))))
    return header, rows


GRIDS = (("Accuracy by kind (* = fabric must be 100%; ~r = rephrased cases)", kind_grid),
         ("Failures by kind", failure_grid),
         ("By backend", backend_grid),
         ("Seed 001's five behaviours", behaviour_grid),
         ("Conversational stream (each turn a distinct fact)", conversation_grid))


def grids(results: dict[str, Any]) -> list[tuple[str, Any]]:
    """The grids a run has figures for: a --stream-only run has only the stream's."""
    return [(t, g) for t, g in GRIDS if g is conversation_grid or not results.get("stream_only")]


def tables(results: dict[str, Any]) -> list[Table]:
    out = []
    for title, grid in grids(results):
        header, rows = grid(results)
        if not rows:
            continue
        t = Table(title=title, title_justify="left")
        for i, h in enumerate(header):
            left = i == 0 or h == "kinds"
            t.add_column(h, justify="left" if left else "right", no_wrap=i == 0, overflow="fold")
        for r in rows:
            t.add_row(*r)
        out.append(t)
    return out


def markdown(results: dict[str, Any], command: str | None = None) -> str:
    lines = [f"# fabric bench temporal — run {results['run_id']}", ""]
    if command:
        lines += [f"`{command}`", ""]
    per = " and phrasing" if len(results.get("phrasings", ())) > 1 else ""
    lines += [f"seed {results['seed']}, {results['cases_per_kind']} cases per kind{per}, top-k {results['top_k']}, "
              f"embedder {results['embedder']}, {results['elapsed_s']:.0f} s", ""]
    for title, grid in grids(results):
        header, rows = grid(results)
        if not rows:
            continue
        align = ["---" if i == 0 or h == "kinds" else "---:" for i, h in enumerate(header)]
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        lines.append("")
    for name, note in results.get("notes", {}).items():
        lines.append(f"- {name}: {note}")
    return "\n".join(lines).rstrip() + "\n"


def write_chart(results: dict[str, Any], path: Path) -> Path | None:
    """Grouped bars: accuracy by kind x backend. None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    backends: Sequence[str] = results["backends"]
    idx, order = _kind_rows(results)
    kinds = [lab for _, lab in order]
    width = 0.8 / max(len(backends), 1)
    fig, ax = plt.subplots(figsize=(max(8, 0.8 * len(kinds)), 4.8), dpi=120)
    for i, b in enumerate(backends):
        xs = [k + (i - (len(backends) - 1) / 2) * width for k in range(len(kinds))]
        ys = [100 * (idx[(b, k)]["accuracy"] or 0) if (b, k) in idx else 0 for k in kinds]
        ax.bar(xs, ys, width=width * 0.95, label=b)
    ax.set_xticks(range(len(kinds)), [k.replace("_", "-") for k in kinds], rotation=35, ha="right")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"fabric bench temporal — accuracy by kind and backend (seed {results['seed']}, "
                 f"{results['cases_per_kind']} cases per kind"
                 f"{' and phrasing; ~r = rephrased' if len(results.get('phrasings', ())) > 1 else ''})", fontsize=10)
    ax.legend(loc="lower left", fontsize=8, ncols=len(backends))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def write_outputs(results: dict[str, Any], out: Path, *, stem: str = "temporal",
                  command: str | None = None) -> dict[str, str]:
    """Write <stem>.json, <stem>.md and <stem>.png into `out`; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": str(out / f"{stem}.json"), "markdown": str(out / f"{stem}.md")}
    chart = None if results.get("stream_only") else write_chart(results, out / f"{stem}.png")
    if chart is not None:
        files["chart"] = str(chart)
    (out / f"{stem}.md").write_text(markdown(results, command))
    write_json({**results, "files": files}, out / f"{stem}.json")
    return files
