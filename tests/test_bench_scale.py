"""`fabric bench scale --quick`: the whole benchmark at its CI size, on the real services.

Nothing here is timed against a threshold (the machine is shared); the test checks that every
measure is produced, well-formed and plausible, that the baselines ran, and that the files exist."""

from __future__ import annotations

import json

import psycopg
import pytest
from typer.testing import CliRunner

from fabric.bench import scale as sc
from fabric.cli import app
from fabric.errors import ValidationError

DB_READS = ("search_now_large", "search_valid_at_large", "search_known_at_large", "search_now_medium",
            "search_now_small",
            "search_valid_at_small", "search_known_at_small", "current_value", "walk_1000",
            "belief_state_1000", "history")
LIB_READS = ("lib_search_large", "lib_search_small", "lib_search_vector_large", "lib_current_value",
             "lib_walk_1000", "lib_belief_state_1000", "lib_history", "search_hybrid_now_large",
             "search_hybrid_now_small")
SEARCHES = [r for r in DB_READS if r.startswith("search_")]


def test_parse_sizes():
    assert sc.parse_sizes("10k, 100k,1m") == [10_000, 100_000, 1_000_000]
    assert sc.parse_sizes("100k,10k,10k") == [10_000, 100_000]
    for bad in ("", "ten", "10q", "100"):
        with pytest.raises(ValidationError) as exc:
            sc.parse_sizes(bad)
        assert exc.value.field == "sizes"


def test_corpus_shape():
    c = sc.build_corpus(sc.QUICK_SIZE, seed=3)
    st = c.stats()
    assert st["memories"] == sc.QUICK_SIZE and st["versions"] > st["memories"]
    assert 0.2 <= st["not_current_fraction"] <= 0.4
    assert st["large_org_memories"] / st["memories"] >= 0.5
    assert c.org_sizes[c.belief_org] == sc.BELIEF_SIZE
    # the subtree under its root holds exactly SUBTREE_SIZE nodes
    children: dict[int, list[int]] = {}
    for i, p in enumerate(c.parent):
        children.setdefault(int(p), []).append(i)
    stack, seen = [c.subtree_root], 0
    while stack:
        node = stack.pop()
        seen += 1
        stack.extend(children.get(node, []))
    assert seen == sc.SUBTREE_SIZE
    # versions respect the schema's interval checks
    closed = c.v_vt < sc.NEVER
    assert (c.v_vt[closed] >= c.v_vf[closed]).all()
    expired = c.v_exp < sc.NEVER
    assert (c.v_exp[expired] >= c.v_rec[expired]).all()


@pytest.mark.timeout(900)  # about a minute on a quiet 2-core machine; the CI box is shared
def test_bench_scale_quick(database_url, redis_url, tmp_path):
    out = tmp_path / "results"
    runner = CliRunner()
    env = {"DATABASE_URL": database_url, "REDIS_URL": redis_url}
    res = runner.invoke(app, ["bench", "scale", "--quick", "--keep", "--out", str(out), "--json"], env=env,
                        catch_exceptions=False)
    assert res.exit_code == 0, res.output
    kept = json.loads(res.stdout)["sizes"][0]["kept_url"]
    try:
        _check_quick_run(json.loads(res.stdout), out, database_url)
        _check_reuse(runner, env, kept, tmp_path / "reused")
    finally:
        sc.BenchDatabase.kept(kept).drop()


def _check_quick_run(printed, out, database_url):
    written = json.loads((out / "scale.json").read_text())
    assert printed["meta"]["sizes"] == written["meta"]["sizes"] == [sc.QUICK_SIZE]
    assert (out / "scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    size = written["sizes"][0]
    reads = size["reads"]
    for name in DB_READS + LIB_READS + ("flat_pgvector_large", "flat_pgvector_small"):
        r = reads[name]
        assert r["n"] >= 10, name
        assert 0 < r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"], name
        assert r["qps"] > 0, name
    for name in DB_READS + ("flat_pgvector_large", "flat_pgvector_small"):
        # the server's on-CPU time was read from /proc (the test server runs on this machine)
        assert 0 < reads[name]["server_cpu_p50_ms"], name
    for name in SEARCHES + ["flat_pgvector_large", "flat_pgvector_small"]:
        assert 0.0 <= reads[name]["recall_at_10"] <= 1.0, name
    assert reads["search_now_large"]["recall_at_10"] >= 0.9
    assert reads["walk_1000"]["rows_returned"] > 0
    # a flat store returns memories that are no longer current; fabric's reads do not
    assert reads["flat_pgvector_large"]["not_current_in_top10"] > 0
    from fabric.bench.flat import chroma_available

    if chroma_available()[0]:
        for name in ("chroma_large", "chroma_small"):
            assert 0.0 <= reads[name]["recall_at_10"] <= 1.0

    ingest = size["ingest"]
    assert ingest["embedder"]["texts_per_s"] > 0
    for key in ("place_1_workers", "place_2_workers", "place_2_workers_with_embedding"):
        run = ingest[key]
        assert run["settled"] == run["writes"] and run["parked"] == 0, (key, run)
        assert run["placements_per_s"] > 0
        assert any(k.startswith("rule:") for k in run["decisions"]), run["decisions"]
    assert ingest["write_accept"]["accepted_per_s"] > 0

    disk = size["disk"]
    assert disk["memory_tables_bytes_per_memory"] > disk["hnsw_bytes_per_memory"] > 0
    assert disk["flat_pgvector_bytes_per_row"] > 0
    assert size["explain"]["search_now_large"] and size["explain"]["walk_1000"]

    targets = written["targets"]
    assert len(targets) >= 10 and all(t["met"] in (True, False) for t in targets)

    # every ratio to flat compares figures taken interleaved: the flat baselines ran beside each read
    for name in ("search_now_large", "search_valid_at_small", "search_hybrid_now_large",
                 "search_hybrid_known_at_small"):
        org = name.rsplit("_", 1)[1]
        assert reads[name]["same_run"][f"flat_pgvector_{org}"]["p50_ms"] > 0, name
    assert reads["search_known_at_large"]["same_run"]["flat_pgvector_large_same_ef"]["ef_search"] == \
        reads["search_known_at_large"]["ef_search"]
    # --keep kept the benchmark database
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (size["database"],)).fetchone()


def _check_reuse(runner, env, kept, out):
    """--reuse: the reads again on the kept database, nothing else; a wrong size or seed is refused."""
    for bad in (["--sizes", "10k"], ["--seed", "8"]):
        res = runner.invoke(app, ["bench", "scale", "--reuse", kept, "--out", str(out), *bad], env=env)
        assert res.exit_code != 0 and "invalid reuse" in res.output, res.output
    res = runner.invoke(app, ["bench", "scale", "--reuse", kept, "--no-chroma", "--queries", "10", "--out", str(out),
                              "--json"], env=env, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    size = json.loads((out / "scale.json").read_text())["sizes"][0]
    assert size["reused"] == kept and "ingest" not in size and list(size["phases"]) == ["baselines_and_reads_s"]
    for name in DB_READS + ("flat_pgvector_large", "search_hybrid_valid_at_large"):
        assert size["reads"][name]["p50_ms"] > 0, name
    assert size["reads"]["search_now_large"]["recall_at_10"] >= 0.9
    assert "Reads only, on the kept database" in (out / "scale.md").read_text()


def test_kept_size_reads_the_database_name():
    assert sc.kept_size("postgresql://postgres:@/fabric_bench_scale_1m_30a519?host=/tmp/pg") == 1_000_000
    assert sc.kept_size("postgresql://u@localhost:5432/fabric_bench_scale_5k_0a1b2c") == 5_000
    for bad in ("postgresql://u@localhost/fabric", "postgresql://u@localhost/fabric_bench_scale_1m",
                "postgresql://u@localhost/fabric_bench_retrieval_1m_30a519"):
        with pytest.raises(ValidationError) as exc:
            sc.kept_size(bad)
        assert exc.value.field == "reuse"


def _read(p50: float, cpu: float, **extra) -> dict:
    return {"n": 40, "p50_ms": p50, "p95_ms": p50, "p99_ms": p50, "cpu_p50_ms": cpu, **extra}


def test_targets_compare_with_the_flat_figures_taken_in_the_same_run():
    """A read that carries the flat baseline measured interleaved with it (`same_run`) is compared
    with that, not with the flat record of another phase (taken under another load)."""
    flat_other_phase = _read(2.0, 2.0, ef_search=100)
    same_run = {"flat_pgvector_large": _read(5.0, 4.0, ef_search=100),
                "flat_pgvector_large_same_ef": _read(6.0, 5.0, ef_search=327)}
    reads = {"search_now_large": _read(9.0, 6.0, ef_search=327, same_run=same_run),
             "search_hybrid_now_large": _read(8.0, 8.0, same_run={"flat_pgvector_large": _read(4.0, 4.0)}),
             "search_valid_at_large": _read(10.0, 10.0, ef_search=327),  # an older run: no same_run
             "flat_pgvector_large": flat_other_phase,
             "flat_pgvector_large_same_ef": _read(4.0, 4.0, ef_search=327)}
    results = {"sizes": [{"label": "1m", "reads": reads, "total_s": 600, "reused": "postgresql://…",
                          "database": "fabric_bench_scale_1m_30a519"}]}
    got = {t["target"]: t for t in sc.check_targets(results)}
    now = "large org, current state"
    assert got[f"hybrid search vs flat pgvector p50 ({now})"]["measured"] == 2.0
    assert got[f"vector search vs flat pgvector p50 ({now}; flat at ef_search 100)"]["measured"] == 1.8
    same_ef = got[f"vector search vs flat pgvector p50 ({now}; flat at fabric's ef_search 327, fabric at 327)"]
    assert (same_ef["measured"], same_ef["cpu_measured"]) == (1.5, 1.2)
    # without figures of its own run, the read falls back on the baseline's record
    assert got["vector search vs flat pgvector p50 (large org, valid_at; flat at ef_search 100)"]["measured"] == 5.0
    # a reads-only run on a kept database says nothing about a whole run's minutes
    assert not any(t["target"].startswith("whole run") for t in got.values())
    table = sc.markdown({**results, "targets": [], "growth": {}} | {"sizes": [
        {**results["sizes"][0], "corpus": {"orgs": 3, "large_org_memories": 6, "small_org_memories": 1,
                                           "versions": 9, "not_current_fraction": 0.3, "max_depth": 2},
         "server": {"server_version": "18", "pgvector": "0.8", "shared_buffers": "1GB"}}], "meta": {}})
    assert "| hybrid search now – large | 8.00 |" in table and "| 2.00 (2.00) |" in table
    assert "Reads only, on the kept database fabric_bench_scale_1m_30a519" in table
