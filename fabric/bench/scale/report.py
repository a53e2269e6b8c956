"""Targets, growth, chart and table of the results."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from .config import EMBEDDINGS_NOTE, size_label

# --------------------------------------------------------------------------------------------------
# targets, growth, chart, table


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 2)


def _meets(value: float, goal: str) -> bool:
    """'<= 10 ms', '>= 0.95', '<= 1.5x', '>= 200/s' -> does value meet it?"""
    m = re.match(r"([<>]=)\s*([0-9.]+)", goal)
    if not m:
        return False
    bound = float(m.group(2))
    return value <= bound if m.group(1) == "<=" else value >= bound


def check_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, checked at the largest size measured (they are stated for 1M). Latency
    targets are checked on wall time and on the server's on-CPU time (the machine is shared)."""
    if not results["sizes"]:
        return []
    s = results["sizes"][-1]
    r = s["reads"]
    at = s["label"]

    def get(name: str, key: str) -> float | None:
        return r.get(name, {}).get(key)

    out = []

    def add(name: str, target: str, measured: Any, cpu: Any = None) -> None:
        out.append({"target": name, "goal": target, "measured": measured, "at": at,
                    "met": None if measured is None else _meets(measured, target),
                    "cpu_measured": cpu, "cpu_met": None if cpu is None else _meets(cpu, target)})

    for org in ("large", "medium", "small"):
        flat = f"flat_pgvector_{org}" if f"flat_pgvector_{org}" in r else None
        for mode in ("now", "valid_at", "known_at"):
            vec, hyb = f"search_{mode}_{org}", f"search_hybrid_{mode}_{org}"
            if vec not in r:
                continue
            what = f"{org} org, {'current state' if mode == 'now' else mode}"
            add(f"hybrid search p50 ({what})", "<= 15 ms", get(hyb, "p50_ms"), get(hyb, "server_cpu_p50_ms"))

            def vs(read: str, base: str, key: str) -> float | None:
                # the baseline measured interleaved with this read, on its queries (same_run)
                b = baseline_of(r, read, base)
                return ratio(get(read, key), b.get(key) if b else None)

            if flat:
                add(f"hybrid search vs flat pgvector p50 ({what})", "<= 2x", vs(hyb, flat, "p50_ms"),
                    vs(hyb, flat, "cpu_p50_ms"))
            add(f"vector search p50 ({what})", "<= 10 ms", get(vec, "p50_ms"), get(vec, "server_cpu_p50_ms"))
            if flat:
                # two comparisons, named: flat pgvector at its default ef_search (100: lower recall at
                # 1M) and at fabric's own ef_search for this search (the same candidate list)
                add(f"vector search vs flat pgvector p50 ({what}; flat at ef_search {get(flat, 'ef_search')})",
                    "<= 1.5x", vs(vec, flat, "p50_ms"), vs(vec, flat, "cpu_p50_ms"))
                same = f"{flat}_same_ef"
                if same in r:
                    same_ef = (baseline_of(r, vec, same) or {}).get("ef_search")
                    add(f"vector search vs flat pgvector p50 ({what}; flat at fabric's ef_search "
                        f"{same_ef}, fabric at {get(vec, 'ef_search')})",
                        "<= 1.5x", vs(vec, same, "p50_ms"), vs(vec, same, "cpu_p50_ms"))
            add(f"vector search p99 ({what})", "<= 50 ms", get(vec, "p99_ms"), get(vec, "server_cpu_p99_ms"))
            add(f"recall@10 ({what})", ">= 0.95", get(vec, "recall_at_10"))
            fb = get(vec, "exact_fallback_rate")
            add(f"exact fallbacks ({what})", "<= 0.02", fb if fb is not None else 0.0)
    add("current_value p50", "<= 1 ms", get("current_value", "p50_ms"), get("current_value", "server_cpu_p50_ms"))
    add("walk of 1,000 nodes p50", "<= 20 ms", get("walk_1000", "p50_ms"), get("walk_1000", "server_cpu_p50_ms"))
    add("belief_state of a 1,000-memory org p50", "<= 20 ms", get("belief_state_1000", "p50_ms"),
        get("belief_state_1000", "server_cpu_p50_ms"))
    if not s.get("reused"):  # a reads-only run on a kept database says nothing of a whole run's time
        add("whole run of this size, minutes", "<= 30", round(s["total_s"] / 60, 1))
    return out


GROWTH_READS = ("search_now_large", "search_valid_at_large", "search_known_at_large", "search_now_medium",
                "search_valid_at_medium", "search_known_at_medium", "search_now_small",
                "search_hybrid_now_large", "search_hybrid_now_medium", "search_hybrid_now_small",
                "search_valid_at_small", "search_known_at_small", "current_value", "walk_1000",
                "belief_state_1000", "history", "flat_pgvector_large", "chroma_large")


def growth(results: dict[str, Any]) -> dict[str, Any]:
    """p50 per size and the exponent b in cost ~ N^b between the smallest and the largest size (b near
    0: independent of the store's size; near 1: linear in it, a bug for these reads). b is computed on
    the server's on-CPU p50 where measured (waiting for a CPU on a shared machine is noise here), else
    on wall p50."""
    sizes = results["sizes"]
    out: dict[str, Any] = {}
    if not sizes:
        return out
    for name in GROWTH_READS:
        rows = [(s["n"], s["reads"][name]) for s in sizes if name in s.get("reads", {})]
        if not rows:
            continue
        key = "server_cpu_p50_ms" if all(r.get("server_cpu_p50_ms") for _, r in rows) else \
            "cpu_p50_ms" if all(r.get("cpu_p50_ms") for _, r in rows) else "p50_ms"
        entry: dict[str, Any] = {"p50_ms": {size_label(n): r["p50_ms"] for n, r in rows}, "basis": key}
        if key != "p50_ms":
            entry["cpu_ms"] = {size_label(n): r[key] for n, r in rows}
        if len(rows) >= 2 and rows[0][1][key] > 0:
            (n0, a), (n1, b) = rows[0], rows[-1]
            entry["exponent"] = round(float(np.log(b[key] / a[key]) / np.log(n1 / n0)), 2)
            entry["grows_linearly"] = entry["exponent"] > 0.5
        out[name] = entry
    return out


CHART_SERIES = (("search_now_large", "fabric search now (large org)"),
                ("search_valid_at_large", "fabric search valid_at (large)"),
                ("search_known_at_large", "fabric search known_at (large)"),
                ("search_now_medium", "fabric search now (medium org, 4%)"),
                ("search_now_small", "fabric search now (small org)"),
                ("search_hybrid_now_large", "fabric hybrid search (large)"),
                ("flat_pgvector_large", "flat pgvector (large org)"),
                ("chroma_large", "ChromaDB (large org)"),
                ("current_value", "current_value"),
                ("walk_1000", "walk 1,000 nodes"),
                ("belief_state_1000", "belief_state 1,000"),
                ("history", "history"))


def write_chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    for ax, key, title in ((axes[0], "p50_ms", "p50"), (axes[1], "p99_ms", "p99")):
        for name, label in CHART_SERIES:
            pts = [(s["n"], s["reads"][name][key]) for s in results["sizes"] if name in s.get("reads", {})]
            if pts:
                xs, ys = zip(*pts)
                style = "--" if name.startswith(("flat", "chroma")) else "-"
                ax.plot(xs, ys, style, marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories in the store")
        ax.set_ylabel(f"{title} latency, ms (database time)")
        ax.set_title(f"fabric bench scale: {title} latency against size")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left")
    fig.text(0.01, 0.01, "embeddings: " + EMBEDDINGS_NOTE[:120], fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


READ_ROWS = (
    ("search_now_large", "search now · large org", "flat_pgvector_large", "chroma_large"),
    ("search_valid_at_large", "search valid_at · large", "flat_pgvector_large", "chroma_large"),
    ("search_known_at_large", "search known_at · large", "flat_pgvector_large", "chroma_large"),
    ("search_now_medium", "search now · medium org (4%)", None, None),
    ("search_valid_at_medium", "search valid_at · medium", None, None),
    ("search_known_at_medium", "search known_at · medium", None, None),
    ("search_now_small", "search now · small org", "flat_pgvector_small", "chroma_small"),
    ("search_valid_at_small", "search valid_at · small", "flat_pgvector_small", "chroma_small"),
    ("search_known_at_small", "search known_at · small", "flat_pgvector_small", "chroma_small"),
    ("current_value", "current_value", None, None),
    ("walk_1000", "walk 1,000-node subtree", None, None),
    ("belief_state_1000", "belief_state 1,000 org", None, None),
    ("history", "history", None, None),
    ("flat_pgvector_large", "flat pgvector · large (ef_search 100)", None, None),
    ("flat_pgvector_large_same_ef", "flat pgvector · large (fabric's ef_search)", None, None),
    ("flat_pgvector_small", "flat pgvector · small", None, None),
    ("chroma_large", "ChromaDB · large", None, None),
    ("chroma_small", "ChromaDB · small", None, None),
    ("search_hybrid_now_large", "hybrid search now · large", "flat_pgvector_large", None),
    ("search_hybrid_valid_at_large", "hybrid search valid_at · large", "flat_pgvector_large", None),
    ("search_hybrid_known_at_large", "hybrid search known_at · large", "flat_pgvector_large", None),
    ("search_hybrid_now_medium", "hybrid search now · medium", None, None),
    ("search_hybrid_valid_at_medium", "hybrid search valid_at · medium", None, None),
    ("search_hybrid_known_at_medium", "hybrid search known_at · medium", None, None),
    ("search_hybrid_now_small", "hybrid search now · small", "flat_pgvector_small", None),
    ("search_hybrid_valid_at_small", "hybrid search valid_at · small", "flat_pgvector_small", None),
    ("search_hybrid_known_at_small", "hybrid search known_at · small", "flat_pgvector_small", None),
    ("lib_search_large", "lib search (hybrid) · large", None, None),
    ("lib_search_small", "lib search (hybrid) · small", None, None),
    ("lib_search_vector_large", "lib search (vector) · large", None, None),
    ("lib_current_value", "lib current_value", None, None),
    ("lib_walk_1000", "lib walk 1,000", None, None),
    ("lib_belief_state_1000", "lib belief_state 1,000", None, None),
    ("lib_history", "lib history", None, None),
)


def baseline_of(reads: dict[str, Any], name: str, base: str) -> dict[str, Any] | None:
    """The baseline's figures to compare read `name` with: those taken interleaved with it (`same_run`)
    when it has them, else the baseline's own record (results of older runs)."""
    return reads.get(name, {}).get("same_run", {}).get(base) or reads.get(base)


def _vs(reads: dict[str, Any], name: str, base: str | None) -> str:
    """fabric p50 / baseline p50 (and the ratio of total CPU); † when the fabric read is time-filtered."""
    b = baseline_of(reads, name, base) if base else None
    if b is None:
        return ""
    x = reads[name]
    rr = ratio(x["p50_ms"], b["p50_ms"])
    if rr is None:
        return ""
    rc = ratio(x.get("cpu_p50_ms"), b.get("cpu_p50_ms"))
    dagger = "†" if ("valid_at" in name or "known_at" in name) else ""
    return f"{rr:.2f}{dagger}" + (f" ({rc:.2f})" if rc is not None else "")


def _cell(x: dict[str, Any], key: str, fmt: str = "{:.2f}") -> str:
    v = x.get(key)
    return "" if v is None else fmt.format(v)


def _disk_text(d: dict[str, Any]) -> str:
    """Bytes on disk per memory, worded once for the report and the console."""
    return (f"{d['memory_tables_bytes_per_memory']:.0f} B per memory (memories + versions with their indexes; "
            f"the HNSW index {d['hnsw_bytes_per_memory']:.0f}), {d['all_tables_bytes_per_memory']:.0f} B with "
            f"writes and decisions; flat pgvector {d.get('flat_pgvector_bytes_per_row') or 0:.0f} B per row")


def _load_text(ld: dict[str, Any]) -> str:
    """Load step timings: the store's steps, then each baseline's steps after its name."""
    own = ", ".join(f"{k} {v}" for k, v in ld.items() if not isinstance(v, dict))
    baselines = "; ".join(f"{k} " + ", ".join(f"{a} {b}" for a, b in v.items())
                          for k, v in ld.items() if isinstance(v, dict))
    return "; ".join(x for x in (own, baselines) if x)


def markdown(results: dict[str, Any]) -> str:
    """The results as markdown tables (for docs/performance.md)."""
    out: list[str] = []
    for s in results["sizes"]:
        r, cs = s["reads"], s["corpus"]
        la = s.get("load_average_after")
        out.append(f"### {s['label']} memories\n")
        out.append(f"{cs['orgs']:,} orgs; large org {cs['large_org_memories']:,}, medium org "
                   f"{cs.get('medium_org_memories', 0):,}, small org {cs['small_org_memories']}; "
                   f"{cs['versions']:,} versions; {cs['not_current_fraction']:.0%} not current; max depth "
                   f"{cs['max_depth']}. Synthetic embeddings. Server: PostgreSQL {s['server']['server_version']}, "
                   f"pgvector {s['server']['pgvector']}, shared_buffers {s['server']['shared_buffers']}."
                   + (f" Load average {la[0]:.1f} on {results['meta'].get('cpu_count')} CPUs." if la else "")
                   + (f" Reads only, on the kept database {s['database']}: {s['total_s']:.0f} s.\n" if s.get("reused")
                      else f" This size took {s['total_s']:.0f} s.\n"))
        out.append("| read | p50 ms | p95 ms | p99 ms | server CPU ms | client CPU ms | recall@10 | ×flat pgvector "
                   "(CPU) | ×ChromaDB (CPU) | note |")
        out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
        for name, label, flat, chroma in READ_ROWS:
            if name not in r:
                continue
            x = r[name]

            note = []
            if x.get("exact_fallback_rate"):
                note.append(f"exact fallback {x['exact_fallback_rate']:.0%}")
            if x.get("not_current_in_top10") is not None:
                note.append(f"{x['not_current_in_top10']:.0%} of top-10 not current")
            if x.get("rows_mean") is not None and not name.startswith("search"):
                note.append(f"{x['rows_mean']:.0f} rows")
            out.append(f"| {label.replace('·', '–')} | {x['p50_ms']:.2f} | {x['p95_ms']:.2f} | {x['p99_ms']:.2f} | "
                       f"{_cell(x, 'server_cpu_p50_ms')} | {_cell(x, 'client_cpu_p50_ms')} | "
                       f"{_cell(x, 'recall_at_10', '{:.3f}')} | {_vs(r, name, flat)} | {_vs(r, name, chroma)} | "
                       f"{', '.join(note)} |")
        ing = s.get("ingest")
        if ing:
            wa = ing["write_accept"]
            out.append("")
            out.append(f"Ingest: write() {wa['accepted_per_s']:.0f} accepted/s (p50 {wa['p50_ms']:.2f} ms), "
                       f"write_many() {wa['write_many_accepted_per_s']:.0f}/s; placements/s with the rule validator, "
                       f"embedding excluded: {ing['place_1_workers']['placements_per_s']:.0f} (1 worker), "
                       f"{ing['place_2_workers']['placements_per_s']:.0f} (2 workers); 2 workers embedding locally: "
                       f"{ing['place_2_workers_with_embedding']['placements_per_s']:.0f}/s; embedder "
                       f"{ing['embedder']['texts_per_s']:.0f} texts/s.")
        d = s.get("disk")
        if d:
            out.append(f"Disk: {_disk_text(d)}.")
        ld = s.get("load", {})
        if ld:
            out.append(f"Load: {_load_text(ld)}.")
        out.append("")
    g = results.get("growth", {})
    if g and len(results["sizes"]) > 1:
        labels = [s["label"] for s in results["sizes"]]
        out.append("### Cost growth\n")
        out.append("p50 wall ms (server CPU ms); b: exponent of cost ~ N^b on server CPU, smallest to largest size.\n")
        out.append("| read | " + " | ".join(labels) + " | b |")
        out.append("|---|" + "--:|" * (len(labels) + 1))
        for name, e in g.items():
            cells = []
            for lab in labels:
                w, c = e["p50_ms"].get(lab), e.get("cpu_ms", {}).get(lab)
                cells.append("" if w is None else f"{w:.2f}" + (f" ({c:.2f})" if c is not None else ""))
            out.append(f"| {name} | " + " | ".join(cells) + f" | {e.get('exponent', '')}"
                       + (" **linear**" if e.get("grows_linearly") else "") + " |")
        out.append("")
    t = results.get("targets", [])
    if t:
        out.append(f"### Targets (checked at {t[0]['at']})\n")
        out.append("| target | goal | measured (wall) | met | on CPU (server; a ratio: total) | met on CPU |")
        out.append("|---|---|--:|---|--:|---|")
        yn = {True: "yes", False: "**no**", None: ""}
        for x in t:
            out.append(f"| {x['target']} | {x['goal']} | {x['measured']} | {yn[x['met']]} | "
                       f"{'' if x.get('cpu_measured') is None else x['cpu_measured']} | {yn[x.get('cpu_met')]} |")
        out.append("")
    return "\n".join(out)


def render(results: dict[str, Any], console: Any) -> None:
    """Rich tables: reads per size (with ratios to the flat baselines), ingest, disk, growth, targets."""
    from rich.table import Table

    for s in results["sizes"]:
        r = s["reads"]
        cs = s["corpus"]
        t = Table(title=f"fabric bench scale — {s['label']} memories: {cs['orgs']} orgs, large org "
                        f"{cs['large_org_memories']:,}, small org {cs['small_org_memories']}, "
                        f"{cs['not_current_fraction']:.0%} not current, synthetic embeddings")
        for col in ("read", "p50 ms", "p95 ms", "p99 ms", "srv cpu", "cli cpu", "q/s", "R@10", "×flat pg", "×chroma",
                    "note"):
            t.add_column(col, justify="left" if col in ("read", "note") else "right", no_wrap=col == "read")
        for name, label, flat, chroma in READ_ROWS:
            if name not in r:
                continue
            x = r[name]

            rec = x.get("recall_at_10")
            note = []
            if x.get("exact_fallback_rate"):
                note.append(f"exact fallback {x['exact_fallback_rate']:.0%}")
            if x.get("not_current_in_top10") is not None:
                note.append(f"{x['not_current_in_top10']:.0%} of top-10 stale")
            if x.get("rows_mean") is not None:
                note.append(f"{x['rows_mean']:.0f} rows")
            srv = f"{x['server_cpu_p50_ms']:.2f}" if x.get("server_cpu_p50_ms") is not None else ""
            cli = f"{x['client_cpu_p50_ms']:.2f}" if x.get("client_cpu_p50_ms") is not None else ""
            t.add_row(label, f"{x['p50_ms']:.2f}", f"{x['p95_ms']:.2f}", f"{x['p99_ms']:.2f}", srv, cli,
                      f"{x['qps']:.0f}",
                      "" if rec is None else f"{rec:.3f}", _vs(r, name, flat), _vs(r, name, chroma), ", ".join(note))
        console.print(t)
        la = s.get("load_average_after") or results["meta"].get("load_average")
        console.print("[dim]p50/p95/p99: wall time of the library's SQL with a precomputed query vector (lib: the "
                      "library call end to end). srv cpu / cli cpu: p50 on-CPU time of the server backend and of "
                      "the client thread decoding rows (ChromaDB: the whole process), which waiting for a CPU on a "
                      "loaded machine does not inflate. ×flat: fabric p50 / baseline p50, measured interleaved on "
                      "the same queries (in brackets: the same ratio of total CPU). † flat "
                      "stores cannot answer time-filtered queries: the ratio is against their unfiltered query."
                      + (f" Load average during this size: {la[0]:.1f} on {os.cpu_count()} CPUs." if la else "")
                      + "[/]")
        ing = s.get("ingest", {})
        if ing:
            it = Table(title=f"ingest — {s['label']}")
            it.add_column("measure")
            it.add_column("figure", justify="right")
            wa = ing["write_accept"]
            it.add_row("write() accepted/s (single calls)", f"{wa['accepted_per_s']:.0f}  (p50 {wa['p50_ms']:.2f} ms)")
            it.add_row("write_many() accepted/s", f"{wa['write_many_accepted_per_s']:.0f}")
            for w in (1, 2):
                p = ing[f"place_{w}_workers"]
                it.add_row(f"placements/s, rule validator, {w} worker(s), embedding excluded",
                           f"{p['placements_per_s']:.0f}")
            p = ing["place_2_workers_with_embedding"]
            it.add_row("placements/s, 2 workers, local embedding included (reference)", f"{p['placements_per_s']:.0f}")
            it.add_row(f"embedder throughput ({ing['embedder']['model']}, batch 64)",
                       f"{ing['embedder']['texts_per_s']:.0f} texts/s")
            console.print(it)
        d = s.get("disk", {})
        if d:
            console.print(f"disk — {s['label']}: {_disk_text(d)}")
        ld = s.get("load", {})
        if ld:
            console.print(f"[dim]load — {s['label']}: {_load_text(ld)}; size total {s['total_s']} s[/]")
    g = results.get("growth", {})
    if g and len(results["sizes"]) > 1:
        gt = Table(title="cost growth: p50 wall ms (server CPU ms) per size; b in cost ~ N^b, on server CPU")
        gt.add_column("read")
        labels = [s["label"] for s in results["sizes"]]
        for lab in labels:
            gt.add_column(lab, justify="right")
        gt.add_column("b", justify="right")
        for name, e in g.items():
            cells = []
            for lab in labels:
                w = e["p50_ms"].get(lab)
                c = e.get("cpu_ms", {}).get(lab)
                cells.append("" if w is None else f"{w:.2f}" + (f" ({c:.2f})" if c is not None else ""))
            gt.add_row(name, *cells, f"{e.get('exponent', '')}" + (" (linear!)" if e.get("grows_linearly") else ""))
        console.print(gt)
    at = results["sizes"][-1]["label"] if results["sizes"] else "-"
    tt = Table(title=f"targets (stated for 1M; checked at {at})")
    for col in ("target", "goal", "measured (wall)", "met", "on CPU (server; ratio: total)", "met on CPU"):
        tt.add_column(col)

    def yes(v: bool | None) -> str:
        return "[green]yes[/]" if v else "[red]no[/]" if v is False else ""

    for x in results.get("targets", []):
        tt.add_row(x["target"], x["goal"], str(x["measured"]), yes(x["met"]),
                   "" if x.get("cpu_measured") is None else str(x["cpu_measured"]), yes(x.get("cpu_met")))
    console.print(tt)
    files = results.get("files", {})
    if files:
        console.print(f"[dim]wrote {files.get('json')} and {files.get('png')}[/]")
