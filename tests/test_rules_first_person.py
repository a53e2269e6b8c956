"""Round 9 of the rule validator: memories agents write about their user. "I", "me", "my", "the user",
"User" and "user's" name one holder (keyed "User"); "we" / "our" another, the team ("Team"). A
correction told in the first person corrects what was told of the user, and the traps stay apart: a
relative or a friend of the user, a past job, a plan. Sentences written here; the real embedding model."""

from __future__ import annotations

import pytest

from fabric.placement.align import canonical
from fabric.placement.facts import extract, keyable
from fabric.placement.states import state
from tests.fix_placement import decide


@pytest.mark.parametrize("text, read", [
    ("I drive a Tesla now.", "User drives a Tesla now."),
    ("btw I'm vegan now", "btw User is vegan now"),
    ("I still live in Cork.", "User still lives in Cork."),
    ("Honestly, I watch too much TV.", "Honestly, User watches too much TV."),
    ("Kestrel Bank hired me in May.", "Kestrel Bank hired User in May."),
    ("We use Postgres for billing.", "Team uses Postgres for billing."),
    ("Our team moved to Lisbon.", "Team moved to Lisbon."),
    ("Our main database runs Postgres.", "Our main database runs Postgres."),
    # no pronoun: a Roman numeral after a name, "we" inside a clause about an event
    ("World War I ended in 1918.", "World War I ended in 1918."),
    ("On Fridays we hold the sprint demo.", "On Fridays we hold the sprint demo."),
])
def test_the_first_person_is_read_as_the_user(text, read):
    assert canonical(text) == read


@pytest.mark.parametrize("text, key", [
    ("I work at Brightwave now.", ("user", "employer", "brightwave")),
    ("my manager is Odile Lambert", ("user", "manager", "odile lambert")),
    ("The user's manager is Odile Lambert.", ("user", "manager", "odile lambert")),
    ("User relocated to Ghent.", ("user", "home_city", "ghent")),
    ("I'm based in Ghent these days.", ("user", "home_city", "ghent")),
    ("Quillfeather Press hired me last week.", ("user", "employer", "quillfeather press")),
    ("my sister lives in Leeds", ("user / sister", "home_city", "leeds")),
    ("my husband works at Brightwave", ("user / husband", "employer", "brightwave")),
    ("Odile Lambert's wife teaches at Ghent University.", None),
    ("my friend Tomas works at Brightwave", ("tomas", "employer", "brightwave")),
])
def test_first_person_facts_name_the_user(text, key):
    fact = extract(text)
    got = (fact.subject_key, fact.relation, fact.value_key) if fact is not None else None
    assert got == key or key is None and (got is None or got[1] != "spouse")


@pytest.mark.parametrize("text", ["I used to work at Brightwave.", "I might move to Ghent next year.",
                                  "I was never employed by Brightwave."])
def test_a_past_job_or_a_plan_keys_nothing(text):
    assert not keyable(extract(text))


def test_a_state_said_in_the_first_person_is_the_users():
    for text in ("btw I'm vegan now", "The user is vegetarian.", "fyi i am pescatarian"):
        now = state(text)
        assert now is not None and now.subject == "user", text
    we = state("we're on hold until March")
    assert we is None or we.subject == "team"


@pytest.mark.parametrize("old, new, key", [
    ("The user works at Harrowgate Insurance.", "I work at Brightwave now.", ("User", "employer", "Brightwave")),
    ("I work at Harrowgate Insurance.", "User started a new job at Brightwave.", ("User", "employer", "Brightwave")),
    ("User's manager is Odile Lambert.", "my new manager is Piet Claes", ("User", "manager", "Piet Claes")),
    ("Odile Lambert manages me.", "My manager is Piet Claes now.", ("User", "manager", "Piet Claes")),
    ("I live in York.", "User moved to Ghent.", ("User", "home_city", "Ghent")),
    ("User is based in Cork.", "I'm based in Ghent these days.", ("User", "home_city", "Ghent")),
    ("The user drives a Volvo.", "I drive a Polestar now.", ("User", "car", "Polestar")),
    ("The user is vegetarian.", "btw I'm vegan now", ("User", "diet", "vegan")),
    ("The user works at Harrowgate Insurance.", "Brightwave hired me last month.",
     ("User", "employer", "Brightwave")),
])
def test_a_first_person_correction_forks_the_users_fact(rules, embedder, old, new, key):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason
    assert (d.subject, d.relation, d.value) == key


@pytest.mark.parametrize("old, new", [
    ("I live in York.", "my sister lives in Leeds"),
    ("I live in York.", "my friend Tomas moved to Leeds"),
    ("The user works at Harrowgate Insurance.", "my wife works at Brightwave now"),
    ("The user works at Harrowgate Insurance.", "I used to work at Brightwave."),
    ("I live in York.", "I might move to Ghent next year."),
    ("I live in York.", "We're based in Ghent."),
])
def test_someone_else_or_another_time_corrects_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "new_branch", d.reason
    assert d.subject != "User" or d.relation != "home_city" and d.relation != "employer"
