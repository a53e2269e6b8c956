"""Prometheus metrics (issue 13): scrape a running `fabric worker --metrics-port` after real writes."""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from fabric import Fabric
from fabric.errors import PlacementParked, PolicyRefused

from .fix_services import free_port, start_worker
from .openai_stub import Status, answer, by_content, openai_stub  # noqa: F401  (fixture)


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} from a /metrics page."""
    text = httpx.get(url, timeout=10).text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@contextmanager
def worker_with_metrics(database_url: str, redis_url: str, env: dict[str, str] | None = None):
    """A real `fabric worker --metrics-port` on its own queue; yields (queue, metrics url)."""
    queue = f"metrics-{uuid.uuid4().hex[:8]}"
    port = free_port()
    proc = start_worker(database_url, redis_url, queue, "--metrics-port", str(port),
                        env={"FABRIC_METRICS_ORG_LABEL": "true", **(env or {})})
    url = f"http://127.0.0.1:{port}/metrics"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, "the worker exited"
        assert time.monotonic() < deadline, "no metrics endpoint"
        time.sleep(0.2)
    try:
        yield queue, url
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.fixture
def metrics_worker(database_url, redis_url):
    with worker_with_metrics(database_url, redis_url) as started:
        yield started


def test_worker_metrics_move_by_the_right_amounts(metrics_worker, database_url, redis_url, org, pg):
    queue, url = metrics_worker
    before = scrape(url)
    with Fabric.connect(database_url, redis_url, run_worker=False, queue_name=queue) as fab:
        receipts = fab.write_many([
            {"content": "Ines Duarte plays the cello.", "org": org},
            {"content": "The Lisbon office moved to Alcântara.", "org": org},
            {"content": "Quarterly planning happens in the second week of March.", "org": org},
        ])
        placed = [fab.wait(r, 60) for r in receipts]
        dup = fab.wait(fab.write("Ines Duarte plays the cello.", org=org), 60)
        assert dup.decision == "duplicate"
        with pytest.raises(PolicyRefused):
            fab.write("Ines is on the Pro plan.", org=org, kind="plan_tier")
        with pytest.raises(PolicyRefused):
            fab.write("Ines is on the Team plan.", org=org, kind="plan_tier")
    # Two writes on a queue no worker listens to: pending in the database.
    with Fabric.connect(database_url, redis_url, run_worker=False, queue_name=queue + "-idle") as idle:
        idle.write_many([{"content": "Waiting one.", "org": org}, {"content": "Waiting two.", "org": org}])
    try:
        after = scrape(url)
    finally:
        pg.execute("DELETE FROM fabric.writes WHERE org = %s AND status = 'pending'", (org,))

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("fabric_writes_settled_total", status="placed") == 3
    assert moved("fabric_writes_settled_total", status="duplicate") == 1
    assert moved("fabric_writes_settled_total", status="parked") == 0
    by_decision = {d: moved("fabric_placements_total", decision=d, validator="pregate")
                   for d in ("new_branch", "duplicate")}
    assert by_decision == {"new_branch": 3, "duplicate": 1}, [p.decision for p in placed]
    assert moved("fabric_placement_seconds_count") == 4
    assert moved("fabric_placement_seconds_sum") > 0
    assert moved("fabric_embedded_texts_total") == 4
    assert moved("fabric_embedding_seconds_count") >= 2  # the batch of three, then the duplicate
    assert moved("fabric_llm_calls_total", outcome="ok") == 0  # the rule validator: no LLM
    # Read at scrape time, per org because the operator turned the org label on.
    assert value(after, "fabric_policy_refusals_total", org=org, kind="plan_tier") == 2
    assert value(after, "fabric_writes_open", org=org, status="pending") == 2
    assert value(after, "fabric_writes_open", org=org, status="parked") == 0
    assert not any(name == "fabric_placements_total" and dict(labels).get("org") for name, labels in after), \
        "event counters carry no org label"


def test_llm_calls_tokens_latency_and_parked_writes(database_url, redis_url, openai_stub, org, pg):
    """The LLM validator behind the real openai client and a loopback server: calls, tokens, errors."""
    openai_stub.script(default=by_content([("bakes", answer("new_branch")), ("knits", Status(500))]))
    env = {"OPENAI_BASE_URL": openai_stub.base_url, "OPENAI_API_KEY": "test-key", "FABRIC_LLM_MODEL": "stub-model",
           "FABRIC_VALIDATOR": "llm", "FABRIC_LLM_TIMEOUT": "2", "FABRIC_LLM_MAX_ATTEMPTS": "2"}
    with worker_with_metrics(database_url, redis_url, env) as (queue, url):
        before = scrape(url)
        with Fabric.connect(database_url, redis_url, run_worker=False, queue_name=queue) as fab:
            first = fab.wait(fab.write("Omar Haddad cooks on Sundays.", org=org), 60)
            second = fab.wait(fab.write("Omar Haddad bakes bread on Sundays.", org=org), 60)
            parked = fab.write("Omar Haddad knits on Sundays.", org=org)
            with pytest.raises(PlacementParked):
                fab.wait(parked, 60)
        after = scrape(url)
    assert (first.validator, second.validator) == ("pregate", "llm")

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    tokens = pg.execute("SELECT sum(prompt_tokens), sum(completion_tokens) FROM fabric.decisions "
                        "WHERE org = %s AND validator = 'llm'", (org,)).fetchone()
    assert tokens[0] > 0
    assert moved("fabric_llm_calls_total", outcome="ok") == 1
    assert moved("fabric_llm_calls_total", outcome="error") == 1
    assert moved("fabric_llm_tokens_total", type="prompt") == tokens[0]
    assert moved("fabric_llm_tokens_total", type="completion") == tokens[1]
    assert moved("fabric_llm_seconds_count") == 1
    assert moved("fabric_placements_total", decision="new_branch", validator="llm") == 1
    assert moved("fabric_writes_settled_total", status="parked") == 1
    assert value(after, "fabric_writes_open", org=org, status="parked") == 1
