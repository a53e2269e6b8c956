"""Prometheus metrics (prometheus_client), for workers and servers to expose on `--metrics-port`.

Counters and histograms count what happens in this process (a worker's placements; a server's
accepted writes); the write-status gauges and the policy-refusal counts are read from Postgres and
Redis at scrape time, so every process that serves them reports the same store-wide figures. Labels
are bounded: decision kind, validator, status, refusal kind; the org label only when the operator
turns it on (`metrics_org_label`), for the scrape-time figures. Queue depth and worker gauges are
rq-exporter's job, not duplicated here.

The hooks in the write path are one-line calls to the functions below, so they stay out of the way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Iterator

from prometheus_client import REGISTRY, Counter, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from .sql import q

if TYPE_CHECKING:
    import redis
    from psycopg_pool import ConnectionPool

    from .placement.validator import Decision

log = logging.getLogger(__name__)

# Placement takes milliseconds with the rules and seconds with an LLM: buckets cover both.
_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

WRITES_ACCEPTED = Counter("fabric_writes_accepted", "Writes accepted durably by this process (write / write_many).")
WRITES_SETTLED = Counter("fabric_writes_settled", "Writes this worker settled, by outcome.", ["status"])
PLACEMENTS = Counter("fabric_placements", "Placement decisions applied by this worker.", ["decision", "validator"])
PLACEMENT_SECONDS = Histogram("fabric_placement_seconds",
                              "Time to decide and apply one write's placement (embedding excluded).",
                              buckets=_SECONDS)
EMBEDDING_SECONDS = Histogram("fabric_embedding_seconds", "Time to embed one batch of writes.", buckets=_SECONDS)
EMBEDDED_TEXTS = Counter("fabric_embedded_texts", "Texts embedded by this worker.")
LLM_CALLS = Counter("fabric_llm_calls", "Calls to the LLM validator, by outcome.", ["outcome"])
LLM_TOKENS = Counter("fabric_llm_tokens", "Tokens the LLM validator used.", ["type"])
LLM_SECONDS = Histogram("fabric_llm_seconds", "Latency of one LLM validator call.", buckets=_SECONDS)
RECONCILE_REQUEUED = Counter("fabric_reconcile_requeued", "Pending writes whose job was lost, queued again.")

for _status in ("placed", "duplicate", "parked"):  # show zeros before the first event
    WRITES_SETTLED.labels(_status)
for _outcome in ("ok", "error"):
    LLM_CALLS.labels(_outcome)


# ---------------------------------------------------------------- hooks (one call each in the write path)

def writes_accepted(n: int) -> None:
    WRITES_ACCEPTED.inc(n)


def placement_done(decision: str, validator: str | None, seconds: float) -> None:
    """A write placed (or found a duplicate)."""
    WRITES_SETTLED.labels("duplicate" if decision == "duplicate" else "placed").inc()
    PLACEMENTS.labels(decision, validator or "unknown").inc()
    PLACEMENT_SECONDS.observe(seconds)


def write_parked(validator: str | None) -> None:
    WRITES_SETTLED.labels("parked").inc()
    if validator == "llm":
        LLM_CALLS.labels("error").inc()


def embedded(n_texts: int, seconds: float) -> None:
    EMBEDDED_TEXTS.inc(n_texts)
    EMBEDDING_SECONDS.observe(seconds)


def decided(d: Decision) -> None:
    """A validator's decision: counts an LLM call, its tokens and latency."""
    if d.called and d.validator == "llm":
        LLM_CALLS.labels("ok").inc()
        LLM_TOKENS.labels("prompt").inc(d.prompt_tokens or 0)
        LLM_TOKENS.labels("completion").inc(d.completion_tokens or 0)
        if d.latency_ms is not None:
            LLM_SECONDS.observe(d.latency_ms / 1000)


def requeued(n: int) -> None:
    RECONCILE_REQUEUED.inc(n)


# ---------------------------------------------------------------- read at scrape time

class StoreCollector(Collector):
    """Pending and parked writes from Postgres; policy refusals by kind from Redis."""

    def __init__(self, pool: ConnectionPool[Any], redis_client: redis.Redis | None, *, org_label: bool = False):
        self.pool, self.redis, self.org_label = pool, redis_client, org_label

    def collect(self) -> Iterator[Any]:
        labels = ["org", "status"] if self.org_label else ["status"]
        writes = GaugeMetricFamily("fabric_writes_open", "Writes waiting for placement (pending) or for an "
                                   "admin (parked), read from the database at scrape time.", labels=labels)
        totals = {"pending": 0, "parked": 0}
        try:
            with self.pool.connection() as conn:
                rows = conn.execute(q("metrics_open_writes")).fetchall()
            for r in rows:
                totals[r["status"]] += r["n"]
                if self.org_label:
                    writes.add_metric([r["org"], r["status"]], r["n"])
            if not self.org_label:
                for status, n in totals.items():
                    writes.add_metric([status], n)
            yield writes
        except Exception as exc:  # a scrape must not take the worker down; the gap shows on the dashboard
            log.warning("open writes not read", extra={"action": "metrics", "error": str(exc)})
        if self.redis is not None:
            yield from self._refusals(self.redis)

    def _refusals(self, client: redis.Redis) -> Iterator[Any]:
        from .write.policy import refusal_counts

        labels = ["org", "kind"] if self.org_label else ["kind"]
        family = CounterMetricFamily("fabric_policy_refusals", "Writes refused by the write policy, by kind "
                                     "(counted in Redis by every process that accepts writes).", labels=labels)
        try:
            counts = refusal_counts(client)
        except Exception as exc:
            log.warning("refusal counts not read", extra={"action": "metrics", "error": str(exc)})
            return
        by_kind: dict[str, int] = {}
        for org, kinds in counts.items():
            for kind, n in kinds.items():
                by_kind[kind] = by_kind.get(kind, 0) + n
                if self.org_label:
                    family.add_metric([org, kind], n)
        if not self.org_label:
            for kind, n in sorted(by_kind.items()):
                family.add_metric([kind], n)
        yield family


_collector: StoreCollector | None = None


def serve(port: int, *, pool: ConnectionPool | None = None, redis_client: redis.Redis | None = None,
          org_label: bool = False, addr: str = "0.0.0.0") -> None:
    """Expose this process's metrics (plus the store's, given a pool) at http://addr:port/metrics."""
    global _collector
    if pool is not None and _collector is None:
        _collector = StoreCollector(pool, redis_client, org_label=org_label)
        REGISTRY.register(_collector)
    start_http_server(port, addr=addr)
    log.info("metrics served", extra={"action": "metrics", "port": port})
