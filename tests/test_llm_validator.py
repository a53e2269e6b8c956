"""LLMValidator through the real `openai` client against a real HTTP server on 127.0.0.1.

The server (tests/openai_stub.py) speaks the chat-completions API and plays scripted answers; the
end-to-end tests run a real `fabric worker` process configured with the LLM validator."""

from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from fabric import Fabric
from fabric.config import Settings
from fabric.errors import ConfigurationError, PlacementParked, ValidatorError
from fabric.placement.llm import LLMValidator
from fabric.placement.validator import Candidate, IncomingWrite
from fabric.write.placer import make_validator
from tests.fix_services import start_worker
from tests.openai_stub import (OpenAIStub, Slow, Status, answer, by_content, label_of, labels_in,  # noqa: F401
                               last_user, openai_stub)

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def cand(content: str, similarity: float = 0.8, **kw) -> Candidate:
    cid = uuid.uuid4()
    return Candidate(id=cid, content=content, similarity=similarity, valid_from=T0, valid_to=None, parent_id=None,
                     root_id=cid, depth=0, version=1, **kw)


def incoming(content: str, **kw) -> IncomingWrite:
    return IncomingWrite(id=uuid.uuid4(), org="t", content=content, valid_from=T0 + timedelta(days=1), **kw)


def validator(stub: OpenAIStub, **kw) -> LLMValidator:
    opts = dict(base_url=stub.base_url, api_key="test-key", model="stub-model", timeout=2.0, max_attempts=3,
                backoff=0.05)
    opts.update(kw)
    return LLMValidator(**opts)


# ---------------------------------------------------------------------- the validator alone

def test_good_answer_is_decoded_and_costed(openai_stub):
    old, other = cand("The standup is at 9am."), cand("The standup is in room 4.", 0.7)
    openai_stub.script(answer("contradiction_fork", "m1", subject="standup", relation="time", value="10am",
                              target_value="9am", reason="time changed", confidence=0.8))
    v = validator(openai_stub)
    d = v.decide(incoming("The standup is at 10am."), [old, other])

    assert (d.kind, d.target_id, d.validator, d.model, d.called) == (
        "contradiction_fork", old.id, "llm", "stub-model", True)
    assert (d.subject, d.relation, d.value) == ("standup", "time", "10am")
    assert d.reason == "time changed" and d.confidence == pytest.approx(0.8)
    assert d.prompt_tokens > 0 and d.completion_tokens > 0 and d.latency_ms > 0
    # What went over the wire: the model, temperature 0, a strict JSON schema, the candidates by label.
    assert openai_stub.count == 1
    body = openai_stub.requests[0]["body"]
    assert body["model"] == "stub-model" and body["temperature"] == 0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["required"] == ["subject", "relation", "value", "target", "target_value", "reason", "kind",
                                  "confidence"], "the model reads the key and the target's value before the kind"
    assert list(schema["properties"]) == schema["required"]
    assert schema["properties"]["kind"]["enum"] == ["duplicate", "child_update", "contradiction_fork", "new_branch"]
    assert labels_in(body) == ["m1", "m2"]
    assert label_of(body, "room 4") == "m2"
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "system" and roles.count("assistant") >= 4, "few-shot turns are user/assistant pairs"
    assert "authorization" in openai_stub.requests[0]["headers"]
    s = v.stats.snapshot()
    assert (s["decisions"], s["calls"], s["failures"]) == (1, 1, 0)
    assert s["prompt_tokens"] == d.prompt_tokens and s["completion_tokens"] == d.completion_tokens


def test_a_keyed_write_keeps_its_own_key(openai_stub):
    old = cand("Alice is CEO.", subject="acme", relation="ceo", value="Alice")
    openai_stub.script(answer("contradiction_fork", "m1", subject="Bob", relation="job", value="CEO",
                              target_value="Alice"))
    d = validator(openai_stub).decide(incoming("Bob is CEO.", subject="acme", relation="ceo", value="Bob"), [old])
    assert d.kind == "contradiction_fork" and d.subject is None and d.relation is None
    user = openai_stub.requests[0]["body"]["messages"][-1]["content"]
    assert "acme / ceo = Alice" in user and "acme / ceo = Bob" in user


def test_an_unsure_invalidation_is_not_applied(openai_stub):
    """A fork below the confidence floor, about a name twin or a sister company, that names a value the
    target already holds, whose old value is not in the target (or is the new one), or whose new sentence
    adds a value outright becomes a new branch; a duplicate about another name is kept too."""
    cases = [
        ("Tomasz Wren lives in Gdansk.", "Tomasz Reyes lives in Krakow.",
         answer("contradiction_fork", "m1", subject="Tomasz Reyes", relation="home_city", value="Krakow",
                target_value="Gdansk"), "reyes"),
        ("Halden Energy is headquartered in Oslo.", "Halden Energy Services is headquartered in Bergen.",
         answer("contradiction_fork", "m1", subject="Halden Energy Services", relation="hq", value="Bergen",
                target_value="Oslo"),
         "services"),
        ("The standup is at 9am.", "The standup is at 10am.",
         answer("contradiction_fork", "m1", subject="standup", relation="time", value="10am", confidence=0.4,
                target_value="9am"),
         "confidence 0.40"),
        ("Pell & Thorne's account manager is Iris Quade.", "Pell & Thorne's support engineer is Iris Quade.",
         answer("contradiction_fork", "m1", subject="Pell & Thorne", relation="support_engineer", value="Iris Quade",
                target_value="Iris Quade"),
         "already in the target"),
        # a correction must point at an old value the target states, other than the new one
        ("Oskar Lind plays in an orchestra.", "Oskar Lind plays viola in the Riverside orchestra on Sundays.",
         answer("contradiction_fork", "m1", subject="Oskar Lind", relation="instrument", value="viola",
                target_value="cello"), "'cello') is not in the target"),
        # an old value from another memory that shares one word with the target
        ("Noor Aziz thanked Pim Vries for the help with Heron.", "Pim Vries fixed a bug in the Heron billing module.",
         answer("contradiction_fork", "m1", subject="Pim Vries", relation="fixed_bug_in", value="Heron billing module",
                target_value="Heron reporting module"), "is not in the target"),
        ("The depot is in Leeds.", "Leeds is where the depot is found.",
         answer("contradiction_fork", "m1", subject="depot", relation="location", value="Leeds city",
                target_value="Leeds city"), "is the new one"),
        ("The depot is in Leeds.", "The depot has moved.",
         answer("contradiction_fork", "m1", subject="depot", relation="location", value="elsewhere"),
         "no old value named"),
        # "also": one more value, said outright
        ("Wen Li is allergic to shellfish.", "Wen Li is also allergic to latex.",
         answer("contradiction_fork", "m1", subject="Wen Li", relation="allergy", value="latex",
                target_value="shellfish"), "adds a value outright"),
        ("Ravi Shah works at Orbital Paints.", "Ravi Shankar works at Orbital Paints.",
         answer("duplicate", "m1", subject="Ravi Shankar", relation="employer", value="Orbital Paints"), "shankar"),
    ]
    for existing, new, scripted, why in cases:
        openai_stub.script(scripted)
        d = validator(openai_stub).decide(incoming(new), [cand(existing)])
        assert (d.kind, d.target_id) == ("new_branch", None), new
        assert d.reason.startswith(f"{scripted['kind']} not applied") and why in d.reason, d.reason
    # A sure correction of the same subject in other words is applied.
    old = cand("Ingmar Falk is the chief executive of Brenna Labs.")
    openai_stub.script(answer("contradiction_fork", "m1", subject="Brenna Labs", relation="ceo",
                              value="Odile Marchetti", target_value="Ingmar Falk", confidence=0.9))
    d = validator(openai_stub).decide(incoming("Brenna Labs is led by CEO Odile Marchetti."), [old])
    assert (d.kind, d.target_id) == ("contradiction_fork", old.id)
    # The floor is a setting of the validator.
    openai_stub.script(answer("contradiction_fork", "m1", subject="standup", relation="time", value="10am",
                              target_value="9am", confidence=0.4))
    old = cand("The standup is at 9am.")
    d = validator(openai_stub, min_fork_confidence=0.3).decide(incoming("The standup is at 10am."), [old])
    assert (d.kind, d.target_id) == ("contradiction_fork", old.id)


def test_rules_first_settle_what_they_read_and_ask_the_model_the_rest(openai_stub):
    """With its rules first, the validator makes no request for a correction or a name twin the rules read
    for sure (subject, relation and value in both sentences), and asks the model about the rest."""
    from fabric.placement.rules import RuleValidator

    stub_answer = answer("new_branch", None, subject="x", relation="y", value="z")
    openai_stub.script(default=stub_answer)
    v = validator(openai_stub, rules=RuleValidator())
    old = cand("Amara Draycott lives in Lisbon.")
    d = v.decide(incoming("Home for Amara Draycott is Tallinn now."), [old])
    assert (d.kind, d.target_id, d.called) == ("contradiction_fork", old.id, False)
    assert (d.subject, d.relation, d.value) == ("Amara Draycott", "home_city", "Tallinn")
    twin = cand("Tomasz Wren lives in Gdansk.")
    d = v.decide(incoming("Tomasz Reyes resides in Krakow."), [twin])
    assert (d.kind, d.called) == ("new_branch", False)
    assert openai_stub.count == 0 and v.stats.snapshot()["ruled"] == 2

    # Nothing the rules can read: the model decides (and its guard still applies).
    meeting = cand("The weekly sync is on Monday at 10am.")
    openai_stub.script(lambda body: answer("contradiction_fork", label_of(body, "10am"), subject="weekly sync",
                                           relation="Meeting Time", value="Monday at 11am",
                                           target_value="Monday at 10am", confidence=0.9))
    d = v.decide(incoming("We now meet for the weekly sync an hour later."), [meeting])
    assert (d.kind, d.target_id, d.called, d.validator) == ("contradiction_fork", meeting.id, True, "llm")
    assert (d.subject, d.relation, d.value) == ("weekly sync", "meeting_time", "Monday at 11am")
    assert openai_stub.count == 1 and v.stats.snapshot()["decisions"] == 1


def test_a_threshold_call_of_the_rules_goes_to_the_model(openai_stub):
    """The rules call a swapped value "another attribute" when the two relation phrasings' embeddings fall
    just under their bar; that is not a sure reading, so the model is asked (and a reading resting on
    names or on the lexicon is still settled without a request)."""
    from fabric.placement.llm import borderline
    from fabric.placement.rules import RuleValidator

    old = cand("Dmitri Volkov's working language is Russian.")
    new = incoming("Dmitri Volkov now prefers to work in German.")
    rules = RuleValidator()
    assert rules.verdict(new, old) == "separate" and borderline(new, old)
    twin_old, twin = cand("Tomasz Wren lives in Gdansk."), incoming("Tomasz Reyes resides in Krakow.")
    assert rules.verdict(twin, twin_old) == "separate" and not borderline(twin, twin_old)
    openai_stub.script(lambda body: answer("contradiction_fork", label_of(body, "Russian"), subject="Dmitri Volkov",
                                           relation="working_language", value="German", target_value="Russian",
                                           confidence=0.9))
    v = validator(openai_stub, rules=rules)
    d = v.decide(new, [old])
    assert (d.kind, d.target_id, d.called) == ("contradiction_fork", old.id, True)
    assert openai_stub.count == 1
    d = v.decide(twin, [twin_old])
    assert (d.kind, d.called) == ("new_branch", False) and openai_stub.count == 1


def test_the_models_keys_are_made_canonical(openai_stub):
    """A text-only write the model placed carries one relation name per attribute: the rules' reading of
    its sentence, the corrected memory's key, a lexicon name its words spell, or a neighbour's name."""
    from fabric.placement.llm import canonical_relation

    assert canonical_relation("chief executive") == canonical_relation("Chief_Executive") == "ceo"
    assert canonical_relation("CEO") == "ceo" and canonical_relation("residence") == "home_city"
    assert canonical_relation("head of sales") == "head_of_sales", "a wording inside it is not enough"
    assert canonical_relation("Opening Hours", [cand("x", subject="gym", relation="opening_hours")]) == \
        "opening_hours"
    assert canonical_relation("opening-hours", [cand("x", subject="gym", relation="Opening Hours")]) == \
        "Opening Hours", "a neighbour's spelling of the same name wins"

    # A sentence the rules read: their key (the lexicon's relation), whatever the model called it.
    openai_stub.script(answer("new_branch", None, subject="Lina Okoro", relation="her_job_boss", value="Pia Lund"))
    d = validator(openai_stub).decide(incoming("Lina Okoro reports to Pia Lund."),
                                      [cand("Lina Okoro is fond of sailing.")])
    assert (d.kind, d.subject, d.relation, d.value) == ("new_branch", "Lina Okoro", "manager", "Pia Lund")
    # A correction of a keyed memory takes that memory's key and the model's value.
    keyed = cand("The gym opens at 6am.", subject="Aster gym", relation="opening_time", value="6am")
    openai_stub.script(answer("contradiction_fork", "m1", subject="the gym", relation="opens", value="5:30am",
                              target_value="6am"))
    d = validator(openai_stub).decide(incoming("Doors at the gym now open at 5:30am."), [keyed])
    assert (d.kind, d.subject, d.relation, d.value) == ("contradiction_fork", "Aster gym", "opening_time", "5:30am")
    # A refinement carries no key of its own: the memory it refines holds it.
    openai_stub.script(answer("child_update", "m1", subject="Aster gym", relation="opening_time", value="6am"))
    d = validator(openai_stub).decide(incoming("The gym opens at 6am, with the pool from 7am."), [keyed])
    assert (d.kind, d.subject, d.relation) == ("child_update", None, None)


def test_malformed_json_is_reasked_then_answered(openai_stub):
    old = cand("The office is in Leeds.")
    openai_stub.script('{"kind": "duplicate", "target": ', answer("duplicate", "m1"))
    v = validator(openai_stub)
    d = v.decide(incoming("Our office is located in Leeds."), [old])
    assert d.kind == "duplicate" and d.target_id == old.id
    assert openai_stub.count == 2
    second = openai_stub.requests[1]["body"]["messages"]
    assert second[-2] == {"role": "assistant", "content": '{"kind": "duplicate", "target": '}
    assert "could not be used" in second[-1]["content"] and "malformed" in second[-1]["content"]
    assert v.stats.snapshot()["errors"] == {"malformed": 1}


def test_malformed_json_every_time_raises_with_the_cause(openai_stub):
    openai_stub.script(default="this is not JSON at all")
    v = validator(openai_stub, max_attempts=3)
    with pytest.raises(ValidatorError, match="malformed output") as err:
        v.decide(incoming("x y z"), [cand("x y")])
    assert "3 attempt(s)" in str(err.value)
    assert openai_stub.count == 3
    s = v.stats.snapshot()
    assert (s["decisions"], s["calls"], s["retries"], s["failures"]) == (1, 3, 2, 1)


def test_schema_violations_count_as_malformed(openai_stub):
    bad_kind = dict(answer("duplicate"), kind="merge")
    missing = {k: v for k, v in answer("duplicate").items() if k != "reason"}
    extra = dict(answer("duplicate"), extra=1)
    openai_stub.script(bad_kind, missing, extra)
    with pytest.raises(ValidatorError) as err:
        validator(openai_stub).decide(incoming("a b"), [cand("a")])
    msg = str(err.value)
    assert "kind" in msg and "reason" in msg and "extra" in msg


def test_unknown_target_is_refused_never_applied(openai_stub):
    a, b = cand("The van is blue."), cand("The van has 3 seats.")
    stranger = uuid.uuid4()
    openai_stub.script(answer("contradiction_fork", "m7"), answer("contradiction_fork", str(stranger)),
                       answer("contradiction_fork", "m9"))
    v = validator(openai_stub)
    with pytest.raises(ValidatorError, match="not one of the candidates"):
        v.decide(incoming("The van is red."), [a, b])
    assert openai_stub.count == 3
    assert v.stats.snapshot()["errors"] == {"unknown_target": 3}
    reask = openai_stub.requests[1]["body"]["messages"][-1]["content"]
    assert "'m7'" in reask and "m1, m2" in reask


def test_a_change_with_no_target_named_is_not_applied(openai_stub):
    """The model writes the target before the kind: a correction or refinement with no memory named is
    one it is not sure of. Both stay live (a new branch), with no re-ask and nothing parked."""
    a = cand("The van is blue.")
    openai_stub.script(answer("child_update", None))
    d = validator(openai_stub).decide(incoming("The van is blue, with a roof rack."), [a])
    assert (d.kind, d.target_id, d.called) == ("new_branch", None, True)
    assert d.reason.startswith("child_update not applied: no target named") and openai_stub.count == 1


def test_unknown_target_then_a_real_one(openai_stub):
    a, b = cand("The van is blue."), cand("The van has 3 seats.")
    openai_stub.script(answer("contradiction_fork", "m9"),
                       answer("contradiction_fork", "m1", target_value="blue"))
    d = validator(openai_stub).decide(incoming("The van is red."), [a, b])
    assert d.target_id == a.id and openai_stub.count == 2


def test_a_full_candidate_id_is_accepted(openai_stub):
    a, b = cand("The van is blue."), cand("The van has 3 seats.")
    openai_stub.script(answer("child_update", str(b.id)))
    assert validator(openai_stub).decide(incoming("The van has 3 seats and a roof rack."), [a, b]).target_id == b.id


def test_429_then_success_honours_retry_after(openai_stub):
    openai_stub.script(Status(429, "slow down", {"Retry-After": "0.4"}), answer("new_branch", None))
    v = validator(openai_stub, backoff=0.01)
    t = time.perf_counter()
    d = v.decide(incoming("Otters hold hands."), [cand("Otters are mammals.")])
    waited = time.perf_counter() - t
    assert d.kind == "new_branch" and d.target_id is None
    assert openai_stub.count == 2 and waited >= 0.4
    assert openai_stub.requests[1]["at"] - openai_stub.requests[0]["at"] >= 0.39
    assert v.stats.snapshot()["errors"] == {"rate_limited": 1}


def test_a_long_retry_after_is_not_slept_inside_the_job(openai_stub):
    openai_stub.script(Status(429, headers={"Retry-After": "3600"}), answer("new_branch", None))
    t = time.perf_counter()
    validator(openai_stub, backoff=0.05).decide(incoming("a b"), [cand("a")])
    # Honouring the header would sleep an hour; a loaded machine may take seconds for the rest.
    assert time.perf_counter() - t < 60


def test_429_every_time_gives_up(openai_stub):
    openai_stub.script(default=Status(429, "quota", {"Retry-After": "0"}))
    with pytest.raises(ValidatorError, match="429"):
        validator(openai_stub, max_attempts=2).decide(incoming("a b"), [cand("a")])
    assert openai_stub.count == 2


def test_5xx_then_success(openai_stub):
    openai_stub.script(Status(503, "overloaded"), Status(500), answer("duplicate", "m1"))
    d = validator(openai_stub).decide(incoming("a b"), [cand("a")])
    assert d.kind == "duplicate" and openai_stub.count == 3


def test_timeout_is_retried_then_raises(openai_stub):
    openai_stub.script(default=Slow(5, answer("duplicate", "m1")))
    v = validator(openai_stub, timeout=0.5, max_attempts=2)
    t = time.perf_counter()
    with pytest.raises(ValidatorError, match="timed out after 0.5s"):
        v.decide(incoming("a b"), [cand("a")])
    elapsed = time.perf_counter() - t
    assert openai_stub.count == 2, "one request per attempt: the client itself must not retry"
    # Two attempts cut at 0.5 s each; one attempt waited out would take the server's 5 s.
    assert 1.0 <= elapsed < 5.0
    assert v.stats.snapshot()["errors"] == {"timeout": 2}


def test_timeout_then_success(openai_stub):
    openai_stub.script(Slow(5, answer("duplicate", "m1")), answer("child_update", "m1"))
    d = validator(openai_stub, timeout=0.5).decide(incoming("a b"), [cand("a")])
    assert d.kind == "child_update" and openai_stub.count == 2


def test_client_errors_are_not_retried(openai_stub):
    openai_stub.script(default=Status(401, "bad key"))
    with pytest.raises(ValidatorError, match="HTTP 401"):
        validator(openai_stub).decide(incoming("a b"), [cand("a")])
    assert openai_stub.count == 1


def test_no_candidates_needs_no_call(openai_stub):
    d = validator(openai_stub).decide(incoming("a b"), [])
    assert d.kind == "new_branch" and not d.called and openai_stub.count == 0


def test_stats_are_thread_safe(openai_stub):
    openai_stub.script(default=answer("duplicate", "m1"))
    v = validator(openai_stub)
    n_threads, per_thread = 6, 5
    results = []

    def run():
        for _ in range(per_thread):
            results.append(v.decide(incoming("a b"), [cand("a")]))

    threads = [threading.Thread(target=run) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = v.stats.snapshot()
    n = n_threads * per_thread
    assert (s["decisions"], s["calls"], s["failures"]) == (n, n, 0) == (len(results), openai_stub.count, 0)
    assert s["prompt_tokens"] == sum(d.prompt_tokens for d in results)
    assert s["completion_tokens"] == sum(d.completion_tokens for d in results)
    assert s["latency_ms"] == pytest.approx(sum(d.latency_ms for d in results))


def test_settings_select_and_configure_it(openai_stub):
    s = Settings(validator="llm", openai_base_url=openai_stub.base_url, openai_api_key="k", llm_model="m",
                 llm_timeout=1.5, llm_max_attempts=4)
    v = make_validator(s)
    assert isinstance(v, LLMValidator) and (v.model, v.timeout, v.max_attempts) == ("m", 1.5, 4)
    assert v.client.max_retries == 0
    with pytest.raises(ConfigurationError, match="FABRIC_LLM_MODEL"):
        make_validator(Settings(validator="llm", openai_base_url=openai_stub.base_url, openai_api_key="k"))
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        make_validator(Settings(validator="llm", openai_base_url=openai_stub.base_url, llm_model="m"))


# ---------------------------------------------------------------------- end to end, with a real worker

@pytest.fixture(scope="module")
def llm_stub():
    stub = OpenAIStub(model="stub-model")
    yield stub
    stub.close()


@pytest.fixture(scope="module")
def llm_fab(database_url, redis_url, llm_stub):
    queue = f"fabric-llm-{uuid.uuid4().hex[:8]}"
    worker = start_worker(database_url, redis_url, queue, env={
        "OPENAI_BASE_URL": llm_stub.base_url, "OPENAI_API_KEY": "test-key", "FABRIC_LLM_MODEL": "stub-model",
        "FABRIC_VALIDATOR": "llm", "FABRIC_LLM_TIMEOUT": "2", "FABRIC_LLM_MAX_ATTEMPTS": "2"})
    fab = Fabric.connect(database_url, redis_url, run_worker=False, queue_name=queue)
    yield fab
    fab.close()
    worker.terminate()
    try:
        worker.wait(15)
    except Exception:
        worker.kill()
        worker.wait(5)


@pytest.fixture
def stub(llm_stub):
    llm_stub.reset()
    yield llm_stub
    llm_stub.reset()


def test_worker_places_by_the_llm_decision(llm_fab, stub, org):
    first = llm_fab.wait(llm_fab.write("The weekly sync is on Monday at 10am.", org=org), timeout=60)
    assert first.decision == "new_branch" and first.validator == "pregate" and stub.count == 0

    stub.script(lambda body: answer("contradiction_fork", label_of(body, "Monday at 10am"), subject="weekly sync",
                                    relation="meeting_time", value="Monday at 11am", target_value="10am",
                                    reason="time moved", confidence=0.85))
    # worded so that the rules cannot read it: the model decides
    p = llm_fab.wait(llm_fab.write("We now meet for the weekly sync an hour later.", org=org), timeout=60)
    assert stub.count == 1
    assert (p.decision, p.target_id, p.validator, p.reason) == ("contradiction_fork", first.memory_id, "llm",
                                                                "time moved")
    new = llm_fab.get(p.memory_id, org=org)
    assert (new.subject, new.relation, new.value) == ("weekly sync", "meeting_time", "Monday at 11am")
    assert llm_fab.get(first.memory_id, org=org).state == "superseded"
    rec = next(d for d in llm_fab.decisions(org=org) if d.id == p.decision_id)
    assert rec.model == "stub-model" and rec.latency_ms > 0 and rec.confidence == pytest.approx(0.85)

    stub.script(lambda body: answer("child_update", label_of(body, "an hour later")))
    c = llm_fab.wait(llm_fab.write("The weekly sync, an hour later now, is held in room 2B.", org=org), timeout=60)
    assert (c.decision, c.target_id) == ("child_update", p.memory_id)
    assert llm_fab.get(c.memory_id, org=org).parent_id == p.memory_id and stub.count == 2


def test_worker_parks_a_write_whose_answers_are_all_malformed(llm_fab, stub, org):
    # A pair the rules cannot settle (no lexicon frame, no alignment, no closed scale): the model is asked.
    base = llm_fab.wait(llm_fab.write("Carlos is a night owl.", org=org), timeout=60)
    stub.script(default="{oops, not json")
    r = llm_fab.write("Carlos is a morning person.", org=org)
    with pytest.raises(PlacementParked) as err:
        llm_fab.wait(r, timeout=60)
    assert "malformed output" in err.value.error and "2 attempt(s)" in err.value.error
    assert stub.count == 2, "the validator's own retries, and no second layer (RQ) on top"
    assert llm_fab.get(base.memory_id, org=org).state == "live"


def test_worker_refuses_an_unknown_target(llm_fab, stub, org):
    base = llm_fab.wait(llm_fab.write("The invoice run happens on the 3rd.", org=org), timeout=60)
    stub.script(default=answer("contradiction_fork", "m42"))
    with pytest.raises(PlacementParked, match="not one of the candidates"):
        llm_fab.wait(llm_fab.write("The invoice run now happens a couple of days later.", org=org), timeout=60)
    assert llm_fab.get(base.memory_id, org=org).state == "live", "a refused target is never applied"
    assert len(llm_fab.search("invoice run", org=org)) == 1


def test_pregates_make_no_request(llm_fab, stub, org):
    stub.script(default=Status(500, "the pre-gates must not call the LLM"))
    a = llm_fab.wait(llm_fab.write("Keiko prefers green tea.", org=org), timeout=60)
    dup = llm_fab.wait(llm_fab.write("keiko prefers green tea!", org=org), timeout=60)
    far = llm_fab.wait(llm_fab.write("The staging cluster has 12 nodes.", org=org), timeout=60)
    assert (a.decision, dup.decision, far.decision) == ("new_branch", "duplicate", "new_branch")
    assert dup.memory_id == a.memory_id and {dup.validator, far.validator} == {"pregate"}
    assert stub.count == 0


def test_validator_calls_per_write_on_a_mixed_stream(llm_fab, stub, org):
    """Duplicates, updates, contradictions and unrelated writes; the stub answers as a good model would."""
    def target(needle):
        return lambda body: label_of(body, needle)

    stub.script(default=by_content([
        ("Finance team", lambda b: answer("duplicate", target("finance team")(b))),
        ("third floor, next to", lambda b: answer("child_update", target("third floor")(b))),
        ("moved to 4pm", lambda b: answer("contradiction_fork", target("at 3pm")(b), target_value="3pm")),
        ("Berlin", lambda b: answer("contradiction_fork", target("Munich")(b), target_value="Munich")),
        ("hiking", lambda b: answer("new_branch", None)),
    ], fallback=answer("new_branch", None)))
    stream = [
        ("The finance team sits on the third floor.", "new_branch"),
        ("The design review is on Thursday at 3pm.", "new_branch"),
        ("Jonas Berg lives in Munich.", "new_branch"),
        ("The finance team sits on the third floor.", "duplicate"),           # exact: pre-gate
        ("The Finance team is seated on the third floor.", "duplicate"),      # paraphrase: LLM
        ("The finance team sits on the third floor, next to the kitchen.", "child_update"),
        ("The design review on Thursday at 3pm was moved to 4pm.", "contradiction_fork"),
        ("Jonas Berg lives in Berlin.", "contradiction_fork"),
        ("Photosynthesis converts light into chemical energy.", "new_branch"),  # nothing near: pre-gate
        ("Jonas Berg lives in Berlin.", "duplicate"),                           # exact: pre-gate
        ("Jonas Berg likes hiking in the Alps.", "new_branch"),
        ("Volcanoes on Io erupt sulphur.", "new_branch"),                        # nothing near: pre-gate
    ]
    got = []
    for text, _ in stream:
        got.append(llm_fab.wait(llm_fab.write(text, org=org), timeout=60))
    assert [p.decision for p in got] == [want for _, want in stream]
    calls = stub.count
    llm_decisions = sum(1 for p in got if p.validator == "llm")
    assert calls == llm_decisions, "one request per LLM-decided write, none for pre-gated ones"
    per_write = calls / len(stream)
    print(f"\nvalidator calls per write on a mixed stream of {len(stream)}: {calls}/{len(stream)} = "
          f"{per_write:.2f} (pre-gated: {sum(1 for p in got if p.validator == 'pregate')})")
    assert per_write <= 1.0 and 0 < calls < len(stream)
    asked = [last_user(r["body"]).split("NEW memory:", 1)[1] for r in stub.requests]
    assert not any("Photosynthesis" in a or "Volcanoes" in a for a in asked), "nothing near: no request"
    assert not any("Jonas Berg lives in Berlin." in a for a in asked), \
        "the rules read that correction (no request) and the exact repeat is pre-gated"
    assert next(p for p, (text, _) in zip(got, stream) if text == "Jonas Berg lives in Berlin.").validator == "rule"


# ---------------------------------------------------------------------- the labelled set and its benchmark

def test_labelled_set_covers_the_four_decisions():
    from fabric.bench.validators import load_pairs

    pairs = load_pairs()
    assert len(pairs) >= 40 and len({p.id for p in pairs}) == len(pairs)
    for kind in ("duplicate", "child_update", "contradiction_fork", "new_branch"):
        assert sum(p.label == kind for p in pairs) >= 10, kind


def test_rule_validator_accuracy_is_measured():
    from fabric.bench.validators import bench

    r = bench(settings=Settings(validator="rule"), use_llm=False)
    (rule,) = r["runs"]
    assert rule["validator"] == "rule" and rule["pairs"] == r["pairs"] >= 40
    assert sum(v["n"] for v in rule["per_kind"].values()) == rule["pairs"]
    assert rule["correct"] == sum(v["correct"] for v in rule["per_kind"].values())
    assert sum(sum(row.values()) for row in rule["confusion"].values()) == rule["pairs"]
    assert rule["pregated"] + rule["validator_calls"] == rule["pairs"] and rule["requests"] == 0
    # Measured 40/49 (81.6%) when written; its misses are paraphrases and rephrased changes.
    assert rule["accuracy"] >= 0.7
    assert rule["per_kind"]["new_branch"]["accuracy"] >= 0.8 and rule["per_kind"]["child_update"]["accuracy"] >= 0.8


def test_bench_scores_the_llm_through_the_real_client(openai_stub):
    """An oracle endpoint (it knows the labels) must score 100%, and be asked only past the pre-gates."""
    from fabric.bench.validators import bench, load_pairs

    truth = {p.new: p for p in load_pairs()}

    def oracle(body):
        p = truth[last_user(body).split("NEW memory: ", 1)[1].splitlines()[0]]
        # it points at the old value: the whole old sentence states it
        return answer(p.label, label_of(body, p.existing), target_value=p.existing)

    openai_stub.script(default=oracle)
    s = Settings(validator="rule", openai_base_url=openai_stub.base_url, openai_api_key="k", llm_model="oracle")
    # Rules first (as placement runs it): the model is asked only about what the rules cannot read.
    r = bench(settings=s)
    rule, llm = r["runs"]
    assert llm["ruled"] > 0 and llm["requests"] == llm["validator_calls"] == openai_stub.count
    assert llm["validator_calls"] == r["pairs"] - llm["pregated"] - llm["ruled"]
    assert all(m["by"] in ("pregate", "rule") for m in llm["misses"]), "every pair the model decided is right"
    assert llm["accuracy"] >= rule["accuracy"]
    # The model alone: asked about every pair past the pre-gates.
    openai_stub.reset()
    openai_stub.script(default=oracle)
    r = bench(settings=s, rules_first=False)
    rule, llm = r["runs"]
    assert (llm["validator"], llm["model"]) == ("llm", "oracle")
    assert llm["errors"] == 0 and llm["wrong_target"] == 0
    assert all(m["by"] == "pregate" for m in llm["misses"]), "every pair the LLM decided is right"
    assert llm["accuracy"] >= rule["accuracy"] and llm["correct"] == r["pairs"] - len(llm["misses"])
    assert llm["requests"] == llm["validator_calls"] == openai_stub.count == r["pairs"] - llm["pregated"]
    assert llm["prompt_tokens"] > 0 and llm["latency_ms_p50"] > 0
    assert rule["pregated"] == llm["pregated"], "both go through the same pre-gates"


def test_bench_command_runs(monkeypatch):
    from typer.testing import CliRunner

    from fabric.cli import app

    for var in ("OPENAI_BASE_URL", "FABRIC_LLM_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    runner = CliRunner()
    res = runner.invoke(app, ["bench", "validators", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["llm_configured"] is False
    assert [s["set"] for s in out["sets"]] == ["placement_pairs_v2.jsonl", "placement_pairs_v4.jsonl",
                                               "placement_pairs.jsonl"]
    assert all([r["validator"] for r in s["runs"]] == ["rule"] for s in out["sets"])
    res = runner.invoke(app, ["bench", "validators", "--split", "tune"])
    assert res.exit_code == 0 and "overall" in res.stdout and "confusion" in res.stdout
    assert "placement_pairs_v2.jsonl" in res.stdout and "placement_pairs.jsonl:" not in res.stdout
    assert "wrongly invalidated" in res.stdout
    res = runner.invoke(app, ["bench", "validators", "--llm"])
    assert res.exit_code == 2
    res = runner.invoke(app, ["bench", "validators", "--split", "train"])
    assert res.exit_code == 2 and "split" in res.output


def test_the_rephrased_set_is_scored_per_split_with_wrong_invalidations():
    from fabric.bench.validators import REPHRASED_PAIRS, bench, load_pairs

    pairs = load_pairs(REPHRASED_PAIRS)
    assert len(pairs) >= 120 and len({p.id for p in pairs}) == len(pairs)
    assert sum(p.label == "new_branch" for p in pairs) >= 50
    tune = sum(p.split == "tune" for p in pairs)
    # 90/199 tune since two holdout pairs were opened on 2026-12-01 (their notes say so)
    assert {p.split for p in pairs} == {"tune", "holdout"} and 0.35 <= tune / len(pairs) <= 0.46
    r = bench(settings=Settings(validator="rule"), use_llm=False, pairs_path=REPHRASED_PAIRS)
    (rule,) = r["runs"]
    assert r["set"] == "placement_pairs_v2.jsonl" and rule["pairs"] == len(pairs)
    tune_s, hold_s = rule["splits"]["tune"], rule["splits"]["holdout"]
    assert tune_s["pairs"] + hold_s["pairs"] == rule["pairs"] and tune_s["pairs"] == tune
    assert tune_s["correct"] + hold_s["correct"] == rule["correct"]
    invalidated = [m for m in rule["misses"] if m["label"] == "new_branch" and m["predicted"] == "contradiction_fork"]
    assert rule["unrelated"] == sum(p.label == "new_branch" for p in pairs)
    assert rule["wrong_invalidations"] == len(invalidated)
    assert rule["wrong_invalidations_per_50"] == pytest.approx(50 * len(invalidated) / rule["unrelated"])
    only_tune = bench(settings=Settings(validator="rule"), use_llm=False, pairs_path=REPHRASED_PAIRS, split="tune")
    assert only_tune["pairs"] == tune and only_tune["runs"][0]["correct"] == tune_s["correct"]


def test_a_duplicate_that_states_something_the_target_lacks_is_kept(openai_stub):
    """Refusing a write as a repeat loses its content: a model's duplicate is applied only when the new
    sentence names no name or number the target lacks and the value it read is in the target."""
    old = cand("Ravi Iyer is mentoring Maren Holt.")
    cases = [
        ("Maren Holt thanked Ravi Iyer for the help with Harrow.",
         answer("duplicate", "m1", subject="Maren Holt", relation="mentor", value="Ravi Iyer"), "'harrow'"),
        ("Ravi Iyer fixed a bug in the Atlas search module.",
         answer("duplicate", "m1", subject="Ravi Iyer", relation="work", value="Maren Holt"), "'atlas'"),
        ("Ravi Iyer is mentoring Maren Holt on 3 projects.",
         answer("duplicate", "m1", subject="Ravi Iyer", relation="mentee", value="Maren Holt"), "'3'"),
        ("Ravi Iyer is coaching Maren Holt in chess.",
         answer("duplicate", "m1", subject="Ravi Iyer", relation="mentee", value="chess"), "'chess' is not in"),
    ]
    for new, scripted, why in cases:
        openai_stub.script(scripted)
        d = validator(openai_stub).decide(incoming(new), [old])
        assert (d.kind, d.target_id) == ("new_branch", None), new
        assert d.reason.startswith("duplicate not applied") and why in d.reason, d.reason
    # A true repeat in other words is still refused as one.
    openai_stub.script(answer("duplicate", "m1", subject="Maren Holt", relation="mentor", value="Ravi Iyer"))
    d = validator(openai_stub).decide(incoming("Maren Holt's mentor is Ravi Iyer."), [old])
    assert (d.kind, d.target_id) == ("duplicate", old.id)
    # Function words of the model's value ("each") need not be in the target; numbers compare by value.
    for existing, new, value in [
        ("The all-hands is on the first Monday of the quarter.", "We hold the all-hands on the first Monday of "
         "each quarter.", "first Monday of each quarter"),
        ("Delphine Aubert's salary is 72,000 euros a year.", "Delphine Aubert earns €72k annually.", "€72k"),
    ]:
        old = cand(existing)
        openai_stub.script(answer("duplicate", "m1", subject="x", relation="y", value=value))
        d = validator(openai_stub).decide(incoming(new), [old])
        assert (d.kind, d.target_id) == ("duplicate", old.id), d.reason


def test_a_change_between_two_attributes_of_one_person_is_not_applied(openai_stub):
    """The model "corrects" one attribute of a person with a sentence about another: read by the subject
    and the values the model names itself, the two relations are far apart, so the change is refused and
    both stay live. A correction in other words of one attribute is applied; a value the model worked out
    (not in the sentence) leaves nothing to read, so the check does not hold it back."""
    cases = [
        ("Kwabena Osei's birthday dinner is booked at Casa Lume.", "Kwabena Osei is learning to play the piano.",
         answer("contradiction_fork", "m1", subject="Kwabena Osei", relation="activity", value="piano",
                target_value="Casa Lume")),
        # the old value copied with its key from the prompt's "(key: ...)" hint (seen on the real stream)
        ("Kwabena Osei's birthday dinner is booked at Casa Lume.", "Kwabena Osei is learning to play the piano.",
         answer("contradiction_fork", "m1", subject="Kwabena Osei", relation="learning", value="piano",
                target_value="birthday_dinner_booked = Casa Lume")),
        ("Maren Holt drives a green Skoda Octavia.", "Maren Holt keeps a pair of rabbits at home.",
         answer("contradiction_fork", "m1", subject="Maren Holt", relation="pet", value="pair of rabbits",
                target_value="green Skoda Octavia")),
        ("Maren Holt is mentoring Ravi Iyer.", "Ravi Iyer is mentoring Ines Carvalho.",
         answer("contradiction_fork", "m1", subject="Ravi Iyer", relation="mentor", value="Ines Carvalho",
                target_value="Ravi Iyer")),
        ("Ines Carvalho's sister is called Priya.", "Ines Carvalho is mentoring Priya.",
         answer("duplicate", "m1", subject="Ines Carvalho", relation="mentee", value="Priya", target_value="Priya")),
    ]
    for existing, new, scripted in cases:
        openai_stub.script(scripted)
        d = validator(openai_stub).decide(incoming(new), [cand(existing)])
        assert (d.kind, d.target_id) == ("new_branch", None), new
        assert d.reason.startswith(f"{scripted['kind']} not applied: "), d.reason
        assert "relation similarity" in d.reason or "the old value it names is the subject" in d.reason, d.reason
    for existing, new, scripted in [
        ("Amara Draycott lives in Lisbon.", "Home for Amara Draycott is Tallinn.",
         answer("contradiction_fork", "m1", subject="Amara Draycott", relation="home_city", value="Tallinn",
                target_value="Lisbon")),
        ("The weekly sync is on Monday at 10am.", "We now meet for the weekly sync an hour later.",
         answer("contradiction_fork", "m1", subject="weekly sync", relation="time", value="Monday at 11am",
                target_value="Monday at 10am")),
    ]:
        old = cand(existing)
        openai_stub.script(scripted)
        d = validator(openai_stub).decide(incoming(new), [old])
        assert (d.kind, d.target_id) == ("contradiction_fork", old.id), d.reason
    # The floor is a setting of the validator.
    old = cand(cases[0][0])
    openai_stub.script(cases[0][2])
    d = validator(openai_stub, min_relation_similarity=0.2).decide(incoming(cases[0][1]), [old])
    assert (d.kind, d.target_id) == ("contradiction_fork", old.id)


def test_a_change_to_a_fact_the_rules_read_apart_is_not_applied(openai_stub):
    """Rules first: the model is asked because one neighbour is unreadable, and names as its target another
    neighbour the rules read for sure as a separate fact (another attribute by the lexicon). The rules'
    sure reading stands: no invalidation. The model alone (no rules) is not held to it."""
    from fabric.placement.rules import RuleValidator

    new = incoming("Maren Holt works at Fernhill Labs.")
    home, cello = cand("Maren Holt lives in Porto.", 0.8), cand("Maren Holt is learning to play the cello.", 0.7)
    rules = RuleValidator()
    assert rules.verdict(new, home) == "separate" and rules.verdict(new, cello) == "unknown"
    scripted = lambda body: answer("contradiction_fork", label_of(body, "Porto"), subject="Maren Holt",  # noqa: E731
                                   relation="location", value="Fernhill Labs", target_value="Porto")
    openai_stub.script(scripted)
    d = validator(openai_stub, rules=rules).decide(new, [home, cello])
    assert openai_stub.count == 1 and d.called
    assert (d.kind, d.target_id) == ("new_branch", None)
    assert "not applied: the rules read the two sentences as separate facts" in d.reason, d.reason
    openai_stub.script(scripted)
    d = validator(openai_stub).decide(new, [home, cello])
    assert (d.kind, d.target_id) == ("contradiction_fork", home.id), d.reason
