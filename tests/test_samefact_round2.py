"""Round two of the generic same-fact path (samefact.py) and the readings it leans on: the user said "i" in chat,
ordinals, a value said more fully, other names of the subject's setting, a correction no word of change says, the
same value in a frame put otherwise, a job title that is no employer. Sentences written for this file; the real
embedding model throughout (no database)."""

from __future__ import annotations

import pytest

from fabric.placement import attributes, samefact
from fabric.placement.align import canonical
from fabric.placement.rules import fuller_value
from tests.fix_placement import decide


@pytest.mark.parametrize(("text", "read"), [
    ("i'm on the night bus again", "User is on the night bus again"),
    ("i've got a plot at Fernhill", "User has got a plot at Fernhill"),
    ("so i moved to sales", "so i moved to sales"),  # no contraction: left unread ("sales" is no city)
    ("World War I ended in 1918", "World War I ended in 1918"),  # a capital "I" after a name is no pronoun
    ("Phase i of the plan", "Phase i of the plan"),
])
def test_chat_i_is_the_user(text, read):
    assert canonical(text) == read


@pytest.mark.parametrize(("text", "read"), [
    ("Juno is the fire marshal for the second floor.", "Juno is the fire marshal for the 2nd floor."),
    ("Lessons are in the third week of each month.", "Lessons are in the 3rd week of each month."),
    ("Second thoughts are welcome.", "Second thoughts are welcome."),  # no "the" before it: no ordinal read
])
def test_an_ordinal_before_a_noun_is_a_number(text, read):
    assert canonical(text) == read


@pytest.mark.parametrize(("old", "new", "fuller"), [
    ("Skoda", "2019 Skoda Octavia", True),
    ("Dr Hassan", "Dr Leila Hassan", True),
    ("York", "New York", True),      # (said more fully by its words; a refinement at worst, never an invalidation)
    ("Skoda", "Kia Niro", False),
    ("Skoda", "Skoda", False),
    ("5", "5 500", False),           # another figure is another value
])
def test_a_value_said_more_fully(old, new, fuller):
    assert fuller_value(old, new) is fuller


@pytest.mark.parametrize(("old", "new"), [
    ("Selma Roy drives a Volvo.", "Selma Roy drives a dark green 2021 Volvo XC40."),
    ("My dentist is Dr Amari.", "My dentist is Dr Kofi Amari at Lakeside Dental."),
])
def test_a_value_said_more_fully_is_a_refinement(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new)
    assert d.kind == "child_update", d.reason
    assert target == old


def test_a_correction_without_a_change_word_when_one_value_at_a_time():
    """Both frames read as one single-valued attribute (a favourite book, a birthday): the new value replaces."""
    found = samefact.compare("Oskar Vint's favourite book is Middlemarch.",
                             "Oskar Vint's favourite book is Persuasion.")
    assert found is not None and found.verdict == "contradiction_fork"
    assert "one value at a time" in found.why


@pytest.mark.parametrize(("old", "new"), [
    ("Ravi Shah works at Orchard Print.", "Ravi Shankar works at Orchard Print."),  # a twin: X's employees, many
    ("Halden Foods' 2023 revenue was $8m.", "Halden Foods' 2024 revenue was $11m."),  # two years, two facts
    ("Kaito Brandt's birthday is 2 June.", "Kaito Brandt's son's birthday is 5 June."),  # a relative's fact
    ("Lise Arno speaks Danish.", "Lise Arno speaks Polish."),  # many values at once
    ("The Wren Hill choir rehearses at 7pm on Thursdays.", "The Wren Hill choir rehearses at 6pm on Mondays."),
])
def test_no_correction_without_a_change_word_between_two_facts(rules, embedder, old, new):
    found = samefact.compare(old, new)
    assert found is None or found.verdict != "contradiction_fork", found
    d, _ = decide(rules, embedder, old, new)
    assert d.kind != "contradiction_fork", d.reason


@pytest.mark.parametrize(("old", "new"), [
    ("Tallis's Studio plan costs $29 a month.", "Tallis charges twenty-nine dollars monthly for Studio."),
    ("The Wren Hill choir rehearses at 7pm on Thursdays.",
     "Thursday practice for the Wren Hill choir begins at seven in the evening."),
])
def test_the_same_value_in_a_frame_put_otherwise_is_a_duplicate(rules, embedder, old, new):
    found = samefact.compare(old, new)
    assert found is not None and found.verdict == "duplicate", found
    d, target = decide(rules, embedder, old, new)
    assert d.kind in ("duplicate", "child_update"), d.reason
    assert target == old


@pytest.mark.parametrize(("old", "new"), [
    ("Oskar Vint works at Hallmark Tiles.", "Oskar Vint is a senior designer."),
    ("Oskar Vint is a data analyst.", "Oskar Vint is a senior designer."),
])
def test_a_job_title_is_no_employer(rules, embedder, old, new):
    assert attributes.compare(old, new) is None or attributes.compare(old, new).attribute == "job_title"
    d, _ = decide(rules, embedder, old, new)
    assert not (d.kind == "contradiction_fork" and "employer" in d.reason), d.reason
    assert attributes.key(new) is None


@pytest.mark.parametrize(("a", "b", "same"), [
    ("Thursdays", "Thursday", True),
    ("Thursdays", "Tuesdays", False),
    ("Saturdays", "Saturn", False),
])
def test_a_day_and_its_plural_are_one_value(a, b, same):
    assert samefact.same_value(a, b) is same


@pytest.mark.parametrize(("old", "new", "kind"), [
    ("I have a bike.", "My bike is a 2018 Brompton with a green frame, bought second hand in Leeds.", "child_update"),
    ("I have a bike.", "My sister's bike is a red Brompton.", "new_branch"),  # someone else's
])
def test_a_refinement_far_in_embedding_space_passes_the_pregate(rules, embedder, old, new, kind):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == kind, d.reason


@pytest.mark.parametrize(("old", "new", "verdict"), [
    # every name in both, one of them the value: the same fact, and the relative is the relation itself
    ("Bram Ode's son is called Felix.", "Bram Ode has a son named Felix.", "duplicate"),
    # a role swap: the same names in another order
    ("Mira Tal manages Oren Fisk.", "Oren Fisk manages Mira Tal.", None),
    ("Jae Park reports to Dana Holt.", "Dana Holt reports to Jae Park.", None),
    # the same relative with another name may be a second child
    ("Bram Ode's son is called Felix.", "Bram Ode's son is called Arlo now.", None),
    # a relative on one side only is someone else
    ("Bram Ode lives in Hull.", "Bram Ode's son lives in Hull.", None),
])
def test_every_name_shared(old, new, verdict):
    found = samefact.compare(old, new)
    assert (found.verdict if found else None) == verdict, found


def test_two_people_with_one_car_correct_nothing():
    """The shared name after the other is the value both hold, not a subject: no correction without a change word."""
    assert samefact.compare("Ines Carvalho drives a red Mazda 3.", "Ravi Iyer drives a red Mazda 3.") is None
