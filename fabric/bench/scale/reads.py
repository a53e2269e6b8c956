"""Reads: database time of every read, the library call end to end, recall, EXPLAIN."""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import numpy as np

from ...db import one
from .baselines import ChromaBaseline, FlatBaseline
from .cases import SearchCase, _search_cases
from .config import EF_SEARCH, MEDIUM_ORG_INDEX, SUBTREE_SIZE, K, Progress, ScaleConfig, _defaults
from .corpus import Corpus
from .load import BenchDatabase, _at, _ts
from .timing import Meter, _explain, _percentiles, _recall, _run_interleaved, _run_timed, backend_cpu_meter

log = logging.getLogger(__name__)


def _summary(lat: Sequence[float], cpu: Sequence[tuple[float, float]] | None = None) -> dict[str, Any]:
    """Wall percentiles, and CPU percentiles when metered: total, server, client."""
    r: dict[str, Any] = _percentiles(lat)
    if cpu:
        a = np.asarray(cpu)  # (n, 2): server, client
        total = a.sum(axis=1)
        r["cpu_p50_ms"] = round(float(np.percentile(total, 50)), 3)
        r["cpu_p99_ms"] = round(float(np.percentile(total, 99)), 3)
        if a[:, 0].any():
            r["server_cpu_p50_ms"] = round(float(np.percentile(a[:, 0], 50)), 3)
            r["server_cpu_p99_ms"] = round(float(np.percentile(a[:, 0], 99)), 3)
        r["client_cpu_p50_ms"] = round(float(np.percentile(a[:, 1], 50)), 3)
    return r


SAME_RUN_KEYS = ("p50_ms", "p99_ms", "cpu_p50_ms", "server_cpu_p50_ms", "client_cpu_p50_ms")


def _same_run(lat: Sequence[float], cpu: Sequence[tuple[float, float]], ef_search: int | None) -> dict[str, Any]:
    """A flat baseline's figures taken interleaved with one fabric read (kept inside that read's record,
    so its ratio to flat compares two measures taken under the same load)."""
    s = _summary(lat, cpu)
    return {"n": s["n"], **{k: s[k] for k in SAME_RUN_KEYS if k in s}, "ef_search": ef_search}


class ReadBench:
    """Times every read against one bench database."""

    def __init__(self, db: BenchDatabase, c: Corpus, cfg: ScaleConfig, progress: Progress):
        self.db, self.c, self.cfg, self.progress = db, c, cfg, progress
        self.conn = db.connect()
        self.meter = backend_cpu_meter(self.conn)
        self.n_queries, self.budget, _, _ = _defaults(cfg, c.n)
        self.rng = np.random.default_rng([cfg.seed, c.n, 99])
        self.results: dict[str, dict[str, Any]] = {}
        self.explain: dict[str, list[str]] = {}

    def close(self) -> None:
        self.conn.close()

    def _record(self, name: str, lat: Sequence[float], cpu: Sequence[tuple[float, float]] | None = None,
                **extra: Any) -> dict[str, Any]:
        r = {**_summary(lat, cpu), **extra}
        self.results[name] = r
        self.progress(f"  {name:<24} p50 {r['p50_ms']:8.2f} ms  p99 {r['p99_ms']:8.2f} ms"
                      + (f"  server cpu p50 {r['server_cpu_p50_ms']:7.2f} ms" if "server_cpu_p50_ms" in r else "")
                      + (f"  client cpu p50 {r['client_cpu_p50_ms']:7.2f} ms" if "client_cpu_p50_ms" in r else "")
                      + (f"  recall@10 {r['recall_at_10']:.3f}" if "recall_at_10" in r else ""))
        return r

    # -- search (database time: the library's SQL with a precomputed vector)

    def search(self, name: str, cases: list[SearchCase], companions: dict[str, tuple[Any, str]] | None = None,
               *, record_companions: bool = True) -> None:
        """Time fabric's vector search (and, interleaved with it on the same queries, the flat
        baselines given as companions: name -> (store, kind)). The companions' figures go into this
        read's record (`same_run`) and, with `record_companions`, into records of their own (with
        recall), as the baselines' figures in the tables."""
        from ...read import search as fsearch

        c = self.c
        org_name = {o: c.orgs[o] for o in {x.org for x in cases}}

        def run(x: SearchCase):
            with self.conn.transaction():
                rows = fsearch.vector_search(self.conn, org=org_name[x.org], query=x.vec, k=K,
                                             valid_at=_at(x.valid_us), known_at=_at(x.known_us),
                                             ef_search=EF_SEARCH, current=x.current)
            return [r["id"] for r in rows]

        ef = self.ef_search(cases[0])
        fns: dict[str, Callable[[Any], Any]] = {name: run}
        meters: dict[str, Meter | None] = {name: self.meter}
        companion_ef: dict[str, int] = {}
        for cname, (store, kind) in (companions or {}).items():
            # a flat pgvector table is timed twice: at the default ef_search (what an application
            # runs) and at fabric's own ef_search for this search (equal work per candidate list)
            if kind == "flat":
                for cn, e in ((cname, EF_SEARCH), (f"{cname}_same_ef", ef)):
                    fns[cn] = (lambda st, e_: (lambda x: st.query(x.vec, ef_search=e_)))(store, e)
                    meters[cn] = store.meter
                    companion_ef[cn] = e
            else:
                fns[cname] = (lambda st: (lambda x: st.query(x.vec)))(store)
                meters[cname] = store.meter
        # 50 untimed queries first: the graphs were built minutes ago and others since, so the first
        # queries read their pages back into shared_buffers (at 1M, p50 15.6 ms with 10 of them, 5.6
        # ms for the same statement warm on the same database)
        timed = _run_interleaved(fns, cases, warmup=min(50, len(cases) // 4), budget_s=self.budget, meters=meters)
        lat, outs, cpu = timed[name]
        same_run = {cn: _same_run(timed[cn][0], timed[cn][2], companion_ef.get(cn)) for cn in fns if cn != name}
        for cname, (_, kind) in (companions or {}).items() if record_companions else ():
            for cn in (cname, f"{cname}_same_ef") if kind == "flat" else (cname,):
                self._record_flat(cn, *timed[cn], cases, kind=kind)
                if cn in companion_ef:
                    self.results[cn]["ef_search"] = companion_ef[cn]
        recalls = []
        timed_cases = cases[:len(outs)]
        tops = c.exact_tops(timed_cases[0].org, [c.qualifying(x.org, x.valid_us, x.known_us) for x in timed_cases],
                            [x.vec for x in timed_cases])
        for top, got in zip(tops, outs):
            recalls.append(_recall(got, [c.mem_uuid(i) for i in top]))
        counts = [self._ann_count(x) for x in cases[:len(outs)]]
        fallbacks = [n < K for n in counts if n is not None]
        self._record(name, lat, cpu, kind="db", recall_at_10=round(float(np.mean(recalls)), 4),
                     recall_min=round(float(np.min(recalls)), 2), ef_search=ef,
                     exact_fallback_rate=round(float(np.mean(fallbacks)), 3) if fallbacks else None)
        if same_run:
            self.results[name]["same_run"] = same_run
        plan = self._search_plan(cases[0])
        slow = next((x for x, n in zip(cases, counts) if n is not None and n < K), None)
        if slow is not None and slow is not cases[0]:
            plan += ["", "-- a query whose index scan came up short (search_vector, the exact scan runs):"]
            plan += self._search_plan(slow, short=True)
        self.explain[name] = plan

    def hybrid(self, name: str, cases: list[SearchCase], flats: dict[str, FlatBaseline] | None = None) -> None:
        """Database time of the library's default retrieval (mode="hybrid": full text + vector in one
        statement), with the precomputed query vector and the question's text, interleaved query by
        query with the flat pgvector tables given (name -> table; their figures go into this read's
        `same_run`). No recall: the synthetic vectors and texts do not agree, so the fused ranking has
        no exact answer to compare with."""
        from ...read import search as fsearch

        run_search = getattr(fsearch, "search", None)
        if run_search is None:
            return
        org_name = {o: self.c.orgs[o] for o in {x.org for x in cases}}

        def run(x: SearchCase):
            with self.conn.transaction():
                rows = run_search(self.conn, org=org_name[x.org], text=x.text, vector=x.vec, mode="hybrid", k=K,
                                  valid_at=_at(x.valid_us), known_at=_at(x.known_us), ef_search=EF_SEARCH,
                                  current=x.current)
            return len(rows)

        try:
            run(cases[0])
        except TypeError as exc:  # the search API moved
            log.warning("hybrid search not measured: %s", exc)
            return
        fns: dict[str, Callable[[Any], Any]] = {name: run}
        meters: dict[str, Meter | None] = {name: self.meter}
        for fname, store in (flats or {}).items():
            fns[fname] = (lambda st: (lambda x: st.query(x.vec)))(store)
            meters[fname] = store.meter
        timed = _run_interleaved(fns, cases, warmup=3, budget_s=self.budget / 2, min_n=10,
                                 meters=meters)
        lat, outs, cpu = timed[name]
        self._record(name, lat, cpu, kind="db", rows_mean=round(float(np.mean(outs)), 1))
        if flats:
            self.results[name]["same_run"] = {f: _same_run(timed[f][0], timed[f][2], EF_SEARCH) for f in flats}
        x = cases[0]
        try:
            params = fsearch.search_params(org=org_name[x.org], text=x.text, vector=x.vec, mode="hybrid", k=K,
                                           valid_at=_at(x.valid_us), known_at=_at(x.known_us), current=x.current)
            with self.conn.transaction():
                self._settings(params)
                self.explain[name] = _explain(self.conn, fsearch.SEARCH_SQL, params)
        except (AttributeError, TypeError) as exc:
            self.explain[name] = [f"(not introspectable: {exc})"]

    def ef_search(self, x: SearchCase) -> int:
        """The hnsw.ef_search the library searches with for this case (sized from the index it uses)."""
        with self.conn.transaction():
            self._settings(self._params(x))
            return int(one(self.conn.execute("SELECT current_setting('hnsw.ef_search') AS ef"))["ef"])

    def _settings(self, params: dict[str, Any]) -> None:
        """The settings the library runs this search with."""
        from ...read import search as fsearch

        iterative = fsearch.pgvector_version(self.conn) >= fsearch.ITERATIVE_SCAN_SINCE
        for stmt, args in fsearch.search_settings(params, ef_search=EF_SEARCH, iterative=iterative):
            self.conn.execute(stmt, args)

    def _search_plan(self, x: SearchCase, short: bool = False) -> list[str]:
        """EXPLAIN (ANALYZE, BUFFERS) of the statement vector_search runs first, as the library runs it
        (`short`: the one it runs when the index scan came up short)."""
        from ...read import search as fsearch

        try:
            params = fsearch.search_params(org=self.c.orgs[x.org], text="", vector=x.vec, mode="vector", k=K,
                                           valid_at=_at(x.valid_us), known_at=_at(x.known_us), current=x.current)
            iterative = fsearch.pgvector_version(self.conn) >= fsearch.ITERATIVE_SCAN_SINCE
            stmt = fsearch.VECTOR_SQL if short else fsearch.statement_for("vector", iterative, params["current"])
        except (AttributeError, TypeError) as exc:
            return [f"(the search statement is not introspectable here: {exc})"]
        with self.conn.transaction():
            self._settings(params)
            return _explain(self.conn, stmt, params)

    def _params(self, x: SearchCase) -> dict[str, Any]:
        from ...read import search as fsearch

        return fsearch.search_params(org=self.c.orgs[x.org], text="", vector=x.vec, mode="vector", k=K,
                                     valid_at=_at(x.valid_us), known_at=_at(x.known_us), current=x.current)

    def _ann_count(self, x: SearchCase) -> int | None:
        """How many rows the HNSW index scan alone returns (fewer than k: the exact scan runs)."""
        from ...read import search as fsearch

        ann = getattr(fsearch, "ANN_SQL", None)
        if ann is None:
            return None
        params = self._params(x)
        with self.conn.transaction():
            self._settings(params)
            return len(self.conn.execute(ann, params).fetchall())

    def _record_flat(self, name: str, lat: list[float], outs: list[Any], cpu: list[tuple[float, float]],
                     cases: list[SearchCase], *, kind: str) -> None:
        c = self.c
        recalls, stale = [], []
        current: dict[int, set[str]] = {}
        timed_cases = cases[:len(outs)]
        tops = c.exact_tops(timed_cases[0].org, [c.org_memories(x.org) for x in timed_cases],
                            [x.vec for x in timed_cases])
        for x, got, top in zip(timed_cases, outs, tops):
            recalls.append(_recall(got, [str(c.mem_uuid(i)) for i in top]))
            if x.org not in current:
                current[x.org] = {str(c.mem_uuid(i)) for i in c.qualifying(x.org, c.now_us, c.now_us)}
            stale.append(sum(g not in current[x.org] for g in got) / max(len(got), 1))
        self._record(name, lat, cpu, kind=kind, recall_at_10=round(float(np.mean(recalls)), 4),
                     recall_min=round(float(np.min(recalls)), 2),
                     not_current_in_top10=round(float(np.mean(stale)), 3))

    # -- structural reads (named queries of fabric/sql/read.sql)

    def named(self, name: str, query_name: str, params: list[dict[str, Any]], *, many: bool) -> list[int]:
        from ...sql import q

        text = q(query_name)

        def run(p):
            with self.conn.transaction():
                cur = self.conn.execute(text, p)
                return len(cur.fetchall()) if many else int(cur.fetchone() is not None)

        lat, outs, cpu = _run_timed(run, params, warmup=min(10, len(params) // 4), budget_s=self.budget,
                                    meter=self.meter)
        self._record(name, lat, cpu, kind="db", rows_mean=round(float(np.mean(outs)), 1))
        with self.conn.transaction():
            self.explain[name] = _explain(self.conn, text, params[0])
        return outs


def _library_reads(rb: ReadBench, url: str, redis_url: str, cases_large, cases_small, cv_params,
                   hist_ids, walk_root, progress: Progress) -> None:
    """The end-to-end library calls (query embedding included for search), for reference."""
    from ...api import Fabric

    c = rb.c
    fab = Fabric.connect(url, redis_url, run_worker=False, auto_migrate=False, pool_min_size=1, pool_max_size=2)
    try:
        fab.embedder.embed(["warm up the model"])
        n = max(20, min(60, rb.n_queries // 3))
        large, small = c.orgs[c.large_org], c.orgs[c.small_org]
        calls = {
            "lib_search_large": (lambda x: fab.search(x.text, org=large, k=K), cases_large[:n]),
            "lib_search_small": (lambda x: fab.search(x.text, org=small, k=K), cases_small[:n]),
            "lib_search_vector_large": (lambda x: fab.search(x.text, org=large, k=K, mode="vector"),
                                        cases_large[:n]),
            "lib_current_value": (lambda p: fab.current_value(p["subject"], p["relation"], org=p["org"]),
                                  cv_params[:n * 2]),
            "lib_walk_1000": (lambda _: fab.walk(walk_root, org=large), list(range(max(10, n // 2)))),
            "lib_belief_state_1000": (lambda _: fab.belief_state(org=c.orgs[c.belief_org]),
                                      list(range(max(10, n // 2)))),
            "lib_history": (lambda p: fab.history(p["id"], org=p["org"]), hist_ids[:n * 2]),
        }
        for name, (fn, inputs) in calls.items():
            lat, _, _ = _run_timed(fn, inputs, warmup=min(5, len(inputs) // 4), budget_s=rb.budget / 2,
                                   min_n=10)
            rb._record(name, lat, kind="library")
    finally:
        fab.close()


def measure_reads(db: BenchDatabase, c: Corpus, cfg: ScaleConfig, redis_url: str, progress: Progress
                  ) -> tuple[dict[str, Any], dict[str, list[str]], dict[str, Any]]:
    rb = ReadBench(db, c, cfg, progress)
    rng = rb.rng
    nq = rb.n_queries
    baselines: dict[str, Any] = {}
    try:
        # a medium org (4% of the rows): too big for a cheap exact scan, too small a share of a
        # shared HNSW index for its candidates to hold k of its rows without an iterative scan
        cases = {(o, mode): _search_cases(c, rng, org, mode, nq)
                 for o, org in (("large", c.large_org), ("medium", MEDIUM_ORG_INDEX), ("small", c.small_org))
                 for mode in ("now", "valid_at", "known_at")}
        # flat baselines: per tenant, every memory of the org (a flat store keeps all versions)
        stores: list[tuple[str, Any, str]] = []
        load: dict[str, Any] = {}
        for label, org in (("large", c.large_org), ("small", c.small_org)):
            members = c.org_memories(org)
            ids = [c.mem_uuid(i) for i in members]
            texts = [c.content[i] for i in members]
            meta = [{"valid_from": _at(int(c.vf[i])).isoformat(), "recorded_at": _at(int(c.rec[i])).isoformat()}
                    for i in members]
            vecs = c.vectors[members]
            progress(f"  flat pgvector table for the {label} org ({len(members):,} vectors)")
            fp = FlatBaseline(db, f"{label}")
            load[f"flat_pgvector_{label}"] = fp.load(ids, texts, vecs, meta)
            stores.append((f"flat_pgvector_{label}", fp, label))
            if cfg.chroma:
                from ..flat import chroma_available

                ok, note = chroma_available()
                if ok:
                    progress(f"  ChromaDB collection for the {label} org ({len(members):,} vectors)")
                    ch = ChromaBaseline(f"scale_{label}")
                    load[f"chroma_{label}"] = ch.load(ids, texts, vecs, meta)
                    stores.append((f"chroma_{label}", ch, label))
                else:
                    baselines["chroma_note"] = note
        baselines["load"] = load

        progress("  reads (database time: the library's SQL with a precomputed query vector)")
        # every read of an org with flat baselines runs interleaved with them (the time-travel reads
        # against flat's unfiltered query): each ratio to flat compares figures taken under one load
        for (o, mode), cs in cases.items():
            companions = {name: (store, "flat" if name.startswith("flat") else "chroma")
                          for name, store, label in stores if label == o}
            rb.search(f"search_{mode}_{o}", cs, companions, record_companions=mode == "now")
        for (o, mode), cs in cases.items():
            flats = {name: store for name, store, label in stores if label == o and name.startswith("flat")}
            rb.hybrid(f"search_hybrid_{mode}_{o}", cs, flats)
        fp_large = next(s for n, s, _ in stores if n == "flat_pgvector_large")
        rb.explain["flat_pgvector_large"] = fp_large.explain(cases[("large", "now")][0].vec)
        baselines["flat_disk_bytes_per_row"] = round(fp_large.disk_bytes() / max(fp_large.rows, 1), 1)

        now = _ts(c.now_us)
        large = c.orgs[c.large_org]
        keyed = np.flatnonzero((c.org_of == c.large_org) & c.keyed)
        keyed_chains: dict[int, int] = {}
        for i in keyed:
            keyed_chains.setdefault(int(c.chain[i]), int(i))
        picks = rng.permutation(list(keyed_chains.values()))[:max(nq, 200)]
        cv_params = [{"org": large, "subject": c.subject[i], "relation": c.relation[i], "valid_at": now,
                      "known_at": now} for i in picks]
        rb.named("current_value", "current_value", cv_params, many=False)
        walk_root = c.mem_uuid(c.subtree_root)
        walk_params = [{"org": large, "root": walk_root, "include_superseded": False, "max_depth": None,
                        "valid_at": now, "known_at": now}] * max(30, nq // 4)
        rows = rb.named("walk_1000", "walk", walk_params, many=True)
        rb.results["walk_1000"]["subtree_nodes"] = SUBTREE_SIZE
        rb.results["walk_1000"]["rows_returned"] = rows[0] if rows else 0
        bs_params = [{"org": c.orgs[c.belief_org], "valid_at": now, "known_at": now}] * max(30, nq // 4)
        rb.named("belief_state_1000", "belief_state", bs_params, many=True)
        chained = np.flatnonzero((c.org_of == c.large_org) & (c.chain_pos >= 1))
        hist = rng.permutation(chained)[:max(nq, 200)]
        hist_params = [{"org": large, "id": c.mem_uuid(i)} for i in hist]
        rb.named("history", "history", hist_params, many=True)

        progress("  library calls end to end (query embedding included in search)")
        _library_reads(rb, db.url, redis_url, cases[("large", "now")], cases[("small", "now")], cv_params,
                       hist_params, walk_root, progress)
        for _, store, _ in stores:
            store.close()
    finally:
        rb.close()
    return rb.results, rb.explain, baselines
