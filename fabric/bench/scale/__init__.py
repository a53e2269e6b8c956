"""`fabric bench scale`: reads and placement at 10k, 100k and 1M memories, beside flat pgvector and ChromaDB.

For each size the benchmark
1. creates a dedicated database on the configured server and migrates it (`fabric.db.migrate`);
2. generates a realistic corpus (many orgs: most small, a few medium, one large org holding 60% of
   the rows, an org of exactly 1,000 memories, a 1,000-node subtree in the large org; trees of varied
   depth; ~30% of memories superseded, retracted or ended in valid time, across several versions;
   valid and transaction times spread over years; keyed and unkeyed memories) with SYNTHETIC
   embeddings: seeded random unit vectors clustered around topic centres (versions of one fact sit
   ~0.9 cosine apart, topic mates ~0.5, strangers ~0);
3. bulk-loads fabric's five tables with binary COPY (secondary indexes and foreign keys dropped
   first and rebuilt after, the HNSW index last), so placement is not what the reads measure;
4. loads the same vectors into flat baselines for the large and the small org (a flat pgvector
   table per tenant with the same HNSW index, and a ChromaDB collection per tenant);
5. measures with warm caches: database time of each read (the library's own SQL called with a
   precomputed query vector: `fabric.read.search.vector_search` and the named queries), the
   end-to-end library call for reference, recall@10 against exact search over the same qualifying
   rows (numpy), write() acceptance, placements/s with the rule validator and 1 and 2 real
   `fabric worker` processes (embedding excluded, measured separately), and disk bytes per memory;
6. captures EXPLAIN (ANALYZE, BUFFERS) of every read, and drops the database (unless `keep`).

The figures are what this machine gives while it runs; the JSON keeps everything, the PNG plots
p50 and p99 against size on log scales."""
# The phases live in their own modules (config, corpus, load, baselines, timing, cases, reads, ingest,
# report); this one runs them per size and re-exports the names the CLI, the tests and pipeline.py use.

from __future__ import annotations

import json
import logging
import os
import re
import time
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from ...db import one
from ...errors import ValidationError
from .config import (BELIEF_SIZE, EF_SEARCH, EMBEDDINGS_NOTE, MEDIUM_ORG_INDEX, NEVER, QUICK_SIZE, SUBTREE_SIZE, K,
                     Progress, ScaleConfig, parse_sizes, size_label)
from .corpus import Corpus, build_corpus
from .ingest import (PrecomputedEmbeddings, _spawn_workers, ingest_items, measure_ingest, placement_run,
                     wait_settled, write_statuses)
from .load import BenchDatabase, bulk_load, database_url_with, measure_disk
from .reads import measure_reads
from .report import check_targets, growth, markdown, render, write_chart

log = logging.getLogger(__name__)


__all__ = ["BELIEF_SIZE", "BenchDatabase", "Corpus", "EF_SEARCH", "EMBEDDINGS_NOTE", "K", "MEDIUM_ORG_INDEX",
           "NEVER", "PrecomputedEmbeddings", "Progress", "QUICK_SIZE", "SUBTREE_SIZE", "ScaleConfig",
           "_spawn_workers", "build_corpus", "bulk_load", "check_kept", "check_targets", "database_url_with",
           "kept_size", "reuse_size", "growth", "ingest_items", "markdown", "measure_disk", "measure_ingest",
           "measure_reads", "parse_sizes", "placement_run", "render", "run", "run_size", "server_settings",
           "size_label", "wait_settled", "write_chart", "write_statuses"]


# --------------------------------------------------------------------------------------------------
# one size, all sizes


def server_settings(url: str) -> dict[str, str]:
    names = ("server_version", "shared_buffers", "work_mem", "effective_cache_size", "jit",
             "max_parallel_workers_per_gather")
    with psycopg.connect(url, autocommit=True) as conn:
        out = {n: one(conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(n))))[0] for n in names}
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        out["pgvector"] = row[0] if row else "?"
    return out


def run_size(n: int, cfg: ScaleConfig, server_url: str, redis_url: str, progress: Progress) -> dict[str, Any]:
    label = size_label(n)
    started = time.perf_counter()
    result: dict[str, Any] = {"n": n, "label": label}
    progress(f"[{label}] generating the corpus")
    t = time.perf_counter()
    c = build_corpus(n, cfg.seed, progress)
    result["corpus"] = c.stats()
    load: dict[str, Any] = {"generate_s": round(time.perf_counter() - t, 2)}
    db = BenchDatabase(server_url, label)
    progress(f"[{label}] database {db.name}: create + migrate")
    t = time.perf_counter()
    db.create()
    phases = {"create_migrate_s": round(time.perf_counter() - t, 1)}
    try:
        result["database"] = db.name
        result["server"] = server_settings(db.url)
        t = time.perf_counter()
        load.update({k: round(v, 2) for k, v in bulk_load(db, c, progress).items()})
        result["disk"] = measure_disk(db, c)
        phases["bulk_load_s"] = round(time.perf_counter() - t, 1)
        progress(f"[{label}] reads")
        t = time.perf_counter()
        reads, explain, baselines = measure_reads(db, c, cfg, redis_url, progress)
        phases["baselines_and_reads_s"] = round(time.perf_counter() - t, 1)
        for name, t_ in baselines.pop("load", {}).items():
            load[name] = {k: round(v, 2) for k, v in t_.items()}
        result["reads"], result["explain"], result["baselines"] = reads, explain, baselines
        result["disk"]["flat_pgvector_bytes_per_row"] = baselines.get("flat_disk_bytes_per_row")
        progress(f"[{label}] ingest")
        t = time.perf_counter()
        result["ingest"] = measure_ingest(db, c, cfg, redis_url, progress)
        phases["ingest_s"] = round(time.perf_counter() - t, 1)
    finally:
        if cfg.keep:
            progress(f"[{label}] kept database {db.name}: {db.url}")
            result["kept_url"] = db.url
        else:
            db.drop()
    result["phases"] = phases
    result["load_average_after"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    result["load"] = load
    result["total_s"] = round(time.perf_counter() - started, 1)
    progress(f"[{label}] done in {result['total_s']:.0f} s")
    return result


KEPT_NAME = re.compile(r"fabric_bench_scale_([0-9]+[km]?)_[0-9a-f]{6}")


def kept_size(url: str) -> int:
    """The size of the kept bench database at url, from its name (`--keep` prints the URL)."""
    name = urlsplit(url).path.lstrip("/")
    m = KEPT_NAME.fullmatch(name)
    if not m:
        raise ValidationError("reuse", f"{name!r} is not a database kept by `fabric bench scale --keep` "
                                       "(named fabric_bench_scale_<size>_<hex>)")
    return parse_sizes(m.group(1))[0]


def check_kept(db: BenchDatabase, c: Corpus, seed: int) -> None:
    """The kept database holds this corpus (same size and seed): its large and small orgs have the
    corpus's memories, with the corpus's ids. The ingest phase's orgs (`ingest-…`) do not matter."""
    large, small = c.orgs[c.large_org], c.orgs[c.small_org]
    sample = [c.mem_uuid(i) for i in (0, c.n // 2, c.n - 1, *c.org_memories(c.small_org)[:3])]
    try:
        with db.connect(autocommit=True) as conn:
            counts = {r["org"]: r["n"] for r in conn.execute(
                "SELECT org, count(*) AS n FROM fabric.memories WHERE org = ANY(%(o)s) GROUP BY org",
                {"o": [large, small]}).fetchall()}
            found = one(conn.execute("SELECT count(*) AS n FROM fabric.memories WHERE id = ANY(%(ids)s)",
                                     {"ids": sample}))["n"]
    except psycopg.Error as exc:
        raise ValidationError("reuse", f"cannot read the kept database {db.name}: {exc}") from exc
    want = {large: len(c.org_memories(c.large_org)), small: len(c.org_memories(c.small_org))}
    if counts != want or found != len(sample):
        raise ValidationError("reuse", f"{db.name} does not hold the {size_label(c.n)} corpus of seed {seed} "
                                       f"(org memories {counts}, expected {want}; {found} of {len(sample)} sample "
                                       "ids): give the --seed it was built with, or build one with --keep")


def reuse_size(url: str, cfg: ScaleConfig, redis_url: str, progress: Progress) -> dict[str, Any]:
    """The read phase only (flat baselines, cases, reads, EXPLAIN) on a database kept by `--keep`:
    no corpus load, no ingest; the database is left as it was (its flat tables are dropped again)."""
    n = kept_size(url)
    if cfg.sizes and cfg.sizes != [n]:
        raise ValidationError("reuse", f"the kept database holds {size_label(n)} memories, not "
                                       f"{', '.join(map(size_label, cfg.sizes))}")
    label = size_label(n)
    started = time.perf_counter()
    progress(f"[{label}] generating the corpus (to know its cases and exact answers)")
    c = build_corpus(n, cfg.seed, progress)
    db = BenchDatabase.kept(url)
    check_kept(db, c, cfg.seed)
    result: dict[str, Any] = {"n": n, "label": label, "corpus": c.stats(), "database": db.name, "reused": url,
                              "server": server_settings(db.url), "disk": measure_disk(db, c)}
    progress(f"[{label}] reads on the kept database {db.name}")
    t = time.perf_counter()
    reads, explain, baselines = measure_reads(db, c, cfg, redis_url, progress)
    result["phases"] = {"baselines_and_reads_s": round(time.perf_counter() - t, 1)}
    result["load"] = {name: {k: round(v, 2) for k, v in t_.items()} for name, t_ in baselines.pop("load", {}).items()}
    result["reads"], result["explain"], result["baselines"] = reads, explain, baselines
    result["disk"]["flat_pgvector_bytes_per_row"] = baselines.get("flat_disk_bytes_per_row")
    result["load_average_after"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    result["total_s"] = round(time.perf_counter() - started, 1)
    progress(f"[{label}] reads done in {result['total_s']:.0f} s")
    return result


def run(cfg: ScaleConfig, database_url: str, redis_url: str, progress: Progress | None = None) -> dict[str, Any]:
    """Run every size; write JSON and PNG into cfg.out; return the results."""
    progress = progress or (lambda msg: log.info(msg))
    started = time.perf_counter()
    results: dict[str, Any] = {
        "meta": {"started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "sizes": cfg.sizes, "seed": cfg.seed, "k": K, "ef_search": EF_SEARCH,
                 "hnsw": "m=16, ef_construction=64",
                 "embeddings": EMBEDDINGS_NOTE, "cpu_count": os.cpu_count(),
                 "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
                 "notes": [
                     "db = the library's SQL on one connection with a precomputed query vector (query embedding "
                     "excluded), timed by the client over the local socket, transaction included",
                     "library = the Fabric call end to end (search embeds the query text with the local model)",
                     "flat stores hold every memory of the tenant (all versions) and cannot answer time-filtered "
                     "queries: their latency is for the unfiltered query only",
                     "ChromaDB runs embedded in the benchmark process (in memory, cosine space)",
                 ]},
        "sizes": [],
    }
    if cfg.reuse:
        results["meta"]["reused"] = cfg.reuse
        results["meta"]["notes"].append("reads only, on a database kept by an earlier run (no load, no ingest)")
        results["sizes"].append(reuse_size(cfg.reuse, cfg, redis_url, progress))
    for n in [] if cfg.reuse else cfg.sizes:
        results["sizes"].append(run_size(n, cfg, database_url, redis_url, progress))
    results["meta"]["sizes"] = [s["n"] for s in results["sizes"]]
    results["targets"] = check_targets(results)
    results["growth"] = growth(results)
    results["meta"]["total_s"] = round(time.perf_counter() - started, 1)
    cfg.out.mkdir(parents=True, exist_ok=True)
    json_path = cfg.out / "scale.json"
    png_path = cfg.out / "scale.png"
    md_path = cfg.out / "scale.md"
    results["files"] = {"json": str(json_path), "png": str(png_path), "markdown": str(md_path)}
    json_path.write_text(json.dumps(results, indent=2, default=str))
    write_chart(results, png_path)
    md_path.write_text(markdown(results))
    return results
