"""Admin commands: ingest, replay, revert, decisions, stats, invalidate-source (and `bench replay`).

Exit codes (see fabric/cli/app.py): 0 ok, 1 error, 2 bad input, 3 not found, 4 timeout, and for
`ingest` 5 = some lines were bad (the good ones were written), 6 = some writes were parked."""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Optional

import typer
from rich.table import Table

from ..errors import ValidationError
from ..types import DECISION_KINDS
from .app import (
    EXIT_TIMEOUT, JsonOpt, OrgOpt, app, connected, console, err_console, fmt_time, full_id, handle_errors,
    parse_time, print_json, progress_bars, titled_table,
)
from .bench import bench_app

EXIT_BAD_LINES = 5
EXIT_PARKED = 6
ACTIONS = ("place", "revert", "retract", "replay", "invalidate_source")


def _short(x: Any) -> str:
    return str(x)[:8] if x is not None else ""


def _clip(text: str | None, n: int = 60) -> str:
    if not text:
        return ""
    return text if len(text) <= n else text[: n - 1] + "…"


# ---------------------------------------------------------------------------------------------- ingest

def _lines(path: str) -> Iterator[tuple[int, str]]:
    if path == "-":
        for i, line in enumerate(sys.stdin, 1):
            yield i, line
        return
    p = Path(path)
    if not p.is_file():
        raise ValidationError("FILE", f"no such file: {path}")
    with p.open(encoding="utf-8", errors="replace") as fh:
        for i, line in enumerate(fh, 1):
            yield i, line


def parse_line(fab, line: str, default_org: str):
    """One JSONL line -> a validated WriteRequest (raises ValidationError naming the field)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValidationError("json", f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValidationError("json", f"expected a JSON object, got {type(obj).__name__}")
    obj.setdefault("org", default_org)
    for name in ("valid_from", "valid_to"):
        if isinstance(obj.get(name), str):
            obj[name] = parse_time(name, obj[name])
    if "content" not in obj:
        raise ValidationError("content", "missing")
    return fab.validate_write(obj)


@app.command()
def ingest(
    file: str = typer.Argument(..., help="A JSONL file (one write per line: content, subject, relation, value, "
                                         "valid_from, valid_to, source, kind, durability, metadata, org); - for stdin."),
    org: str = typer.Option("default", "--org", "-o", help="Org for lines that name none."),
    batch: int = typer.Option(500, "--batch", min=1, max=10000, help="Writes per write_many call."),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait for placement and summarise the decisions."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait for placement."),
    as_json: bool = JsonOpt,
) -> None:
    """Bulk-write a JSONL file: bad lines are reported with their line numbers and skipped, the good
    ones are written in batches; then wait for placement and summarise the decisions.
    Exit code 5 when some lines were bad, 6 when some writes were parked, 4 on a placement timeout.

    Example: fabric ingest notes.jsonl --org acme   (a line: {"content": "Ada works at Acme.", "subject": "Ada", "relation": "employer", "value": "Acme"})
    """
    from .. import queue as fq

    bad: list[dict[str, Any]] = []
    receipts: list = []
    with connected() as fab:
        total = None
        if file != "-" and Path(file).is_file():
            with open(file, "rb") as fh:
                total = sum(1 for _ in fh)
        with progress_bars(console=err_console, disable=as_json and not err_console.is_terminal) as progress:
            read = progress.add_task("writing", total=total)
            pending: list = []

            def flush() -> None:
                if pending:
                    receipts.extend(fab.write_many(pending))
                    pending.clear()

            for lineno, line in _lines(file):
                progress.advance(read)
                if not line.strip():
                    continue
                try:
                    pending.append(parse_line(fab, line, org))
                except ValidationError as exc:
                    bad.append({"line": lineno, "field": exc.field, "error": str(exc).split(": ", 1)[-1]})
                    continue
                if len(pending) >= batch:
                    flush()
            flush()
            summary = fab.writes_summary(receipts)
            timed_out, worker_note = False, ""
            if wait and receipts:
                place = progress.add_task("placing", total=len(receipts))
                deadline = time.monotonic() + timeout
                while True:
                    summary = fab.writes_summary(receipts)
                    pending_n = summary["status"].get("pending", 0)
                    progress.update(place, completed=len(receipts) - pending_n)
                    if pending_n == 0:
                        break
                    if time.monotonic() > deadline or (
                            time.monotonic() > deadline - timeout + 10 and not fq.listening_workers(fab.queue)):
                        timed_out = True  # out of time, or nobody is there to place them
                        worker_note = fab.worker_status()
                        break
                    time.sleep(0.2)
    result = {"lines_ok": len(receipts), "lines_bad": len(bad), "bad_lines": bad, **summary}
    if as_json:
        print_json(result)
    else:
        for b in bad:
            err_console.print(f"[yellow]line {b['line']}:[/] invalid {b['field']}: {b['error']}")
        table = Table(title=f"{len(receipts)} written, {len(bad)} bad line(s) skipped")
        table.add_column("placement")
        table.add_column("count", justify="right")
        for status, n in sorted(summary["status"].items()):
            table.add_row(f"status {status}", str(n))
        for kind, n in sorted(summary["decisions"].items()):
            table.add_row(f"decision {kind}", str(n))
        console.print(table)
    if timed_out:
        err_console.print(f"[red]timeout:[/] {summary['status'].get('pending', 0)} write(s) still pending "
                          f"(accepted and queued; they stay so): {worker_note}")
        raise typer.Exit(EXIT_TIMEOUT)
    if bad:
        raise typer.Exit(EXIT_BAD_LINES)
    if summary["status"].get("parked"):
        raise typer.Exit(EXIT_PARKED)


# ---------------------------------------------------------------------------------------------- replay

@app.command()
def replay(
    org: str = typer.Option(..., "--org", "-o", help="Tenant (org)."),
    root: str = typer.Option(..., "--root", help="Root memory id of the subtree to replay (or its first characters)."),
    validator: str = typer.Option("rule", "--validator", help="rule | llm"),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the difference, write nothing (the default)."),
    apply: bool = typer.Option(False, "--apply", help="Commit the new placements (one transaction)."),
    as_json: bool = JsonOpt,
) -> None:
    """Re-run placement over a subtree with the chosen validator, in the writes' original order, and
    print what changes: decisions, and facts that would be superseded or revived. --apply commits it
    as new versions (the old placement stays visible with --known-at before the replay).

    Example: fabric replay --org acme --root 0b6f0d3e --validator llm --dry-run
    """
    with handle_errors():
        if dry_run and apply:
            raise ValidationError("--apply", "give --dry-run or --apply, not both")
    with connected(run_worker=False) as fab:
        root = full_id(fab, "memory", root, org=org, field="root_id")
        report = fab.replay(org, root, validator=validator, apply=apply)
    if as_json:
        print_json(report)
        return
    if report.changes:
        table = Table(title=f"placements that change (replay of {_short(root)} in {org}, {validator} validator)")
        for col in ("write", "content", "before", "after", "target before → after", "change", "reason"):
            table.add_column(col, no_wrap=col in ("write", "before", "after"))
        for ch in report.changes:
            table.add_row(_short(ch.write_id), _clip(ch.content, 50), ch.old_kind or "", ch.new_kind,
                          f"{_short(ch.old_target) or '-'} → {_short(ch.new_target) or '-'}", ch.change,
                          _clip(ch.reason, 50))
        console.print(table)
    else:
        console.print(f"no placement changes (replay of {root} in {org}, {validator} validator)")
    facts = [("superseded", f) for f in report.superseded] + [("revived", f) for f in report.revived] + \
            [("added", f) for f in report.added] + [("removed", f) for f in report.removed]
    if facts:
        ft = titled_table("facts whose belief changes", ("memory", "content", "becomes", "valid until"))
        for what, f in facts:
            ft.add_row(_short(f.memory_id), _clip(f.content, 60), what, fmt_time(f.after_valid_to))
        console.print(ft)
    verdict = (f"applied as replay {report.replay_id}" if report.applied
               else "dry run: nothing written (use --apply to commit)")
    console.print(f"{report.writes} write(s) in a family of {report.family} node(s): {report.changed} placement(s) "
                  f"change, {report.unchanged} unchanged, {report.new_nodes} new node(s), "
                  f"{report.validator_calls} validator call(s), {report.seconds:.2f}s — {verdict}")


# ---------------------------------------------------------------------------------------------- revert

@app.command()
def revert(
    decision_id: str = typer.Argument(..., help="The decision to revert (a placement or a replayed one)."),
    org: Optional[str] = typer.Option(None, "--org", "-o", help="Org of the decision (default: found by id)."),
    reason: str = typer.Option("reverted by admin", "--reason", help="Why (kept in the log)."),
    as_json: bool = JsonOpt,
) -> None:
    """Undo a placement as a new logged event: a wrong fork revives what it superseded, a wrong
    duplicate places the write. Exit code 3 when no such decision exists.

    Example: fabric revert 5c1d2e7a-0d3b-4a8e-9f00-2b7c6f1e9a11 --reason "false contradiction"
    """
    with connected(run_worker=False) as fab:
        decision_id = full_id(fab, "decision", decision_id, org=org, field="decision_id")
        event = fab.revert(decision_id, org=org, reason=reason)
    if as_json:
        print_json({"reverted": decision_id, "event": event})
    else:
        console.print(f"reverted decision {decision_id}: event {event}")


# ---------------------------------------------------------------------------------------------- decisions

@app.command()
def decisions(
    org: str = OrgOpt,
    since: Optional[str] = typer.Option(None, "--since", help="ISO time: only decisions made since then."),
    kind: Optional[str] = typer.Option(None, "--kind", help="duplicate | child_update | contradiction_fork | new_branch"),
    action: Optional[str] = typer.Option(None, "--action", help="place | revert | retract | replay | invalidate_source"),
    sample: Optional[int] = typer.Option(None, "--sample", help="A random sample of N for review instead of the newest."),
    limit: int = typer.Option(50, "--limit", min=1, max=100000, help="How many (newest first)."),
    as_json: bool = JsonOpt,
) -> None:
    """The decision log: newest first, or a random sample for review of model-driven invalidations
    (seed 001: log them, make them reversible, sample them).

    Example: fabric decisions --org acme --kind contradiction_fork --since 2026-11-01T00:00:00Z --sample 20
    """
    with connected(run_worker=False) as fab:
        with handle_errors():
            if kind is not None and kind not in DECISION_KINDS:
                raise ValidationError("--kind", f"{kind!r} is not one of {', '.join(DECISION_KINDS)}")
            if action is not None and action not in ACTIONS:
                raise ValidationError("--action", f"{action!r} is not one of {', '.join(ACTIONS)}")
            when = parse_time("since", since)
            fab.require_org(org)
            if sample is not None:
                rows = fab.sample_decisions(org=org, n=sample, since=when, kind=kind, action=action)
            else:
                rows = fab.decisions(org=org, since=when, kind=kind, action=action, limit=limit)
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"decisions of {org}" + (f" (random sample of {sample})" if sample else ""))
    table.add_column("id", no_wrap=True)
    table.add_column("at", no_wrap=True)
    table.add_column("decision", no_wrap=True)
    table.add_column("by", no_wrap=True)
    table.add_column("reason", ratio=1, overflow="fold")
    for d in rows:
        what = d.action + (f":{d.kind}" if d.kind else "") + (" [reverted]" if d.reverted_by else "")
        by = (d.validator or "") + (f" {d.confidence:.2f}" if d.confidence is not None else "")
        table.add_row(str(d.id), d.created_at.strftime("%Y-%m-%d %H:%M:%S"), what, by, d.reason or "")
    console.print(table)


# ---------------------------------------------------------------------------------------------- stats

@app.command()
def stats(
    org: Optional[str] = typer.Option(None, "--org", "-o", help="One org (default: every org)."),
    as_json: bool = JsonOpt,
) -> None:
    """Per org: memories live / superseded / retracted, writes by status, decisions by action:kind,
    writes refused by the policy, by kind, and conflicts: facts with two live values now (subjects and values
    compared as search's safety net does; relation names only by name, see README "Conflicts at read time").

    Example: fabric stats --org acme --json
    """
    with connected(run_worker=False) as fab:
        out = fab.stats(org)
    if as_json:
        print_json(out)
        return
    table = titled_table("fabric stats", ("org", "memories", "writes", "decisions", "refused", "conflicts"))

    def fmt(d: dict[str, int]) -> str:
        return "\n".join(f"{k} {v}" for k, v in sorted(d.items())) or "-"

    for o, s in sorted(out.items()):
        table.add_row(o, fmt(s["memories"]), fmt(s["writes"]), fmt(s["decisions"]), fmt(s["refusals"]), str(s["conflicts"]))
    console.print(table)


# ---------------------------------------------------------------------------------------------- invalidate-source

@app.command("invalidate-source")
def invalidate_source(
    source: str = typer.Argument(..., help="The system whose data changed (the memories' `source`)."),
    org: str = typer.Option(..., "--org", "-o", help="Tenant (org)."),
    at: Optional[str] = typer.Option(None, "--at", help="ISO time the change took effect (default: now)."),
    as_json: bool = JsonOpt,
) -> None:
    """A source system changed: end the valid time of every live memory it owns at --at (new versions,
    one logged decision). Searches from then on stop returning them; history keeps them.

    Example: fabric invalidate-source billing --org acme --at 2026-11-30T12:00:00Z
    """
    with connected(run_worker=False) as fab:
        with handle_errors():
            n = fab.invalidate_source(source, org=org, at=parse_time("at", at))
    if as_json:
        print_json({"source": source, "org": org, "at": at, "invalidated": n})
    else:
        console.print(f"ended the valid time of {n} memor{'y' if n == 1 else 'ies'} from {source!r} in {org}")


# ---------------------------------------------------------------------------------------------- bench replay

def subtree_texts(n: int, branching: int = 3) -> list[list[str]]:
    """n texts, level by level, that the rule validator places as one tree: every text extends its
    parent's words with a clause of its own (a child update of it), and siblings differ in two separate
    spans and in their numbers (so none is a correction or a paraphrase of another)."""
    verbs = ["reviewed", "deployed", "migrated", "audited", "rebuilt", "profiled", "documented", "tested"]
    nouns = ["parser", "scheduler", "cache", "index", "gateway", "ledger", "planner", "exporter", "indexer"]
    levels = [["Atlas project log for the platform team, kept by the release engineers of the Lyon office."]]
    count = 1
    while count < n:
        level = []
        for parent in levels[-1]:
            for _ in range(branching):
                if count >= n:
                    break
                k = count
                # number+verb and noun vary together for neighbours k, k+1: two separate differing spans.
                level.append(f"{parent} Step {k} {verbs[k % len(verbs)]} the {nouns[k % len(nouns)]}.")
                count += 1
        levels.append(level)
    return levels


@bench_app.command("replay")
def bench_replay(
    nodes: int = typer.Option(1000, "--nodes", min=2, max=20000, help="Writes in the subtree."),
    as_json: bool = JsonOpt,
) -> None:
    """Replay a subtree of --nodes writes with the rule validator: dry run, then apply. Baseline, measured
    in the same run: the original placement of the same writes by the worker.

    Example: fabric bench replay --nodes 1000
    """
    org = f"bench-replay-{uuid.uuid4().hex[:8]}"
    levels = subtree_texts(nodes)
    texts = [t for level in levels for t in level]
    with connected(run_worker=True) as fab:
        t0 = time.perf_counter()
        receipts = []
        for level in levels:  # a level at a time: a write_many batch has no order of its own
            receipts += fab.write_many([{"content": t, "org": org, "source": "bench"} for t in level])
            fab.drain(org, timeout=1800)
        placed_s = time.perf_counter() - t0
        root = fab.wait(receipts[0], org=org).memory_id
        subtree = len(fab.walk(root, org=org, include_superseded=True))
        dry = fab.replay(org, root)
        applied = fab.replay(org, root, apply=True)
    out = {"org": org, "writes": len(texts), "subtree_nodes": subtree,
           "baseline_original_placement_s": round(placed_s, 2),
           "replay_dry_run_s": round(dry.seconds, 2), "replay_apply_s": round(applied.seconds, 2),
           "replayed_writes": dry.writes, "changed": dry.changed, "validator_calls": dry.validator_calls}
    if as_json:
        print_json(out)
        return
    table = Table(title=f"replay of a {subtree}-node subtree ({len(texts)} writes), rule validator")
    table.add_column("what")
    table.add_column("seconds", justify="right")
    table.add_row("baseline: original placement by the worker (embed + place)", f"{placed_s:.2f}")
    table.add_row(f"replay, dry run ({dry.writes} writes, {dry.changed} changed)", f"{dry.seconds:.2f}")
    table.add_row(f"replay, applied ({applied.changed} changed)", f"{applied.seconds:.2f}")
    console.print(table)
