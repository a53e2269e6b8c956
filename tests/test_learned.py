"""The learned second opinion (fabric/placement/learned.py): its features, that it only ever revisits a new
branch (the rules' or the pre-gate's), and its traps. Real embedding model (fixtures: tests/fix_placement.py);
decisions through the worker's own path (`fabric.write.apply.decide`: pre-gates, validator, second opinion)."""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from pathlib import Path

import pytest

from fabric.config import Settings
from fabric.placement import learned
from fabric.placement.learned import FEATURES, VERDICTS, features
from fabric.placement.rules import RuleValidator
from fabric.placement.validator import Candidate, IncomingWrite
from fabric.write.apply import decide
from tests.fix_placement import T0, T1

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "train_placement_model.py"


def feature(old: str, new: str, name: str, similarity: float = 0.8, verdict: str = "unknown") -> float:
    return features(old, new, similarity, verdict)[FEATURES.index(name)]


def rules_of(second_opinion: bool) -> RuleValidator:
    s = Settings()
    return RuleValidator(near_similarity=s.near_similarity, duplicate_similarity=s.duplicate_similarity,
                         second_opinion=second_opinion)


def place(validator, embedder, existing: str | list[str], new: str, *, keyed: bool = False):
    """`new` decided beside `existing` memories with real cosines, as the worker decides it."""
    olds = [existing] if isinstance(existing, str) else existing
    vecs = embedder.embed([new, *olds])
    cands = []
    for text, vec in zip(olds, vecs[1:]):
        cid = uuid.uuid4()
        cands.append(Candidate(id=cid, content=text, similarity=float(vecs[0] @ vec), valid_from=T0, valid_to=None,
                               parent_id=None, root_id=cid, depth=0, version=1))
    cands.sort(key=lambda c: -c.similarity)
    key = dict(subject="Amara", relation="home_city", value="Tallinn") if keyed else {}
    write = IncomingWrite(id=uuid.uuid4(), org="t", content=new, valid_from=T1, **key)
    d = decide(write, cands, validator, near_similarity=validator.near_similarity)
    return d, {c.id: c.content for c in cands}.get(d.target_id)


def test_words_names_and_figures_are_counted_shared_and_on_each_side():
    old, new = "Ella is a size 4 shoe.", "Ella wears a 5 in shoes."
    assert feature(old, new, "names_shared") == 1 and feature(old, new, "a_name_shared") == 1.0
    assert (feature(old, new, "figures_old"), feature(old, new, "figures_new")) == (1, 1)
    assert feature(old, new, "words_shared") >= 1  # "shoe" / "shoes": one stem
    assert feature("The cafe opens at 9.", "The cafe opens at 9.", "figures_shared") == 1
    assert feature("the office dog is a beagle", "the office dog is a spaniel", "no_names") == 1.0


def test_one_sided_cues_are_one_sided():
    assert feature("Amara lives in Lisbon.", "Amara moved to Tallinn.", "change_new") == 1.0
    assert feature("Amara moved to Lisbon.", "Amara moved to Tallinn.", "change_old") == 1.0
    assert feature("The cafe is open on Sundays.", "The cafe is not open on Sundays.", "negation_differs") == 1.0
    assert feature("User drives a Kia Niro.", "User's wife drives a Kia Niro.", "relative_new") == 1.0
    assert feature("I live in Cork.", "I might move to Galway next year.", "hypothetical_new") == 1.0
    assert feature("Annika heads marketing at Yarrow.", "Annika was head of marketing at Saltash from 2012 to 2016.",
                   "past_new") == 1.0
    assert feature("I live in Lisbon.", "My home is in Tallinn now.", "first_person_both") == 1.0
    assert feature("I live in Lisbon.", "Amara Draycott lives in Tallinn.", "first_person_both") == 0.0


def test_the_rules_verdict_is_one_input_of_one_hot():
    x = features("a", "b", 0.5, "separate")
    assert [x[FEATURES.index(f"rules_{v}")] for v in VERDICTS] == [0.0, 1.0, 0.0, 0.0, 0.0]


def test_the_model_proposes_a_kind_only_above_its_threshold():
    m = learned.model()
    assert set(m.thresholds) == {"duplicate", "child_update", "contradiction_fork"}
    x = learned.rounded(features("Amara Draycott lives in Lisbon.", "Amara Draycott lives in Lisbon.", 1.0,
                                 "duplicate"))
    p = m.probabilities(x)
    assert abs(sum(p.values()) - 1) < 1e-9
    kind, prob = m.verdict(x)
    assert kind == max(p, key=lambda k: p[k]) or kind == "new_branch"
    strict = learned.Model(m.mean, m.scale, m.weights, m.bias, {k: 1.01 for k in m.thresholds})
    assert strict.verdict(x)[0] == "new_branch"  # a threshold above 1: never proposed


@pytest.mark.parametrize("existing,new", [
    ("Tomasz Wren works at Kestrel Dynamics as a data engineer.",
     "Tomasz Reyes works at Kestrel Dynamics as a data engineer."),
    ("Halcyon Robotics is headquartered in Oslo.", "Halcyon Labs is headquartered in Bergen."),
    ("Ada Moreau reports to Jonathan Hale.", "Jonathan Hale reports to Priya Nair."),
    ("User drives a Kia Niro.", "User's wife drives a Kia Niro."),
    ("I live in Cork.", "I might move to Galway next year if the job comes through."),
    ("Jonas Becker lives in Hamburg.", "Jonas Becker is thinking about moving to Munich next year."),
])
def test_traps_stay_new_branches(embedder, existing, new):
    d, _ = place(rules_of(True), embedder, existing, new)
    assert d.kind == "new_branch", d.reason


def test_the_model_only_revisits_a_new_branch(embedder):
    pairs = [("Amara Draycott lives in Lisbon.", "Amara Draycott is based in Tallinn."),
             ("Rose Baker works at Deloitte.", "Deloitte is Rose Baker's employer."),
             ("Kwame Mensah works at Ecobank.", "Kwame Mensah works at Ecobank in Accra, in the treasury team."),
             ("I have a dog.", "My dog is a three-year-old collie called Pip."),
             ("The Lyon office opens at 9am.", "The Lyon office opens at 9am.")]
    for existing, new in pairs:
        plain, _ = place(rules_of(False), embedder, existing, new)
        second, _ = place(rules_of(True), embedder, existing, new)
        if plain.kind != "new_branch" or plain.reason.startswith("exact repeat"):
            assert (second.kind, second.reason) == (plain.kind, plain.reason)


def test_a_keyed_write_is_never_reconsidered(embedder):
    d, _ = place(rules_of(True), embedder, "Amara Draycott's place is in Lisbon.", "Home for Amara is Tallinn.",
                 keyed=True)
    assert "learned" not in d.reason


@pytest.mark.parametrize("existing,new,kind", [
    ("The export job times out after 30 seconds.", "Timeout bumped to 60s on the export job.", "contradiction_fork"),
    ("Primary region: us-east-1", "We've migrated the primary region to us-west-2.", "contradiction_fork"),
    ("My parking bay at the office is number 14.", "I park in bay 14 at work.", "duplicate"),
    ("Redis maxmemory is 4GB.", "Redis maxmemory: 4 GB, allkeys-lru eviction, alert fires at 80%.", "child_update"),
])
def test_versions_the_rules_miss_are_read_with_the_model(embedder, existing, new, kind):
    """Open v8 pairs (trained on) that the rules alone leave as new branches."""
    plain, _ = place(rules_of(False), embedder, existing, new)
    second, target = place(rules_of(True), embedder, existing, new)
    assert plain.kind == "new_branch"
    assert (second.kind, target) == (kind, existing), second.reason
    assert "learned second opinion" in second.reason and second.validator in ("rule", "pregate")


def _trainer():
    spec = importlib.util.spec_from_file_location("train_placement_model", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_the_committed_model_is_trained_on_the_current_inputs():
    """The model file records a checksum of what made it (the sets, the features, the script); a change
    to any of them needs `python scripts/train_placement_model.py` (--check retrains and compares)."""
    data = json.loads(learned.MODEL_FILE.read_text())
    assert data["features"] == list(FEATURES)
    assert data["inputs_sha256"] == _trainer().inputs_sha256()
    assert not any("v7" in f for f in data["trained_on"])  # the blind sets stay blind


def test_the_setting_is_on_by_default_and_turns_it_off():
    from fabric.write.placer import make_validator

    assert make_validator(Settings(), "rule").second_opinion is True  # type: ignore[attr-defined]
    assert make_validator(Settings(learned_second_opinion=False), "rule").second_opinion is False  # type: ignore[attr-defined]
