"""The learned second opinion (fabric/placement/learned.py): its features, its guards, and that it only
ever revisits a rule's "no frame match" new branch. Real embedding model (fixtures: tests/fix_placement.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from fabric.config import Settings
from fabric.placement import learned
from fabric.placement.learned import FEATURES, compare_words, features, frame_similarity
from fabric.placement.rules import RuleValidator
from tests.fix_placement import decide

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "train_placement_model.py"


def feature(old: str, new: str, name: str, similarity: float = 0.8) -> float:
    return features(old, new, similarity)[FEATURES.index(name)]


@pytest.fixture(scope="module")
def learning() -> RuleValidator:
    s = Settings()
    return RuleValidator(near_similarity=s.near_similarity, duplicate_similarity=s.duplicate_similarity,
                         second_opinion=True)


def test_names_are_counted_shared_and_on_each_side():
    c = compare_words("Nadia Holmqvist is the chief executive of Halcyon Robotics.",
                      "Halcyon Robotics is led by chief executive Soren Yarrow.")
    assert (c.names_shared, c.names_old, c.names_new) == (1, 1, 1)
    assert c.same_subject  # the subject leads one sentence and closes the other


def test_twins_and_sister_companies_are_not_one_subject():
    assert not compare_words("Tomasz Wren works at Kestrel Dynamics.", "Tomasz Reyes works at Kestrel Dynamics."
                             ).same_subject
    assert not compare_words("Halcyon Robotics is based in Oslo.", "Halcyon Labs is based in Bergen.").same_subject


def test_first_person_on_both_sides_is_one_subject():
    assert compare_words("I live in Lisbon.", "My home is in Tallinn now.").same_subject
    assert feature("I live in Lisbon.", "My home is in Tallinn now.", "first_person_both") == 1.0
    assert feature("I live in Lisbon.", "Amara Draycott lives in Tallinn.", "first_person_both") == 0.0


def test_numbers_are_compared_written_one_way():
    c = compare_words("The budget of Project Falcon is $2 million.", "Project Falcon's budget is 2,000,000 dollars.")
    assert (c.numbers_old, c.numbers_new) == (0, 0) and c.numbers_shared == 1
    c = compare_words("The budget of Project Falcon is $2 million.", "Project Falcon's budget is $3 million.")
    assert (c.numbers_old, c.numbers_new) == (1, 1)


def test_change_cue_and_negation_are_one_sided():
    assert feature("Amara lives in Lisbon.", "Amara moved to Tallinn.", "change_cue") == 1.0
    assert feature("Amara moved to Lisbon.", "Amara moved to Tallinn.", "change_cue") == 0.0
    assert feature("The cafe is open on Sundays.", "The cafe is not open on Sundays.", "negation_differs") == 1.0


def test_differing_words_are_embedded_and_the_frame_compared():
    same = frame_similarity("Nadia Holmqvist is the chief executive of Halcyon Robotics.",
                            "Soren Yarrow is the chief executive of Halcyon Robotics.")
    other = frame_similarity("Nadia Holmqvist is the chief executive of Halcyon Robotics.",
                             "Nadia Holmqvist plays tennis with Halcyon Robotics staff.")
    assert same > other
    assert feature("Amara Draycott lives in Lisbon.", "Amara Draycott lives in Lisbon.", "span_similarity") == 0.0
    moved = feature("Amara Draycott lives in Lisbon.", "Amara Draycott resides in Tallinn.", "span_similarity")
    assert 0.0 < moved <= 1.0


@pytest.mark.parametrize("existing,new", [
    ("Tomasz Wren works at Kestrel Dynamics as a data engineer.",
     "Tomasz Reyes works at Kestrel Dynamics as a data engineer."),
    ("Halcyon Robotics is headquartered in Oslo.", "Halcyon Labs is headquartered in Bergen."),
    ("Ada Moreau reports to Jonathan Hale.", "Jonathan Hale reports to Priya Nair."),
])
def test_the_model_path_leaves_traps_as_new_branches(learning, embedder, existing, new):
    d, _ = decide(learning, embedder, existing, new, pregated=True)
    assert d.kind == "new_branch", d.reason


def test_the_model_only_revisits_a_rule_new_branch(learning, rules, embedder):
    pairs = [("Amara Draycott lives in Lisbon.", "Amara Draycott is based in Tallinn."),
             ("Rose Baker works at Deloitte.", "Deloitte is Rose Baker's employer."),
             ("Kwame Mensah works at Ecobank.", "Kwame Mensah works at Ecobank in Accra, in the treasury team."),
             ("I have a dog.", "My dog is a three-year-old collie called Pip.")]
    for existing, new in pairs:
        plain, _ = decide(rules, embedder, existing, new, pregated=True)
        second, _ = decide(learning, embedder, existing, new, pregated=True)
        if plain.kind != "new_branch":
            assert (second.kind, second.reason) == (plain.kind, plain.reason)


def test_a_version_the_rules_miss_is_read_with_the_model(learning, rules, embedder):
    """A changed shift, said without a word the rules read (like v5-071, which the model was trained on)."""
    existing, new = "Marisol Quint works the night shift.", "Marisol Quint is on early shifts now."
    plain, _ = decide(rules, embedder, existing, new, pregated=True)
    second, target = decide(learning, embedder, existing, new, pregated=True)
    assert plain.kind == "new_branch"
    assert (second.kind, target) == ("contradiction_fork", existing), second.reason


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


def test_the_setting_turns_it_on_and_it_is_off_by_default():
    from fabric.write.placer import make_validator

    assert make_validator(Settings(), "rule").second_opinion is False  # type: ignore[attr-defined]
    assert make_validator(Settings(learned_second_opinion=True), "rule").second_opinion is True  # type: ignore[attr-defined]
