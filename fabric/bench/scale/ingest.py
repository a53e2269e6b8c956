"""Ingest: write() acceptance and placements/s with real worker processes."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator, Sequence

import numpy as np

from ...db import Conn, one
from ...errors import ConfigurationError, DatabaseError
from .config import DIM, Progress, ScaleConfig, _defaults
from .corpus import NOUNS, RELATIONS, VALUE_WORDS, WORDS, Corpus
from .load import BenchDatabase
from .timing import _percentiles

# --------------------------------------------------------------------------------------------------
# ingest: write() acceptance and placements/s with real worker processes


class PrecomputedEmbeddings:
    """A loopback OpenAI-compatible /v1/embeddings endpoint serving vectors computed beforehand
    with the local MiniLM model, so workers place writes without paying for embedding. Unknown
    texts get HTTP 400 (the benchmark embeds every text it will write)."""

    MODEL = "minilm-precomputed"

    def __init__(self, table: dict[str, np.ndarray]):
        self.table = table
        self.requests = 0
        self.texts = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                inputs = body.get("input")
                inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
                missing = [t for t in inputs if t not in outer.table]
                if missing:
                    self._send(400, {"error": {"message": f"text not precomputed: {missing[0][:60]!r}",
                                               "type": "invalid_request_error"}})
                    return
                b64 = body.get("encoding_format") == "base64"
                data = []
                for i, t in enumerate(inputs):
                    v = outer.table[t].astype("<f4")
                    data.append({"object": "embedding", "index": i,
                                 "embedding": base64.b64encode(v.tobytes()).decode() if b64 else v.tolist()})
                outer.requests += 1
                outer.texts += len(inputs)
                self._send(200, {"object": "list", "data": data, "model": outer.MODEL,
                                 "usage": {"prompt_tokens": 0, "total_tokens": 0}})

            def _send(self, status: int, payload: dict) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="scale-embeddings", daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def ingest_items(rng: np.random.Generator, n: int, n_orgs: int) -> list[list[dict[str, Any]]]:
    """Realistic writes per org: new keyed facts, value changes, repeats, added detail, free notes."""
    orgs: list[list[dict[str, Any]]] = [[] for _ in range(n_orgs)]
    keyed_of: list[list[dict[str, Any]]] = [[] for _ in range(n_orgs)]  # kept as items grow: O(n), not O(n²)
    for i in range(n):
        items, keyed = orgs[i % n_orgs], keyed_of[i % n_orgs]
        r = rng.random()
        if r < 0.35 or not keyed:
            subj = f"{NOUNS[rng.integers(len(NOUNS))]} {i}"
            rel = RELATIONS[rng.integers(len(RELATIONS))]
            val = VALUE_WORDS[rng.integers(len(VALUE_WORDS))]
            items.append({"content": f"The {rel} of {subj} is {val}.", "subject": subj, "relation": rel,
                          "value": val})
        elif r < 0.55:
            old = keyed[rng.integers(len(keyed))]
            val = VALUE_WORDS[rng.integers(len(VALUE_WORDS))] + f" {i}"
            items.append({"content": f"The {old['relation']} of {old['subject']} is {val}.",
                          "subject": old["subject"], "relation": old["relation"], "value": val})
        elif r < 0.65:
            items.append(dict(items[rng.integers(len(items))]))
        elif r < 0.75:
            old = keyed[rng.integers(len(keyed))]
            items.append({**old, "content": old["content"] + f" Confirmed by {VALUE_WORDS[i % 10]} in week {i % 52}."})
        else:
            words = " ".join(WORDS[w] for w in rng.integers(0, len(WORDS), size=int(rng.integers(6, 16))))
            items.append({"content": f"Note {i}: the {words}."})
        if items[-1].get("subject"):
            keyed.append(items[-1])
    return orgs


def _spawn_workers(count: int, url: str, redis_url: str, queue: str, embed_url: str | None, *,
                   extra_env: dict[str, str] | None = None, first: int = 0) -> list[subprocess.Popen]:
    """`count` worker processes named {queue}-{first}, {queue}-{first + 1}, ..."""
    from ...db import ROOT

    env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": redis_url, "FABRIC_QUEUE_NAME": queue,
           "FABRIC_VALIDATOR": "rule", "FABRIC_RECONCILE_INTERVAL": "600", "FABRIC_RECONCILE_GRACE": "600",
           "FABRIC_LOG_LEVEL": "WARNING", **(extra_env or {})}
    if embed_url:
        env.update(FABRIC_EMBEDDER="openai", FABRIC_EMBEDDING_MODEL=PrecomputedEmbeddings.MODEL,
                   FABRIC_EMBEDDING_DIM=str(DIM), OPENAI_BASE_URL=embed_url, OPENAI_API_KEY="bench")
    else:
        env["FABRIC_EMBEDDER"] = "local"
    return [subprocess.Popen([sys.executable, "-m", "workers.run", "--name", f"{queue}-{i}"], env=env,
                             cwd=str(ROOT), stdin=subprocess.DEVNULL) for i in range(first, first + count)]


def _stop(procs: Sequence[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def _wait_listening(queue: Any, procs: Sequence[subprocess.Popen], timeout: float = 90.0) -> None:
    from ... import queue as fq

    deadline = time.monotonic() + timeout
    while len(fq.listening_workers(queue)) < len(procs):
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise ConfigurationError(f"a `fabric worker` process exited with code {dead[0].returncode}")
        if time.monotonic() > deadline:
            raise ConfigurationError(f"{len(procs)} worker(s) did not start listening within {timeout:.0f}s")
        time.sleep(0.1)


@contextmanager
def placement_run(db: BenchDatabase, redis_url: str, items: list[list[dict[str, Any]]], workers: int,
                  queue_name: str, org_prefix: str, embed_url: str | None, *, extra_env: dict[str, str] | None = None
                  ) -> Iterator[tuple[Any, list[subprocess.Popen], list[str], list[dict[str, Any]]]]:
    """`workers` real worker processes listening on a fresh queue and a Fabric writing to it; yields
    (fabric, worker processes, orgs, batch), the batch holding the orgs' items interleaved the way a
    shared ingest queue sees them. Everything is stopped and the queue deleted afterwards."""
    from ...api import Fabric

    orgs = [f"{org_prefix}-{i}" for i in range(len(items))]
    procs = _spawn_workers(workers, db.url, redis_url, queue_name, embed_url, extra_env=extra_env)
    fab = Fabric.connect(db.url, redis_url, run_worker=False, auto_migrate=False, queue_name=queue_name,
                         pool_min_size=1, pool_max_size=2)
    try:
        _wait_listening(fab.queue, procs)
        batch = [{**its[j], "org": orgs[o]} for j in range(max(map(len, items)))
                 for o, its in enumerate(items) if j < len(its)]
        yield fab, procs, orgs, batch
    finally:
        fab.queue.delete(delete_jobs=True)
        fab.close()
        _stop(procs)


def wait_settled(conn: Conn, orgs: list[str], procs: list[subprocess.Popen], *,
                 limit_s: float = 900) -> None:
    """Until no write of these orgs is pending (a dead worker or a stall is an error)."""
    started = time.perf_counter()
    while n := one(conn.execute("SELECT count(*) AS n FROM fabric.writes WHERE org = ANY(%(o)s) "
                                "AND status = 'pending'", {"o": orgs}))["n"]:
        if time.perf_counter() - started > limit_s:
            raise DatabaseError(f"placement stalled: {n} writes still pending after {limit_s:.0f} s")
        if any(p.poll() is not None for p in procs):
            raise ConfigurationError("a `fabric worker` process died during the placement run")
        time.sleep(0.02)


def write_statuses(conn: Conn, orgs: list[str]) -> dict[str, int]:
    return {r["status"]: r["n"] for r in conn.execute(
        "SELECT status, count(*) AS n FROM fabric.writes WHERE org = ANY(%(o)s) GROUP BY status",
        {"o": orgs}).fetchall()}


def _place_run(db: BenchDatabase, redis_url: str, items: list[list[dict[str, Any]]], workers: int,
               tag: str, embed_url: str | None) -> dict[str, Any]:
    queue_name = f"scale-{tag}-{uuid.uuid4().hex[:8]}"
    with placement_run(db, redis_url, items, workers, queue_name, f"ingest-{tag}", embed_url) as (
            fab, procs, orgs, batch):
        t_accept = time.perf_counter()
        fab.write_many(batch)
        t0 = time.perf_counter()
        with db.connect(autocommit=True) as conn:
            wait_settled(conn, orgs, procs)
            t1 = time.perf_counter()
            status = write_statuses(conn, orgs)
            decisions = {f"{r['validator']}:{r['kind']}": r["n"] for r in conn.execute(
                "SELECT validator, kind, count(*) AS n FROM fabric.decisions WHERE org = ANY(%(o)s) "
                "GROUP BY 1, 2 ORDER BY 1, 2", {"o": orgs}).fetchall()}
    settled = sum(status.get(s, 0) for s in ("placed", "duplicate"))
    return {"workers": workers, "writes": len(batch), "settled": settled, "parked": status.get("parked", 0),
            "seconds": round(t1 - t0, 3), "placements_per_s": round(settled / (t1 - t0), 1),
            "write_many_accept_s": round(t0 - t_accept, 3), "decisions": decisions}


def measure_ingest(db: BenchDatabase, c: Corpus, cfg: ScaleConfig, redis_url: str, progress: Progress
                   ) -> dict[str, Any]:
    from ...api import Fabric
    from ...embed import LocalEmbedder

    _, _, n_place, n_accept = _defaults(cfg, c.n)
    rng = np.random.default_rng([cfg.seed, c.n, 7])
    items = ingest_items(rng, n_place, n_orgs=4)
    texts = sorted({it["content"] for org in items for it in org})
    embedder = LocalEmbedder(batch_size=64)
    embedder.embed(texts[:8])  # load and warm the session
    t = time.perf_counter()
    vecs = embedder.embed(texts)
    embed_s = time.perf_counter() - t
    out: dict[str, Any] = {"embedder": {"model": embedder.name, "texts": len(texts), "batch": 64,
                                        "texts_per_s": round(len(texts) / embed_s, 1)}}
    server = PrecomputedEmbeddings(dict(zip(texts, vecs)))
    try:
        for w in (1, 2):
            progress(f"  placing {n_place} writes with {w} worker(s), rule validator, embedding excluded")
            r = _place_run(db, redis_url, items, w, f"w{w}", server.base_url)
            out[f"place_{w}_workers"] = r
            progress(f"    {r['placements_per_s']:.0f} placements/s ({r['settled']} settled in {r['seconds']} s)")
        out["precomputed_embedding_requests"] = server.requests
    finally:
        server.close()
    progress(f"  placing {n_place} writes with 2 workers embedding with the local model (reference)")
    r = _place_run(db, redis_url, items, 2, "w2local", None)
    out["place_2_workers_with_embedding"] = r
    progress(f"    {r['placements_per_s']:.0f} placements/s including embedding")

    progress(f"  write() acceptance ({n_accept} single writes, then one write_many)")
    queue_name = f"scale-accept-{uuid.uuid4().hex[:8]}"
    fab = Fabric.connect(db.url, redis_url, run_worker=False, auto_migrate=False, queue_name=queue_name,
                         pool_min_size=1, pool_max_size=2)
    try:
        flat = [it for org in items for it in org][:n_accept]
        fab.write("warm up the pool", org="ingest-accept")
        lat = []
        t = time.perf_counter()
        for it in flat:
            s = time.perf_counter_ns()
            fab.write(org="ingest-accept", **it)
            lat.append((time.perf_counter_ns() - s) / 1e6)
        single_s = time.perf_counter() - t
        t = time.perf_counter()
        fab.write_many([{**it, "org": "ingest-accept-many"} for it in flat])
        many_s = time.perf_counter() - t
    finally:
        fab.queue.delete(delete_jobs=True)
        fab.close()
    out["write_accept"] = {**_percentiles(lat), "accepted_per_s": round(len(flat) / single_s, 1),
                           "write_many_accepted_per_s": round(len(flat) / many_s, 1)}
    p2 = out["place_2_workers"]["placements_per_s"]
    e = out["embedder"]["texts_per_s"]
    out["place_2_workers_serial_estimate_with_embedding"] = round(1 / (1 / p2 + 1 / e), 1)
    return out
