"""`fabric bench stream`: a hand-written conversational stream of distinct facts, text only.

`tests/data/stream_v5.jsonl` holds one turn a line, `{"id", "text"}`: a chat about a small cast of
people and companies, so turns share names and topics heavily ("Noemi lives in York", "Noemi's
sister lives in Leeds", "Noemi has a dog", "Noemi also has a cat"), yet no turn restates or updates
another. Written by hand, before and apart from the placement code; nobody tunes on it.

Every turn goes into one org as plain text, a day apart, and is placed before it is counted. The
figure is the share of turns the store collapsed: refused as a duplicate of another turn, or
superseded by a later one (target at most 1%). Turns the worker parked are counted apart. The
measuring is the temporal benchmark's (`fabric.bench.temporal.measure_stream`), so the generated
stream of `fabric bench temporal` and this one are scored alike."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import ValidationError
from ..types import utcnow
from .labelled import records
from .temporal import WAIT_TIMEOUT, measure_stream

DEFAULT_STREAM = Path(__file__).resolve().parents[2] / "tests" / "data" / "stream_v5.jsonl"


@dataclass(frozen=True)
class Turn:
    id: str
    text: str


def load_stream(path: str | Path | None = None) -> list[Turn]:
    """The turns of a stream file; ids and texts must be unique (every turn is a distinct fact)."""
    p = Path(path) if path else DEFAULT_STREAM
    turns: list[Turn] = []
    for where, rec in records(p, "stream", "conversational stream"):
        if not isinstance(rec, dict):
            raise ValidationError(where, "not a JSON object")
        for key in ("id", "text"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise ValidationError(f"{where}.{key}", "a non-empty string is required")
        turns.append(Turn(rec["id"], rec["text"]))
    if not turns:
        raise ValidationError("stream", f"{p} holds no turns")
    for name, values in (("id", [t.id for t in turns]), ("text", [t.text for t in turns])):
        seen: set[str] = set()
        for n, v in enumerate(values):
            if v in seen:
                raise ValidationError(f"stream.{name}", f"{v!r} appears twice (turn {turns[n].id})")
            seen.add(v)
    return turns


def run(fab: Any, turns: Sequence[Turn], *, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write the turns into a fresh org and count what collapsed. Needs a placement worker."""
    if not turns:
        raise ValidationError("stream", "no turns to run")
    run_id = f"{utcnow():%y%m%d%H%M%S}{secrets.token_hex(2)}"
    say = progress or (lambda _msg: None)
    say(f"run {run_id}: {len(turns)} turns into one org")
    # The worker loads its model before the first timed write.
    fab.wait(fab.write("Warm-up note for the benchmark.", org=f"bench-{run_id}-warmup"), timeout=WAIT_TIMEOUT)
    out = measure_stream(fab, [t.text for t in turns], org=f"bench-{run_id}-stream", run_id=run_id,
                         source="bench-stream")
    id_of = {t.text: t.id for t in turns}
    for c in out["collapsed_turns"]:
        c["id"], c["other_id"] = turns[c.pop("index")].id, id_of.get(c["other"] or "")
    for p in out["parked_turns"]:
        p["id"] = turns[p.pop("index")].id
    say(f"{out['collapsed']}/{out['turns']} turns collapsed, {out['parked']} parked ({out['seconds']:.1f}s)")
    return {"benchmark": "stream", "run_id": run_id, **out}


def markdown(result: dict[str, Any], command: str | None = None) -> str:
    lines = [f"# Conversational stream: {result['turns']} distinct facts", ""]
    if command:
        lines += [f"`{command}`", ""]
    lines += ["| turns | collapsed as duplicate | superseded | parked | collapsed share |",
              "|---:|---:|---:|---:|---:|",
              f"| {result['turns']} | {result['duplicates']} | {result['superseded']} | {result['parked']} "
              f"| {result['collapsed_share']:.1%} |", "",
              "decisions: " + ", ".join(f"{k} {v}" for k, v in result["decisions"].items()), ""]
    if result["collapsed_turns"]:
        lines.append("Collapsed turns:")
        lines += [f"- {c['id']} {c['how']} {c['other_id'] or '?'}: {c['turn']!r} / {c['other']!r}"
                  for c in result["collapsed_turns"]]
    if result["parked_turns"]:
        lines.append("Parked turns:")
        lines += [f"- {p['id']}: {p['error']}" for p in result["parked_turns"]]
    return "\n".join(lines) + "\n"
