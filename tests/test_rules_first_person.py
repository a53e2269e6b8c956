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
    # a chat note with no subject is about the user; not a verb before a thing in lower case
    ("Moved to Ghent last month.", "User moved to Ghent last month."),
    ("Just joined Brightwave!", "User just joined Brightwave!"),
    ("Moved the standup to Tuesday.", "Moved the standup to Tuesday."),
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
    ("I live in York.", "Moved to Ghent last month.", ("User", "home_city", "Ghent")),
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


# ------------------------------------------------------------------ hours and month deadlines (round 9, item 3)

@pytest.mark.parametrize("text, read", [
    ("The Larchmont library is open 9 to 5.", "The Larchmont library is open 09:00-17:00."),
    ("It is now open from 10am to 6pm.", "It is now open from 10:00-18:00."),
    ("It now opens at 10 and closes at 6.", "It now opens 10:00-18:00."),
    ("Its hours are 8:00–20:00.", "Its hours are 08:00-20:00."),
    ("The audit is due by the end of June 2025.", "The audit is due by June 2025."),
    # no opening hours: a bare range of something else
    ("Growth was 5 to 7 percent.", "Growth was 5 to 7%."),
    ("It is open 7 days a week.", "It is open 7 days weekly."),
])
def test_opening_hours_and_a_month_end_are_written_one_way(text, read):
    assert canonical(text) == read


@pytest.mark.parametrize("old, new, kind", [
    ("The Larchmont library is open 9 to 5.", "The Larchmont library is now open from 10am to 6pm.",
     "contradiction_fork"),
    ("The Larchmont library is open 9:00-17:00.", "The Larchmont library now opens at 10 and closes at 6.",
     "contradiction_fork"),
    ("The Larchmont library is open 9 to 5.", "The Larchmont library is open from 9am to 5pm.", "duplicate"),
    ("The Corvid migration is due in May 2025.", "The Corvid migration deadline moved to the end of June 2025.",
     "contradiction_fork"),
    # the closing time added to the opening time is more detail, not another value
    ("The Quayside bakery opens at 7 am.", "The Quayside bakery opens at 7 am and closes at 3 pm.", "child_update"),
    ("The Quayside bakery opens at 7 am.", "The Quayside bakery opens at 8 am and closes at 3 pm.",
     "contradiction_fork"),
    ("The Corvid migration is due by the end of June 2025.", "The Corvid migration is due in June 2025.",
     "duplicate"),
])
def test_hours_and_month_deadlines_restated(rules, embedder, old, new, kind):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == kind and target == old, d.reason


def test_hours_of_other_days_stay_apart(rules, embedder):
    d, _ = decide(rules, embedder, "The Larchmont library is open 9 to 5 on weekdays.",
                  "The Larchmont library is open 10 to 4 on Saturdays.", pregated=True)
    assert d.kind == "new_branch", d.reason
