"""Restated facts in plain text (issue 10): the rule validator reads (subject, relation, value) out of
each sentence (fabric/placement/facts.py) and places versions of one fact written in other words.
Similarities come from the real embedding model, as in the worker (fixtures: tests/fix_placement.py)."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from fabric.placement.facts import compare, extract, names, number_key
from fabric.placement.validator import Candidate, IncomingWrite, pregate
from tests.fix_placement import decide

T_OLD = datetime(2021, 1, 1, tzinfo=timezone.utc)
T_NEW = datetime(2024, 1, 1, tzinfo=timezone.utc)


def place(rules, embedder, existing: str | list[str], new: str, *, new_from=T_NEW, old_from=T_OLD):
    """The decision for text-only `new` beside live `existing` memories, through the pre-gates."""
    return decide(rules, embedder, existing, new, old_from=old_from, new_from=new_from, pregated=True)


# The table, and more ways people restate a fact: (first write, later write).
CHANGED_VALUE = [
    ("Nadia Holmqvist is the chief executive of Halcyon Robotics.",
     "Halcyon Robotics is led by chief executive Soren Yarrow."),
    ("Nadia Holmqvist is the chief executive of Halcyon Robotics.",
     "Soren Yarrow is the chief executive of Halcyon Robotics."),
    ("Amara Draycott lives in Lisbon.", "Home for Amara Draycott is Tallinn."),
    ("Copperline Foods is on the Growth plan.", "The billing plan of Copperline Foods is Scale."),
    ("The favourite film of Pavel Ibarra is Paper Harbour.",
     "Pavel Ibarra loves Copper Skies more than any other film."),
    ("Halcyon Robotics has Nadia Holmqvist as its CEO.", "Soren Yarrow now heads Halcyon Robotics."),
    ("Amara Draycott resides in Lisbon.", "Tallinn is where Amara Draycott lives these days."),
    ("Amara Draycott lives in Lisbon.", "Amara Draycott is based in Tallinn."),
    ("Project Falcon's budget is $2 million.", "The budget for Project Falcon is 3,500,000 dollars."),
    ("Tomasz Wren works at Kestrel Dynamics.", "Ostara Labs employs Tomasz Wren."),
    ("Ada Moreau reports to Jonathan Hale.", "Ada Moreau's manager is Priya Nair."),
    ("Bramble Data is headquartered in Riga.", "The head office of Bramble Data is in Vilnius."),
    ("Halcyon Robotics' CEO is Nadia Holmqvist.", "Update: the CEO of halcyon robotics is now Mira Olsen."),
    ("Pavel Ibarra's favourite film is Paper Harbour.", "Copper Skies is the film Pavel Ibarra loves most."),
    ("Halcyon Robotics' CEO is Nadia Holmqvist.",
     "Halcyon Robotics' chief executive is now Soren Yarrow, replacing Nadia Holmqvist."),
    ("Copperline Foods is on the Growth plan.", "Scale is the plan Copperline Foods is billed on."),
    ("Helen Park is the CFO of Initech.", "Initech's finance chief is Raj Patel."),
    ("Copperline Foods is on the Growth plan.", "Copperline Foods switched to the Scale plan."),
    ("Tomasz Wren works at Kestrel Dynamics.", "Ostara Labs hired Tomasz Wren."),
    ("Nadia Holmqvist is the chief executive of Halcyon Robotics.",
     "Soren Yarrow succeeded Nadia Holmqvist as CEO of Halcyon Robotics."),
    ("Bramble Data is headquartered in Riga.", "Bramble Data's head office is located in Vilnius."),
    ("Ada Moreau reports to Jonathan Hale.", "Priya Nair is Ada Moreau's line manager."),
]

SAME_VALUE = [
    ("Nadia Holmqvist is the chief executive of Halcyon Robotics.", "Halcyon Robotics is led by Nadia Holmqvist."),
    ("Amara Draycott lives in Lisbon.", "Lisbon is home to Amara Draycott."),
    ("Copperline Foods is on the Growth plan.", "The billing plan of copperline foods is growth."),
    ("The favourite film of Pavel Ibarra is Paper Harbour.", "Paper Harbour is Pavel Ibarra's favourite film."),
    ("Project Falcon's budget is $2 million.", "Project Falcon has a budget of $2M."),
    ("Project Falcon's budget is $2 million.", "The budget for Project Falcon is 2,000,000 dollars."),
]

MORE_DETAIL = [
    ("Amara Draycott lives in Lisbon.", "Home for Amara Draycott is Lisbon, in a flat near the botanical garden."),
    ("Amara Draycott lives in Lisbon.", "Home for Amara Draycott is a flat near the river in Lisbon."),
    ("Alice Moreau works at Acme.", "Alice Moreau works at Acme in the Berlin office."),  # a name as a modifier
    ("Nadia Holmqvist is the chief executive of Halcyon Robotics.",
     "Halcyon Robotics is led by Nadia Holmqvist, who also chairs the audit committee."),
]

ANOTHER_FACT = [
    ("Tomasz Wren lives in Lisbon.", "Tomasz Reyes lives in Porto."),                       # name twins
    ("The favourite film of Tomasz Wren is Paper Harbour.",
     "Tomasz Reyes loves Copper Skies more than any other film."),
    ("Amara Draycott lives in Lisbon.", "Amara Draycott works at Halcyon Robotics."),       # another attribute
    ("Halcyon Robotics is headquartered in Porto.", "Halcyon Robotics opened a showroom in Lisbon."),  # multi-valued
    ("Halcyon Robotics opened a showroom in Lisbon.", "Halcyon Robotics opened a showroom in Madrid."),
    ("Halcyon Robotics is headquartered in Porto.", "Halcyon Labs is headquartered in Lisbon."),  # sister company
    ("Ada Moreau reports to Jonathan Hale.", "Jonathan Hale reports to Priya Nair."),      # a manager chain
    ("Ada Moreau reports to Jonathan Hale.", "Jonathan Hale reports to Ada Moreau."),      # swapped roles
    ("Nadia Holmqvist is the chief executive of Halcyon Robotics.",
     "Nadia Holmqvist is the chief executive of Halcyon Labs."),                          # one CEO, two firms
]


# Turns of a conversation that mention the same people, places and relation words, each a distinct fact.
CONVERSATION = [
    ("Amara Draycott lives in Lisbon.", "Amara Draycott worked from home in Porto on Monday."),
    ("Amara Draycott lives in Lisbon.", "Amara Draycott heads to Tallinn next week for a workshop."),
    ("Amara Draycott lives in Lisbon.", "Amara Draycott's sister lives in Madrid."),
    ("Amara Draycott works at Halcyon Robotics.", "Amara Draycott's brother works at Ostara Labs."),
    ("Amara Draycott works at Halcyon Robotics.", "Amara Draycott joined the Lisbon book club."),
    ("Priya Nair is the chief executive of Halcyon Robotics.",
     "Priya Nair leads the Halcyon Robotics board meeting on Friday."),
    ("Jonathan Hale reports to Priya Nair.", "Jonathan Hale's manager praised the Riga launch."),
    ("Copperline Foods is on the Scale plan.", "Copperline Foods complained about the Growth plan pricing."),
    ("Tom Becker drives a Toyota Corolla.", "Tom Becker's car broke down near Leeds."),
    ("Jonathan Hale lives in Porto.", "Jonathan Hale lived in Riga before moving to Porto."),
]


@pytest.mark.parametrize("old,new", CONVERSATION)
def test_a_conversation_turn_is_neither_a_correction_nor_a_repeat(rules, embedder, old, new):
    d, _ = place(rules, embedder, old, new)
    assert d.kind == "new_branch", d.reason


@pytest.mark.parametrize("old,new", CHANGED_VALUE)
def test_a_restated_fact_with_another_value_is_a_contradiction(rules, embedder, old, new):
    d, target = place(rules, embedder, old, new)
    assert (d.kind, target) == ("contradiction_fork", old), d.reason
    assert d.subject and d.relation and d.value, "a text-only correction carries the key it states"


@pytest.mark.parametrize("old,new", SAME_VALUE)
def test_a_restated_fact_with_the_same_value_is_a_duplicate(rules, embedder, old, new):
    d, target = place(rules, embedder, old, new)
    assert (d.kind, target) == ("duplicate", old), d.reason


@pytest.mark.parametrize("old,new", MORE_DETAIL)
def test_a_restated_fact_with_more_detail_is_a_child_update(rules, embedder, old, new):
    d, target = place(rules, embedder, old, new)
    assert (d.kind, target) == ("child_update", old), d.reason


@pytest.mark.parametrize("old,new", ANOTHER_FACT)
def test_another_subject_attribute_or_site_stays_a_separate_branch(rules, embedder, old, new):
    d, _ = place(rules, embedder, old, new)
    assert d.kind == "new_branch", d.reason


def test_the_version_is_found_among_facts_about_other_subjects(rules, embedder):
    olds = ["Tomasz Wren lives in Lisbon.", "Tomasz Reyes lives in Lisbon.", "Amara Draycott lives in Lisbon.",
            "Amara Draycott works at Halcyon Robotics."]
    d, target = place(rules, embedder, olds, "Home for Tomasz Reyes is Porto.")
    assert (d.kind, target) == ("contradiction_fork", "Tomasz Reyes lives in Lisbon.")
    assert (d.subject, d.relation, d.value) == ("Tomasz Reyes", "home_city", "Porto")


def test_one_relation_name_per_attribute_whatever_the_words(rules, embedder):
    ceo = ["Nadia Holmqvist is the chief executive of Halcyon Robotics.", "Halcyon Robotics is led by Soren Yarrow.",
           "Soren Yarrow heads Halcyon Robotics.", "Halcyon Robotics has Mira Olsen as its CEO.",
           "The CEO of Halcyon Robotics is Mira Olsen."]
    assert {(f.subject, f.relation) for f in map(extract, ceo)} == {("Halcyon Robotics", "ceo")}
    # A neighbour that already carries a key lends its names: the org's vocabulary wins over the lexicon's.
    vec = embedder.embed(["Halcyon Robotics is led by Soren Yarrow.", ceo[0]])
    cid = uuid.uuid4()
    keyed = Candidate(id=cid, content=ceo[0], similarity=float(vec[0] @ vec[1]), valid_from=T_OLD, valid_to=None,
                      parent_id=None, root_id=cid, depth=0, version=1, subject="Halcyon Robotics",
                      relation="chief_executive", value="Nadia Holmqvist")
    write = IncomingWrite(id=uuid.uuid4(), org="t", content="Halcyon Robotics is led by Soren Yarrow.",
                          valid_from=T_NEW)
    d = rules.decide(write, [keyed])
    assert (d.kind, d.subject, d.relation, d.value) == ("contradiction_fork", "Halcyon Robotics",
                                                        "chief_executive", "Soren Yarrow")


def test_a_first_text_write_gets_its_key_from_the_pregate():
    write = IncomingWrite(id=uuid.uuid4(), org="t", content="Amara Draycott lives in Lisbon.", valid_from=T_NEW)
    d = pregate(write, [], near_similarity=0.55)
    assert (d.kind, d.subject, d.relation, d.value) == ("new_branch", "Amara Draycott", "home_city", "Lisbon")


def test_the_same_value_from_an_earlier_time_is_history_not_a_duplicate(rules, embedder):
    old = "Ada Moreau works at Contoso."
    for new in (old, "Contoso employs Ada Moreau."):   # the exact words (pre-gate) and a rewording
        d, target = place(rules, embedder, old, new, new_from=datetime(2020, 1, 1, tzinfo=timezone.utc),
                          old_from=datetime(2024, 1, 1, tzinfo=timezone.utc))
        assert (d.kind, target) == ("contradiction_fork", old) and "history" in d.reason
    d, _ = place(rules, embedder, old, old, new_from=datetime(2025, 1, 1, tzinfo=timezone.utc),
                 old_from=datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert d.kind == "duplicate"


def test_names_numbers_and_roles():
    assert [s.text for s in names("Home for Amara Draycott is Tallinn.")] == ["Amara Draycott", "Tallinn"]
    assert [s.text for s in names("Update: The CEO of Halcyon Robotics' parent is Mira Olsen.")] == [
        "Halcyon Robotics", "Mira Olsen"]
    assert number_key("$2M") == number_key("2 million") == number_key("2,000,000 dollars") == "2000000"
    assert number_key("1,5") is None and number_key("Lisbon") is None
    f = extract("Soren Yarrow heads Halcyon Robotics.")
    assert (f.subject, f.relation, f.value) == ("Halcyon Robotics", "ceo", "Soren Yarrow")
    f = extract("Kestrel Dynamics employs Tomasz Wren.")
    assert (f.subject, f.relation, f.value) == ("Tomasz Wren", "employer", "Kestrel Dynamics")
    assert extract("The weather is nice today.") is None
    assert extract("Amara Draycott plays the cello.") is None  # not in the lexicon: no guess
    # Unsure is separate: a negated value is never a correction to another value.
    assert compare(extract("Amara Draycott lives in Lisbon."),
                   extract("Amara Draycott does not live in Porto.")) == "separate"
    assert compare(extract("Amara Draycott lives in Lisbon."),
                   extract("Amara Draycott no longer lives in Lisbon.")) == "contradiction_fork"


def test_keyed_values_compare_as_numbers_and_names_do(rules, embedder):
    d, _ = decide(rules, embedder, "Project Falcon's budget is $2M.",
                  "Project Falcon has a budget of 2 million dollars.",
                  key=("Project Falcon", "budget", "2 million"), old_key=("Project Falcon", "budget", "$2M"))
    assert d.kind == "duplicate", d.reason
    d, _ = decide(rules, embedder, "Project Falcon's budget is $2M.", "Project Falcon's budget is $3M.",
                  key=("Project Falcon", "budget", "$3M"), old_key=("Project Falcon", "budget", "$2M"))
    assert d.kind == "contradiction_fork", d.reason
