"""`fabric bench pipeline`: the write path's figures.

- embedding throughput of the configured embedder (texts/s, batched),
- `write()` latency (p50/p99): a durable INSERT plus an RQ enqueue, nothing else,
- placement of a mixed stream (duplicates, paraphrases, updates, contradictions, unrelated facts) by the
  configured validator: placements/s, the decisions it made against the stream's labels, and
  validator calls per write (the pre-gates decide exact repeats and "nothing near" without a call).
The baseline printed beside write(): a bare INSERT of the same row, measured in the same run."""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..api import Fabric
from ..sql import q
from ..types import utcnow

NAMES = ["Ada Moreau", "Bram Ilves", "Chen Wu", "Dara Okafor", "Emil Sand", "Farah Nadeem", "Goran Lind",
         "Hana Sato", "Ivo Petrov", "Jana Novak", "Kofi Mensah", "Lea Roux", "Mateo Silva", "Nora Berg",
         "Omar Haddad", "Pia Keller", "Quinn Doyle", "Rosa Marin", "Sami Laine", "Tove Holm"]
CITIES = ["Lisbon", "Tallinn", "Osaka", "Lagos", "Bergen", "Quito", "Leipzig", "Hobart", "Cusco", "Tartu"]
TEAMS = ["payments", "search", "billing", "infra", "mobile", "growth", "data", "security"]
HOBBIES = ["plays the cello", "climbs on weekends", "keeps bees", "restores old radios", "runs marathons",
           "paints watercolours", "brews cider", "sails dinghies"]


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


@dataclass
class Stream:
    items: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


def mixed_stream(n_subjects: int, rng: random.Random) -> Stream:
    """Base facts, then a shuffled mix of their duplicates, refinements, contradictions and unrelated facts."""
    st = Stream()
    later: list[tuple[dict[str, Any], str]] = []
    names = rng.sample(NAMES, min(n_subjects, len(NAMES)))
    for name in names:
        city, team = rng.choice(CITIES), rng.choice(TEAMS)
        base = f"{name} works on the {team} team in {city}."
        st.items.append({"content": base})
        st.labels.append("new_branch")
        other_city = rng.choice([c for c in CITIES if c != city])
        later += [
            ({"content": base}, "duplicate"),
            ({"content": f"{name} works on the {team} team in {city}, mostly on the ingestion service."},
             "child_update"),
            ({"content": f"{name} works on the {team} team in {other_city}."}, "contradiction_fork"),
            ({"content": f"{name} {rng.choice(HOBBIES)}."}, "new_branch"),
        ]
    # Bases first; then repeats, refinements and unrelated facts in a shuffled mix; contradictions last
    # (after a contradiction, repeating the old fact is itself a contradiction, not a duplicate).
    rng.shuffle(later)
    later.sort(key=lambda pair: pair[1] == "contradiction_fork")
    for item, label in later:
        st.items.append(item)
        st.labels.append(label)
    return st


def run(fab: Fabric, *, writes: int = 500, subjects: int = 20, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    out: dict[str, Any] = {"validator": "llm" if fab.settings.use_llm else "rule",
                           "embedder": fab.embedder.name}

    texts = [f"{rng.choice(NAMES)} moved to {rng.choice(CITIES)} to join the {rng.choice(TEAMS)} team."
             for _ in range(1024)]
    fab.embedder.embed(texts[:64])
    t0 = time.perf_counter()
    fab.embedder.embed(texts)
    out["embed_texts_per_s"] = len(texts) / (time.perf_counter() - t0)

    org = f"bench-write-{uuid.uuid4().hex[:8]}"
    lat = []
    for i in range(writes):
        t = time.perf_counter()
        fab.write(f"Bench note {i}: {rng.choice(NAMES)} visited {rng.choice(CITIES)}.", org=org)
        lat.append((time.perf_counter() - t) * 1000)
    base = []
    with fab.pool.connection() as conn:
        for i in range(writes):
            t = time.perf_counter()
            conn.execute(q("insert_write"), {
                "org": org, "id": uuid.uuid4(), "content": f"baseline {i}", "subject": None, "relation": None,
                "value": None, "valid_from": utcnow(), "valid_to": None, "source": None, "kind": None,
                "durability": None, "metadata": None, "job_id": None})
            conn.commit()
            base.append((time.perf_counter() - t) * 1000)
        conn.execute("DELETE FROM fabric.writes WHERE org = %s AND content LIKE 'baseline %%'", (org,))
        conn.commit()
    out["write_ms"] = {"p50": percentile(lat, 50), "p99": percentile(lat, 99), "n": writes}
    out["bare_insert_ms"] = {"p50": percentile(base, 50), "p99": percentile(base, 99)}
    fab.drain(org=org, timeout=600)

    stream = mixed_stream(subjects, rng)
    morg = f"bench-mixed-{uuid.uuid4().hex[:8]}"
    n_base = subjects
    t0 = time.perf_counter()
    receipts = fab.write_many([{**it, "org": morg} for it in stream.items[:n_base]])
    fab.drain(org=morg, timeout=600)
    receipts += fab.write_many([{**it, "org": morg} for it in stream.items[n_base:]])
    fab.drain(org=morg, timeout=600)
    elapsed = time.perf_counter() - t0
    placements = [fab.wait(r, timeout=60) for r in receipts]
    calls = sum(1 for p in placements if p.validator not in ("pregate", None))
    agree = sum(1 for p, lab in zip(placements, stream.labels) if p.decision == lab)
    by_kind: dict[str, dict[str, int]] = {}
    for p, lab in zip(placements, stream.labels):
        row = by_kind.setdefault(lab, {"n": 0, "right": 0})
        row["n"] += 1
        row["right"] += int(p.decision == lab)
    out["mixed"] = {"writes": len(placements), "validator_calls": calls,
                    "calls_per_write": calls / len(placements), "accuracy": agree / len(placements),
                    "by_label": by_kind, "placements_per_s_incl_embedding": len(placements) / elapsed}
    return out


def print_report(res: dict[str, Any], console) -> None:
    from rich.table import Table

    t = Table(title=f"fabric bench pipeline — validator: {res['validator']}, embedder: {res['embedder']}")
    t.add_column("measure")
    t.add_column("value", justify="right")
    t.add_column("baseline (same run)", justify="right")
    t.add_row("embedding throughput", f"{res['embed_texts_per_s']:.0f} texts/s", "")
    t.add_row("write() p50 / p99", f"{res['write_ms']['p50']:.2f} / {res['write_ms']['p99']:.2f} ms",
              f"bare INSERT {res['bare_insert_ms']['p50']:.2f} / {res['bare_insert_ms']['p99']:.2f} ms")
    m = res["mixed"]
    t.add_row("mixed stream: writes", str(m["writes"]), "")
    t.add_row("validator calls per write", f"{m['calls_per_write']:.2f}", "1.00 without pre-gates")
    t.add_row("decisions matching the stream's labels", f"{m['accuracy']:.0%}", "")
    for lab, row in sorted(m["by_label"].items()):
        t.add_row(f"  {lab}", f"{row['right']}/{row['n']}", "")
    t.add_row("placements/s (incl. embedding, 1 worker)", f"{m['placements_per_s_incl_embedding']:.0f}", "")
    console.print(t)
