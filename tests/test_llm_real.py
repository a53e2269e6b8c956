"""Opt-in tier: the LLM validator against a real model on loopback (shared/LOCAL_LLM.md).

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) served by llama.cpp's `llama-server`, both prepared by
`python scripts/local_llm.py prepare` into ~/.cache/fabric-llm (or $FABRIC_LLM_CACHE).
Run with:  FABRIC_TEST_LLM=1 pytest -m llm tests/test_llm_real.py -s
(FABRIC_TEST_LLM_URL=http://127.0.0.1:PORT/v1 uses a server already started by `local_llm.py serve`.)

It asserts schema-valid output, the client plumbing and accuracy thresholds on the fixed labelled
sets (tests/data/placement_pairs.jsonl and the rephrased placement_pairs_v2.jsonl, whose "holdout"
split no prompt work looked at), never exact labels on arbitrary text. The validator runs as placement
runs it: its rules first, the model for the pairs they cannot read (one request at most per pair).
On a loaded 2-core machine a model call takes ~30-60 s with one thread: this tier takes an hour or more."""

from __future__ import annotations

import importlib.util
import os
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fabric.config import Settings
from fabric.placement.llm import LLMAnswer, LLMValidator, response_format
from fabric.placement.validator import Candidate, IncomingWrite
from fabric.types import DECISION_KINDS

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "local_llm.py"
_spec = importlib.util.spec_from_file_location("fabric_local_llm", _SCRIPT)
local_llm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(local_llm)

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(os.environ.get("FABRIC_TEST_LLM") != "1", reason="opt-in: set FABRIC_TEST_LLM=1"),
    pytest.mark.skipif(not local_llm.is_ready(),
                       reason="model or llama-server missing: run `python scripts/local_llm.py prepare`"),
]

# The floor the real model must reach on each labelled set, through the placement path (pre-gates on,
# rules first). Measured 2026-12-01 (load average ~6, llama-server niced, 2 threads): v2 184/199 = 92.5%
# (tune 87/88, holdout 97/111; rules alone 180/199 in the same run), 23 model calls. The floor sits
# just under it, so a prompt or guard regression fails, not one flipped pair. The first set was not
# re-measured with this prompt (the rules alone score 45/49 there and settle most of its pairs): its
# floor is the old prompt's 43/49 less a margin.
# The users'-wording set (v4, 47 pairs) joined the defaults later: its floor is the rules' 45/47 less a
# margin, not yet a measured LLM figure.
MIN_ACCURACY = {"placement_pairs.jsonl": 0.80, "placement_pairs_v2.jsonl": 0.91, "placement_pairs_v4.jsonl": 0.85}
# Unrelated facts wrongly invalidated, per 50: the goal is 1; measured 2/77 (1.3 per 50) on v2, both
# decided by the rules (sure readings: no request), none by the model.
MAX_WRONG_INVALIDATIONS_PER_50 = 2


@pytest.fixture(scope="module")
def llm_url(tmp_path_factory):
    running = os.environ.get("FABRIC_TEST_LLM_URL")  # a server already serving the model (`local_llm.py serve`)
    if running:
        yield running
        return
    log = tmp_path_factory.mktemp("llm") / "llama-server.log"
    proc, base = local_llm.start_server(log_path=log)
    yield base
    local_llm.stop_server(proc)


def settings_for(url: str) -> Settings:
    return Settings(validator="llm", openai_base_url=url, openai_api_key="local",
                    llm_model=local_llm.MODEL_NAME, llm_timeout=120, llm_max_attempts=2)


def test_schema_valid_output(llm_url):
    import openai

    client = openai.OpenAI(base_url=llm_url, api_key="local", timeout=120, max_retries=0)
    v = LLMValidator.from_settings(settings_for(llm_url))
    from fabric.placement import prompts

    user = prompts.render_user("The cafe now opens at 8am.", [("m1", "The cafe opens at 7am.", None)])
    resp = client.chat.completions.create(model=local_llm.MODEL_NAME, messages=prompts.messages(user),
                                          temperature=0, max_tokens=256, response_format=response_format())
    ans = LLMAnswer.model_validate_json(resp.choices[0].message.content)  # raises if not schema-valid
    assert ans.kind in DECISION_KINDS and 0 <= ans.confidence <= 1
    assert resp.usage.prompt_tokens > 0 and resp.usage.completion_tokens > 0
    # The SDK's own structured-output path works against the same server too.
    parsed = client.chat.completions.parse(model=local_llm.MODEL_NAME, messages=prompts.messages(user),
                                           temperature=0, max_tokens=256, response_format=LLMAnswer)
    assert isinstance(parsed.choices[0].message.parsed, LLMAnswer)
    assert v.model == local_llm.MODEL_NAME


def test_a_decision_through_the_validator(llm_url):
    t = datetime(2024, 1, 1, tzinfo=timezone.utc)
    ids = [uuid.uuid4(), uuid.uuid4()]
    cands = [Candidate(id=i, content=c, similarity=0.8, valid_from=t, valid_to=None, parent_id=None, root_id=i,
                       depth=0, version=1)
             for i, c in zip(ids, ["The library closes at 9pm.", "The library has a reading garden."])]
    v = LLMValidator.from_settings(settings_for(llm_url), rules_first=False)  # the model's own path
    d = v.decide(IncomingWrite(id=uuid.uuid4(), org="t", content="The library now closes at 10pm.",
                               valid_from=t), cands)
    assert d.kind in DECISION_KINDS and d.called and d.validator == "llm"
    assert (d.target_id is None) == (d.kind == "new_branch") and (d.target_id is None or d.target_id in ids)
    assert d.prompt_tokens > 0 and d.completion_tokens > 0 and d.latency_ms > 0
    assert v.stats.snapshot()["failures"] == 0


@pytest.mark.timeout(7200)  # ~160 model calls: many minutes on a busy 2-core machine
def test_accuracy_on_the_labelled_sets(llm_url, capsys):
    from fabric.bench.validators import bench_sets

    result = bench_sets(settings=settings_for(llm_url), use_llm=True)
    with capsys.disabled():
        for one in result["sets"]:
            for run in one["runs"]:
                per = ", ".join(f"{k} {v['correct']}/{v['n']}" for k, v in run["per_kind"].items())
                splits = "; ".join(f"{sp} {x['correct']}/{x['pairs']}" for sp, x in run["splits"].items())
                print(f"\n{one['set']} {run['validator']}: {run['correct']}/{run['pairs']} = {run['accuracy']:.1%} "
                      f"({per}) [{splits}]; wrong invalidations {run['wrong_invalidations']}/{run['unrelated']}; "
                      f"calls {run['validator_calls']}, p50 {run['latency_ms_p50'] or 0:.0f} ms, "
                      f"tokens {run['prompt_tokens']}/{run['completion_tokens']}, errors {run['errors']}")
            print(one["set"], "llm misses:", [(m["id"], m["predicted"]) for m in one["runs"][-1]["misses"]])
    for one in result["sets"]:
        rule, llm = one["runs"]
        assert llm["errors"] == 0, "every answer was schema-valid with a known target (after re-asks)"
        assert llm["validator_calls"] == one["pairs"] - llm["pregated"] - llm["ruled"]
        floor = MIN_ACCURACY[one["set"]]
        assert llm["accuracy"] >= floor, f"{one['set']}: {llm['accuracy']:.1%} < {floor:.0%}"
        assert llm["wrong_invalidations"] * 50 <= MAX_WRONG_INVALIDATIONS_PER_50 * max(llm["unrelated"], 50), \
            llm["wrong_invalidations"]
