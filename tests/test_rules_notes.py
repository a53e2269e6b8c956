"""Round 10 of the rule validator: terse notes and chat notes as users write them ("HQ -> Bergen", "New boss:
Dana Reyes", "Rent: 1,200/mo", "left Stripe", "Just started at Figma") read as the fact they state, so a
correction between a note and a sentence is seen; a team's tools ("we use Postgres") are many at once, and
"switched / migrated / moved to" replaces the one of its kind. Sentences written here; the real embedding model."""

from __future__ import annotations

import pytest

from fabric.placement.align import canonical
from fabric.placement.facts import extract, keyable
from fabric.placement.states import state
from tests.fix_placement import decide


@pytest.mark.parametrize("text, read", [
    ("Nordlys HQ: Tromsø", "Nordlys HQ is Tromsø"),
    ("Nordlys HQ -> Bergen", "Nordlys HQ is now Bergen"),
    ("HQ → Bergen", "Team's HQ is now Bergen"),  # an attribute of the user's team
    ("Budget: $20k", "Team's budget is $20k"),
    ("Stack: Postgres", "Team uses Postgres"),
    ("Atlas DB -> MySQL", "Atlas switched to MySQL"),
    ("New boss: Dana Reyes", "User's new boss is Dana Reyes"),
    ("Atlas budget = $15k", "Atlas budget is $15k"),
    ("Rent: 1,200/mo", "User's rent is 1,200 monthly"),
    ("left Stripe", "User no longer works at Stripe"),
    ("Quit Stripe today.", "User no longer works at Stripe today."),
    ("Left Stripe 😢", "User no longer works at Stripe 😢"),
    ("New job: Figma", "User works at Figma"),
    ("Employer -> Figma", "User now works at Figma"),
    ("moved back to Lisbon", "User moved to Lisbon"),
    # labels before a sentence, a head no attribute of the user's, more than a note: left as written
    ("Update: Nordlys is moving to Bergen.", "Update: Nordlys is moving to Bergen."),
    ("Reminder: call Dana", "Reminder: call Dana"),
    ("Starting Monday, Dana Reyes leads Atlas.", "Starting Monday, Dana Reyes leads Atlas."),
    ("starting a new job at Figma on Monday", "User starting working at Figma on Monday"),
    ("Lunch: pizza", "Lunch: pizza"),
    ("Ask anyone at Ostara Labs: Ada works there", "Ask anyone : Ada works at Ostara Labs"),
])
def test_a_note_is_read_as_the_sentence_it_stands_for(text, read):
    assert canonical(text) == read


@pytest.mark.parametrize("text, key", [
    ("Nordlys HQ -> Bergen", ("nordlys", "headquarters", "bergen")),
    ("New boss: Dana Reyes", ("user", "manager", "dana reyes")),
    ("Rent: 1,200/mo", ("user", "rent", "1200")),
    ("Started at Figma today!", ("user", "employer", "figma")),
    ("Just started at Figma", ("user", "employer", "figma")),
    ("moved back to Lisbon", ("user", "home_city", "lisbon")),
])
def test_a_note_keys_its_fact(text, key):
    fact = extract(text)
    assert fact is not None and keyable(fact)
    assert (fact.subject_key, fact.relation, fact.value_key) == key


def test_a_plan_or_an_end_keys_nothing():
    # decided: a start told as a plan is not the value now; the note that it holds ("Started at Figma today!")
    # is the correction
    for text in ("starting a new job at Figma on Monday", "I'm going to start at Figma next week."):
        assert not keyable(extract(text)), text
    left = extract("left Stripe")
    assert left is not None and left.negated and not keyable(left)


def test_a_status_note():
    done = state("Orion migration: done ✅")
    assert done is not None and (done.attribute, done.value, done.subject) == ("status", "done", "orion migration")


def forks(rules, embedder, old: str, new: str):
    """The new text supersedes the old one; returns the decision."""
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason
    return d


@pytest.mark.parametrize("old, new, key", [
    ("Nordlys is headquartered in Tromsø.", "Nordlys HQ -> Bergen", ("Nordlys", "headquarters", "Bergen")),
    ("Nordlys HQ: Tromsø", "Nordlys moved its headquarters to Bergen.", ("Nordlys", "headquarters", "Bergen")),
    ("HQ: Tromsø", "Our HQ moved to Bergen.", ("Team", "headquarters", "Bergen")),
    ("HQ: Tromsø", "We're headquartered in Bergen now.", ("Team", "headquarters", "Bergen")),
    ("Our budget is $15k.", "Budget: $20k", ("Team", "budget", "$20k")),
    ("My manager is Piet Claes.", "New boss: Dana Reyes", ("User", "manager", "Dana Reyes")),
    ("New boss: Dana Reyes", "I report to Piet Claes now.", ("User", "manager", "Piet Claes")),
    ("The Atlas budget is $12,000.", "Atlas budget = $15k", ("Atlas", "budget", "$15k")),
    ("My rent is 1,100 a month.", "Rent: 1,200/mo", ("User", "rent", "1,200")),
    ("I work at Stripe.", "Started at Figma today!", ("User", "employer", "Figma")),
    ("The user works at Stripe.", "Just started at Figma", ("User", "employer", "Figma")),
    ("I work at Stripe.", "New job: Figma", ("User", "employer", "Figma")),
    ("I live in Porto.", "moved back to Lisbon", ("User", "home_city", "Lisbon")),
])
def test_a_note_corrects_a_sentence_and_back(rules, embedder, old, new, key):
    d = forks(rules, embedder, old, new)
    assert (d.subject, d.relation, d.value) == key


@pytest.mark.parametrize("old, new", [
    ("The Orion migration is in progress.", "Orion migration: done ✅"),
    ("Orion migration: done ✅", "The Orion migration is on hold again."),
    ("The Orion migration is underway.", "Orion migration -> on hold"),
])
def test_a_status_note_corrects_a_status(rules, embedder, old, new):
    forks(rules, embedder, old, new)


def test_a_job_note_restated_is_no_correction(rules, embedder):
    d, target = decide(rules, embedder, "Just started at Figma", "I work at Figma now.", pregated=True)
    assert d.kind in ("duplicate", "child_update") and target == "Just started at Figma", d.reason


@pytest.mark.parametrize("old, new", [
    ("I work at Stripe.", "left Stripe"),
    ("Teo Vance works at Brindle Bank.", "Teo Vance left Brindle Bank."),  # (until round 9: no correction)
])
def test_leaving_ends_the_job_with_no_new_value(rules, embedder, old, new):
    assert forks(rules, embedder, old, new).subject is None  # no new value to key


@pytest.mark.parametrize("old, new", [
    ("I work at Stripe.", "starting a new job at Figma on Monday"),  # a plan: no correction until it holds
    ("I work at Stripe.", "left Brightwave"),                         # another job ended
    ("My manager is Piet Claes.", "My sister's new boss: Dana Reyes"),
    ("Nordlys HQ: Tromsø", "Halvard HQ -> Bergen"),
])
def test_a_note_about_something_else_corrects_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork", d.reason


# ------------------------------------------------------------------ a team's or a project's tools (item 2)

@pytest.mark.parametrize("old, new", [
    ("we use Postgres", "we switched to MySQL"),
    ("We use Postgres for billing.", "We migrated to MySQL last month."),
    ("Atlas uses Postgres.", "Atlas moved over to MySQL."),
    ("Our team uses Jira.", "we moved to Linear"),
    ("Stack: Postgres", "we migrated to MySQL"),
    ("Atlas uses Postgres.", "Atlas DB -> MySQL"),
    ("The Kestrel repo uses Node 18.", "The Kestrel repo uses Node 20."),  # the same tool, another version
    ("We use Postgres.", "We now use MySQL."),
])
def test_a_switch_replaces_the_tool(rules, embedder, old, new):
    forks(rules, embedder, old, new)


@pytest.mark.parametrize("old, new", [
    ("we use Postgres", "we use Redis"),                    # many tools at once
    ("Our team uses Slack for chat.", "Our team uses Notion for documentation."),
    ("we use Postgres", "we switched to Linear"),           # another kind of tool
    ("we use Postgres", "we switched to Fly.io"),           # a tool of no known kind: which one it replaced is a guess
    ("we use Postgres", "we now use Redis too"),
    ("Atlas uses Postgres.", "Orion migrated to MySQL."),   # another project
    ("we use Postgres", "We moved to Lisbon."),             # a move of home, no tool
])
def test_tools_of_many_or_of_another_kind_stay_apart(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork", d.reason


def test_the_same_tool_restated_is_no_correction(rules, embedder):
    d, target = decide(rules, embedder, "we switched to MySQL", "We use MySQL.", pregated=True)
    assert d.kind in ("duplicate", "child_update") and target == "we switched to MySQL", d.reason
