"""A placement job's timeout follows its validator: with the LLM, a job waits on the model per write."""

from __future__ import annotations

import pytest
import redis
from rq import Queue

from fabric import queue as fq
from fabric.config import MAX_JOB_TIMEOUT, Settings


def test_rules_keep_the_flat_timeout():
    s = Settings(validator="rule", job_timeout=300, llm_timeout=60, llm_max_attempts=3)
    assert [s.job_timeout_for(n) for n in (1, 64)] == [300, 300]


def test_llm_jobs_get_the_models_worst_case():
    # ~1 min per call (the 1.5B local model on a busy CPU): 64 writes may take 64 × 60 × 3 s.
    s = Settings(validator="llm", job_timeout=300, llm_timeout=60, llm_max_attempts=3)
    assert s.job_timeout_for(64) == 300 + 64 * 60 * 3
    assert s.job_timeout_for(1) == 300 + 180
    # "auto" with an endpoint and a model is the LLM too.
    auto = Settings(validator="auto", openai_base_url="http://127.0.0.1:1/v1", llm_model="m",
                    job_timeout=300, llm_timeout=0.5, llm_max_attempts=1)
    assert auto.job_timeout_for(3) == 302  # 1.5 s of model time rounds up


def test_llm_timeout_is_bounded():
    s = Settings(validator="llm", job_timeout=300, llm_timeout=600, llm_max_attempts=5)
    assert s.job_timeout_for(64) == MAX_JOB_TIMEOUT
    # A job_timeout set above the bound is kept: the bound never shortens what was asked for.
    big = Settings(validator="llm", job_timeout=MAX_JOB_TIMEOUT + 1, llm_timeout=60)
    assert big.job_timeout_for(64) == MAX_JOB_TIMEOUT + 1


@pytest.mark.parametrize("bad", [0, -5])
def test_job_timeout_must_be_positive(bad):
    with pytest.raises(ValueError, match="job_timeout"):
        Settings(job_timeout=bad)


def test_each_job_is_enqueued_with_its_own_timeout():
    # The commands are built offline (no server is reached): each job's hash carries its timeout.
    queue = Queue("t", connection=redis.Redis(host="127.0.0.1", port=1))
    queue.redis_server_version = (7, 2, 0)  # type: ignore[assignment]
    s = Settings(validator="llm", job_timeout=300, llm_timeout=60, llm_max_attempts=3)
    jobs = [("fabric-a", "org", [f"w{i}" for i in range(64)]), ("fabric-b", "org", ["w"])]
    commands = fq.enqueue_commands(queue, jobs, timeout=s.job_timeout_for, retries=0)
    fields: dict[str, dict] = {}
    for args, _ in commands:
        if args[0] == "HSET" and str(args[1]).startswith("rq:job:"):
            fields.setdefault(args[1].split(":")[-1], {}).update(zip(args[2::2], args[3::2]))
    timeouts = {job: int(f["timeout"]) for job, f in fields.items()}
    assert timeouts == {"fabric-a": 300 + 64 * 180, "fabric-b": 480}
