"""`fabric bench pipeline`: the write path's figures.

- embedding throughput of the configured embedder (texts/s, batched),
- `write()` latency (p50/p99): a durable INSERT plus an RQ enqueue, nothing else,
- placement of a mixed stream (duplicates, paraphrases, updates, contradictions, unrelated facts) by the
  configured validator: placements/s, the decisions it made against the stream's labels, and
  validator calls per write (the pre-gates decide exact repeats and "nothing near" without a call).
The baseline printed beside write(): a bare INSERT of the same row, measured in the same run.

`placement_throughput` (with --placement-writes N): placements/s of real `fabric worker` processes with the
rule validator, 1 and 2 workers, embedding excluded (vectors computed beforehand and served by a loopback
embeddings endpoint) and included (the local model), on a stream interleaving 4 orgs, in a database of
its own. Each run is a baseline for the next (1 vs 2 workers; with vs without embedding)."""

from __future__ import annotations

import os
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..api import Fabric
from ..db import one
from ..sql import q
from ..types import utcnow
from .measure import percentile

NAMES = ["Ada Moreau", "Bram Ilves", "Chen Wu", "Dara Okafor", "Emil Sand", "Farah Nadeem", "Goran Lind",
         "Hana Sato", "Ivo Petrov", "Jana Novak", "Kofi Mensah", "Lea Roux", "Mateo Silva", "Nora Berg",
         "Omar Haddad", "Pia Keller", "Quinn Doyle", "Rosa Marin", "Sami Laine", "Tove Holm"]
CITIES = ["Lisbon", "Tallinn", "Osaka", "Lagos", "Bergen", "Quito", "Leipzig", "Hobart", "Cusco", "Tartu"]
TEAMS = ["payments", "search", "billing", "infra", "mobile", "growth", "data", "security"]
HOBBIES = ["plays the cello", "climbs on weekends", "keeps bees", "restores old radios", "runs marathons",
           "paints watercolours", "brews cider", "sails dinghies"]


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


def placement_throughput(server_url: str, redis_url: str, *, writes: int, seed: int = 7,
                         progress=lambda msg: None) -> dict[str, Any]:
    """Placements/s for 1 and 2 workers, without and with embedding (see the module docstring), with the
    CPU time each placement cost the workers, PostgreSQL and Redis: wall time on a shared machine says little,
    CPU per placement says what 2 idle cores could do."""
    import numpy as np

    from .scale import BenchDatabase, ingest_items

    items = ingest_items(np.random.default_rng(seed), writes, n_orgs=4)
    warm = ingest_items(np.random.default_rng(seed + 1), 128, n_orgs=8)  # 8 jobs: every worker gets some
    server = _precomputed(items + warm)
    db = BenchDatabase(server_url, "pipeline")
    db.create()
    out: dict[str, Any] = {"writes": writes, "orgs": len(items), "runs": []}
    try:
        for embedding, url in (("excluded", server.base_url), ("local model", None)):
            for workers in (1, 2):
                progress(f"placing {writes} writes: {workers} worker(s), embedding {embedding}")
                run = _timed_placement(db, redis_url, items, workers, url, warm)
                run["embedding"] = embedding
                out["runs"].append(run)
                progress(f"  {run['placements_per_s']:.0f} placements/s, {run['cpu_ms_per_placement']:.1f} ms CPU "
                         f"each ({run['worker_cpu_ms_per_placement']:.1f} workers, "
                         f"{run['postgres_cpu_ms_per_placement']:.1f} PostgreSQL, "
                         f"{run['redis_cpu_ms_per_placement']:.2f} Redis; load average {run['load_average']:.1f})")
    finally:
        server.close()
        db.drop()
    return out


def _cpu_seconds(pid: int, *, children: bool = False) -> float:
    """CPU time of a process (and of its reaped children) from /proc, in seconds."""
    import os

    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def _postgres_cpu(conn) -> float:
    """CPU time the whole PostgreSQL server has used: the postmaster, its reaped children, the live ones."""
    from pathlib import Path

    pgdata = conn.execute("SHOW data_directory").fetchone()["data_directory"]
    postmaster = int(Path(pgdata, "postmaster.pid").read_text().split()[0])
    try:
        kids = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    except OSError:
        kids = []
    return _cpu_seconds(postmaster, children=True) + sum(_cpu_seconds(int(k)) for k in kids)


def _timed_placement(db, redis_url: str, items: list[list[dict[str, Any]]], workers: int,
                     embed_url: str | None, warm: Sequence[Sequence[dict[str, Any]]] = ()) -> dict[str, Any]:
    """One timed run; `warm` is placed first, untimed, so each worker has loaded what it loads lazily (the
    rule validator's phrase model: ~1 s of CPU, which would count ~1 ms per placement of a 1,000-write run)."""
    import os

    from .scale import placement_run, wait_settled, write_statuses

    queue_name = f"bench-place-{uuid.uuid4().hex[:8]}"
    with placement_run(db, redis_url, items, workers, queue_name, f"place-{queue_name}", embed_url) as (
            fab, procs, orgs, batch):
        redis_pid = fab.queue.connection.info("server")["process_id"]
        with db.connect(autocommit=True) as conn:
            warm_orgs = [f"warm-{queue_name}-{i}" for i in range(len(warm))]
            fab.write_many([{**it, "org": org} for org, its in zip(warm_orgs, warm) for it in its])
            wait_settled(conn, warm_orgs, procs)
            pg0, workers0, redis0 = (_postgres_cpu(conn), sum(_cpu_seconds(p.pid) for p in procs),
                                     _cpu_seconds(redis_pid))
            t0 = time.perf_counter()
            fab.write_many(batch)
            wait_settled(conn, orgs, procs)
            seconds = time.perf_counter() - t0
            pg_cpu, worker_cpu = _postgres_cpu(conn) - pg0, sum(_cpu_seconds(p.pid) for p in procs) - workers0
            redis_cpu = _cpu_seconds(redis_pid) - redis0  # 0 when Redis runs elsewhere (no /proc entry)
            status = write_statuses(conn, orgs)
    settled = status.get("placed", 0) + status.get("duplicate", 0)

    def per(cpu: float) -> float:
        return round(1000 * cpu / max(settled, 1), 2)

    return {"workers": workers, "writes": len(batch), "settled": settled, "parked": status.get("parked", 0),
            "seconds": round(seconds, 2), "placements_per_s": round(settled / seconds, 1),
            "cpu_ms_per_placement": per(pg_cpu + worker_cpu + redis_cpu),
            "worker_cpu_ms_per_placement": per(worker_cpu), "postgres_cpu_ms_per_placement": per(pg_cpu),
            "redis_cpu_ms_per_placement": per(redis_cpu), "load_average": os.getloadavg()[0]}


def print_placement(res: dict[str, Any], console) -> None:
    from rich.table import Table

    t = Table(title=f"placement throughput — {res['writes']} writes over {res['orgs']} orgs, rule validator")
    for col in ("embedding", "workers", "placements/s", "CPU ms / placement", "workers", "PostgreSQL", "Redis",
                "2 idle cores could do", "load average"):
        t.add_column(col, justify="right")
    for r in res["runs"]:
        t.add_row(r["embedding"], str(r["workers"]), f"{r['placements_per_s']:.0f}", f"{r['cpu_ms_per_placement']:.1f}",
                  f"{r['worker_cpu_ms_per_placement']:.1f}", f"{r['postgres_cpu_ms_per_placement']:.1f}",
                  f"{r['redis_cpu_ms_per_placement']:.2f}", f"{2000 / max(r['cpu_ms_per_placement'], 0.01):.0f}/s",
                  f"{r['load_average']:.1f}")
    console.print(t)


# --------------------------------------------------------------------------------------------------
# the worker-kill campaign and the one-org burst (each in a database of its own)

# The reconciler as an operator would run it under faults: every 2 s, for writes pending over 1 s.
RECONCILE_ENV = {"FABRIC_RECONCILE_INTERVAL": "2", "FABRIC_RECONCILE_GRACE": "1"}


def _precomputed(items: list[list[dict[str, Any]]]):
    """A loopback embeddings endpoint serving the local model's vectors for every text of `items`."""
    from ..embed import LocalEmbedder
    from .scale import PrecomputedEmbeddings

    texts = sorted({it["content"] for org in items for it in org})
    return PrecomputedEmbeddings(dict(zip(texts, LocalEmbedder(batch_size=64).embed(texts))))


def _busy(conn, worker_name: str) -> bool:
    """The worker is running a job now, by its Redis registration (RQ sets `state` busy for the job's run)."""
    state = conn.hget(f"rq:worker:{worker_name}", "state")
    return (state.decode() if isinstance(state, bytes) else state) == "busy"


def _stuck_jobs(conn, rd, orgs: list[str]) -> list[dict[str, Any]]:
    """For writes still pending: their RQ job's status and whether the reconciler would queue it again."""
    from rq.job import Job

    from .. import queue as fq

    ids = [r["job_id"] for r in conn.execute("SELECT DISTINCT job_id FROM fabric.writes WHERE org = ANY(%(o)s) "
                                             "AND status = 'pending'", {"o": orgs}).fetchall()]
    lost = fq.jobs_needing_enqueue(rd, ids)
    jobs = Job.fetch_many([i for i in ids if i], connection=rd) if ids else []
    return [{"job_id": i, "status": j.get_status(refresh=False).value if j else None, "requeue": i in lost,
             "queued": j is not None and rd.lpos(j.origin and f"rq:queue:{j.origin}", i) is not None,
             "intermediate": j is not None and rd.lpos(f"rq:queue:{j.origin}:intermediate", i) is not None}
            for i, j in zip(ids, jobs)]


def integrity(conn, orgs: list[str], expected: int) -> dict[str, Any]:
    """What a run left: writes lost (missing or still pending), placed twice (a write with two memories or
    two placement decisions), keys holding two live values, parked writes, and how long writes waited."""
    row = conn.execute("""
        SELECT count(*) AS writes,
               count(*) FILTER (WHERE status = 'pending') AS pending,
               count(*) FILTER (WHERE status = 'parked') AS parked,
               coalesce(max(extract(epoch FROM settled_at - received_at)), 0) AS max_wait_s,
               coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM settled_at - received_at)),
                        0) AS p99_wait_s,
               coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM settled_at - received_at)),
                        0) AS p50_wait_s
        FROM fabric.writes WHERE org = ANY(%(o)s)""", {"o": orgs}).fetchone()
    doubled = conn.execute("""
        SELECT (SELECT count(*) FROM (SELECT 1 FROM fabric.memories WHERE org = ANY(%(o)s)
                                      GROUP BY org, write_id HAVING count(*) > 1) m)
             + (SELECT count(*) FROM (SELECT 1 FROM fabric.decisions WHERE org = ANY(%(o)s) AND action = 'place'
                                      GROUP BY org, write_id HAVING count(*) > 1) d) AS n""",
                           {"o": orgs}).fetchone()["n"]
    # Keys holding two or more different live values now (what `fabric stats` counts as conflicts).
    two_live = sum(r["n"] for r in conn.execute(q("stats_conflicts"), {"org": None}).fetchall()
                   if r["org"] in orgs)
    return {"writes": expected, "lost": expected - row["writes"] + row["pending"], "pending": row["pending"],
            "parked": row["parked"], "placed_twice": doubled, "keys_with_two_live_values": two_live,
            "max_wait_s": round(float(row["max_wait_s"]), 1), "p99_wait_s": round(float(row["p99_wait_s"]), 1),
            "p50_wait_s": round(float(row["p50_wait_s"]), 1)}


def kill_campaign(server_url: str, redis_url: str, *, writes: int = 1000, kills: int = 100, workers: int = 2,
                  seed: int = 7, settle_s: float = 300, progress=lambda msg: None) -> dict[str, Any]:
    """`kills` × `kill -9` of a busy `fabric worker` while `writes` writes (4 orgs, keyed and text) arrive in
    as many rounds; each killed worker is replaced at once. Then: was anything lost, placed twice, left
    with two live versions of a key, or pending longer than the reconciler's bound?"""
    import signal

    import numpy as np

    from .scale import BenchDatabase, _spawn_workers, ingest_items, placement_run

    items = ingest_items(np.random.default_rng(seed), writes, n_orgs=4)
    server = _precomputed(items)
    db = BenchDatabase(server_url, "kills")
    db.create()
    queue_name = f"bench-kills-{uuid.uuid4().hex[:8]}"
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"workers": workers, "kills_asked": kills, "reconciler": RECONCILE_ENV}
    try:
        with placement_run(db, redis_url, items, workers, queue_name, f"kills-{queue_name}", server.base_url,
                           extra_env=RECONCILE_ENV) as (fab, procs, orgs, batch):
            rd = fab.queue.connection
            names = [f"{queue_name}-{i}" for i in range(workers)]  # as placement_run names them
            per_round = -(-len(batch) // kills)
            busy_kills = spawned = 0
            t0 = time.perf_counter()
            with db.connect(autocommit=True) as watch:
                def settled() -> int:
                    return one(watch.execute("SELECT count(*) AS n FROM fabric.writes WHERE org = ANY(%(o)s) AND "
                                             "status <> 'pending'", {"o": orgs}))["n"]

                for k, start in enumerate(range(0, len(batch), per_round)):
                    before = settled()
                    fab.write_many(batch[start:start + per_round])
                    # The victim: the first worker seen running a job of this round's writes (within 15 s: a
                    # replacement started under load takes that long to take a job), killed 0-300 ms into it so
                    # some of its chunks may have committed; else a random one. Looked for at once: placement
                    # can settle a whole round in less time than a wait for its first write would take.
                    deadline, victim = time.monotonic() + 15, None
                    while victim is None and time.monotonic() < deadline:
                        victim = next((int(i) for i in rng.permutation(len(procs))
                                       if procs[i].poll() is None and _busy(rd, names[i])), None)
                        time.sleep(0.002 if victim is None else float(rng.uniform(0, 0.3)))
                    busy_kills += victim is not None and _busy(rd, names[victim])
                    victim = victim if victim is not None else int(rng.integers(len(procs)))
                    procs[victim].send_signal(signal.SIGKILL)
                    procs[victim].wait(10)
                    spawned += 1  # replaced at once, under a new name (the dead one stays registered a while)
                    procs[victim] = _spawn_workers(1, db.url, redis_url, queue_name, server.base_url,
                                                   extra_env=RECONCILE_ENV, first=workers + spawned)[0]
                    names[victim] = f"{queue_name}-{workers + spawned}"
                    # Let placement progress between kills (a worker needs seconds to start): wait up to 10 s for
                    # one more write of the round to settle.
                    deadline = time.monotonic() + 10
                    while settled() == before and time.monotonic() < deadline:
                        time.sleep(0.05)
                    if (k + 1) % 10 == 0:
                        progress(f"  {k + 1} kills, {start + per_round} writes sent, {settled()} settled")
                last_kill = time.perf_counter()
                out["pending_at_last_kill"] = len(batch) - settled()
            with db.connect(autocommit=True) as conn:
                while one(conn.execute("SELECT count(*) AS n FROM fabric.writes WHERE org = ANY(%(o)s) AND "
                                       "status = 'pending'", {"o": orgs}))["n"]:
                    if time.perf_counter() - last_kill > settle_s:
                        break
                    time.sleep(0.1)
                all_settled_at = time.perf_counter()
                out.update(integrity(conn, orgs, len(batch)))
                out["stuck_jobs"] = _stuck_jobs(conn, rd, orgs)
        out.update(kills=spawned, kills_of_busy_workers=busy_kills, campaign_s=round(last_kill - t0, 1),
                   settled_after_last_kill_s=round(all_settled_at - last_kill, 1), load_average=os.getloadavg()[0])
    finally:
        server.close()
        db.drop()
    return out


def _rss_mb(pid: int) -> float:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def burst(server_url: str, redis_url: str, *, writes: int = 20_000, workers: int = 2, chunk: int = 1000,
          seed: int = 7, max_seconds: float = 0, progress=lambda msg: None) -> dict[str, Any]:
    """`writes` writes into ONE org, sent as fast as write_many takes them (`chunk` per call), placed by
    `workers` real workers (embedding excluded): progress every 5 s, and the peak RSS of each worker and
    Redis' peak `used_memory` sampled every second, beside their values before the burst.
    `max_seconds` (0: none) stops waiting then and checks what was placed so far: writes still pending
    are counted as `pending`, not as lost, and the rate is of the writes settled."""
    import numpy as np

    from .scale import BenchDatabase, ingest_items, placement_run

    items = ingest_items(np.random.default_rng(seed), writes, n_orgs=1)
    server = _precomputed(items)
    db = BenchDatabase(server_url, "burst")
    db.create()
    queue_name = f"bench-burst-{uuid.uuid4().hex[:8]}"
    samples: list[dict[str, float]] = []
    stopped = False
    try:
        with placement_run(db, redis_url, items, workers, queue_name, f"burst-{queue_name}", server.base_url) as (
                fab, procs, orgs, batch), db.connect(autocommit=True) as conn:
            rd = fab.queue.connection

            def sample(sent: int) -> dict[str, float]:
                s = {"t": time.perf_counter() - t0, "sent": sent,
                     "pending": one(conn.execute("SELECT count(*) AS n FROM fabric.writes WHERE org = %(o)s AND "
                                                 "status = 'pending'", {"o": orgs[0]}))["n"],
                     "redis_mb": rd.info("memory")["used_memory"] / 2**20,
                     **{f"worker{i}_mb": _rss_mb(p.pid) for i, p in enumerate(procs)}}
                samples.append(s)
                return s

            t0 = time.perf_counter()
            before = sample(0)
            last_sample = last_report = 0.0
            sent = 0
            while True:
                if sent < len(batch):
                    fab.write_many(batch[sent:sent + chunk])
                    sent = min(sent + chunk, len(batch))
                else:
                    time.sleep(0.2)
                now = time.perf_counter() - t0
                if now - last_sample >= 1 or sent == len(batch):
                    s = sample(sent)
                    last_sample = now
                    settled = sent - s["pending"]
                    if now - last_report >= 5:
                        last_report = now
                        progress(f"  {now:5.0f} s: {sent:,} sent, {settled:,} settled ({settled / now:.0f}/s), "
                                 f"workers {'/'.join(f'{s[k]:.0f}' for k in s if k.startswith('worker'))} MB, "
                                 f"Redis {s['redis_mb']:.1f} MB")
                    if sent == len(batch) and s["pending"] == 0:
                        break
                    if max_seconds and now >= max_seconds:
                        stopped = True
                        break
                if any(p.poll() is not None for p in procs):
                    raise RuntimeError("a worker died during the burst")
            seconds = time.perf_counter() - t0
            out = integrity(conn, orgs, sent)
            settled_n = sent - out["pending"]
            if stopped:  # still pending is not lost: only missing writes are
                out["lost"] -= out["pending"]
    finally:
        server.close()
        db.drop()
    keys = [k for k in samples[0] if k.startswith("worker") or k == "redis_mb"]
    out.update(workers=workers, seconds=round(seconds, 1), placements_per_s=round(settled_n / seconds, 1),
               stopped_at_time_limit=stopped, sent=sent, settled=settled_n,
               max_backlog=max(s["pending"] for s in samples), load_average=os.getloadavg()[0],
               memory_mb={k: {"before": round(before[k], 1), "peak": round(max(s[k] for s in samples), 1),
                              "end": round(samples[-1][k], 1)} for k in keys},
               samples=[{k: round(v, 1) for k, v in s.items()} for s in samples[::max(1, len(samples) // 60)]])
    return out


def print_integrity(title: str, res: dict[str, Any], rows: list[tuple[str, str]], console) -> None:
    from rich.table import Table

    t = Table(title=title)
    t.add_column("measure")
    t.add_column("value", justify="right")
    for name, value in rows + [
            ("writes lost (missing or still pending)", str(res["lost"])),
            ("writes placed twice", str(res["placed_twice"])),
            ("keys holding two live values", str(res["keys_with_two_live_values"])),
            ("writes parked", str(res["parked"])),
            ("wait, write to settled: p50 / p99 / longest",
             f"{res['p50_wait_s']:.1f} / {res['p99_wait_s']:.1f} / {res['max_wait_s']:.1f} s"),
            ("load average", f"{res['load_average']:.1f}")]:
        t.add_row(name, value)
    console.print(t)


def print_kills(res: dict[str, Any], console) -> None:
    print_integrity(f"worker-kill campaign — {res['writes']} writes, {res['workers']} workers, reconciler every "
                    f"{res['reconciler']['FABRIC_RECONCILE_INTERVAL']} s", res, [
                        ("kill -9 (of a worker running a job)", f"{res['kills']} ({res['kills_of_busy_workers']})"),
                        ("campaign", f"{res['campaign_s']:.0f} s"),
                        ("pending at the last kill", str(res["pending_at_last_kill"])),
                        ("all settled after the last kill", f"{res['settled_after_last_kill_s']:.1f} s")], console)


def print_burst(res: dict[str, Any], console) -> None:
    mem = res["memory_mb"]
    print_integrity(f"one-org burst — {res['writes']} writes, {res['workers']} workers, embedding excluded", res, [
        ("placements/s", f"{res['placements_per_s']:.0f} ({res['seconds']:.0f} s)"),
        *([("stopped at the time limit: sent / settled / pending",
            f"{res['sent']:,} / {res['settled']:,} / {res['pending']:,}")] if res["stopped_at_time_limit"] else []),
        ("largest backlog (pending writes)", f"{res['max_backlog']:,}"),
        *((f"{k.replace('_mb', '')} RSS MB: before / peak / end" if k.startswith("worker")
           else "Redis used_memory MB: before / peak / end",
           f"{v['before']:.0f} / {v['peak']:.0f} / {v['end']:.0f}") for k, v in mem.items())], console)
