"""Timing: percentiles, CPU-time meters, timed and interleaved loops, EXPLAIN, recall."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ...db import Conn

# --------------------------------------------------------------------------------------------------
# timing


def _percentiles(lat_ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(lat_ms, dtype=np.float64)
    return {"n": int(len(a)), "p50_ms": round(float(np.percentile(a, 50)), 3),
            "p95_ms": round(float(np.percentile(a, 95)), 3), "p99_ms": round(float(np.percentile(a, 99)), 3),
            "mean_ms": round(float(a.mean()), 3), "qps": round(float(len(a) / (a.sum() / 1000.0)), 1)}


Meter = Callable[[], tuple[int, int]]  # CPU-time counters in nanoseconds: (server, client)


def backend_cpu_meter(conn: Conn) -> Meter | None:
    """(on-CPU time of this connection's server backend, from /proc/<pid>/schedstat: run time, not
    the time spent waiting for a CPU; CPU time of the calling thread, i.e. the client decoding rows).
    None when the server is not on this machine (or /proc does not show it)."""
    pid = conn.info.backend_pid
    stat = Path(f"/proc/{pid}/schedstat")
    try:
        if b"postgres" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return None
        int(stat.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None

    def meter() -> tuple[int, int]:
        return int(stat.read_text().split()[0]), time.thread_time_ns()

    return meter


def process_cpu_meter() -> tuple[int, int]:
    """For an in-process store (ChromaDB): all of it is 'client' CPU, every thread of the process."""
    return 0, time.process_time_ns()


def _run_timed(fn: Callable[[Any], Any], inputs: Sequence[Any], *, warmup: int, budget_s: float,
               min_n: int = 20, meter: Meter | None = None
               ) -> tuple[list[float], list[Any], list[tuple[float, float]]]:
    """Warm up on the first inputs, then time each call: wall ms, output, CPU ms (when metered);
    stop early past the time budget."""
    timed = _run_interleaved({"_": fn}, inputs, warmup=warmup, budget_s=budget_s, min_n=min_n,
                             meters={"_": meter})
    return timed["_"]


def _run_interleaved(fns: dict[str, Callable[[Any], Any]], inputs: Sequence[Any], *, warmup: int,
                     budget_s: float, min_n: int = 20, meters: dict[str, Meter | None] | None = None
                     ) -> dict[str, tuple[list[float], list[Any], list[tuple[float, float]]]]:
    """Time several systems on the same inputs, query by query, alternating their order, so a
    machine whose load drifts (a shared CPU) weighs on each of them alike."""
    names = list(fns)
    meters = meters or {}
    for x in inputs[:warmup]:
        for n in names:
            fns[n](x)
    lat: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    outs: dict[str, list[Any]] = {n: [] for n in names}
    started = time.perf_counter()
    for i, x in enumerate(inputs):
        for n in (names if i % 2 == 0 else names[::-1]):
            m = meters.get(n)
            c0 = m() if m else (0, 0)
            t = time.perf_counter_ns()
            out = fns[n](x)
            lat[n].append((time.perf_counter_ns() - t) / 1e6)
            if m:
                c1 = m()
                cpu[n].append(((c1[0] - c0[0]) / 1e6, (c1[1] - c0[1]) / 1e6))
            outs[n].append(out)
        if i + 1 >= min_n and time.perf_counter() - started > budget_s * len(names):
            break
    return {n: (lat[n], outs[n], cpu[n]) for n in names}


def _explain(conn: Conn, query: str, params: dict[str, Any]) -> list[str]:
    rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + query, params).fetchall()
    return [_shorten_vectors(next(iter(r.values())) if isinstance(r, dict) else r[0]) for r in rows]


_VEC_LITERAL = re.compile(r"'\[[-0-9.e,]{40,}\]'")


def _shorten_vectors(line: str) -> str:
    return _VEC_LITERAL.sub("'[…]'", line)


def _recall(got: Sequence[Any], exact: Sequence[Any]) -> float:
    if len(exact) == 0:
        return 1.0 if len(got) == 0 else 0.0
    return len(set(got) & set(exact)) / len(exact)
