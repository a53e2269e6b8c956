"""Round 8 of the rule validator (fabric/placement/facts.py, align.py): mechanisms that carry over to
how users restate a fact, each checked on sentences written here (not taken from any labelled set or
chain set): a pseudo-cleft's subject, relation synonymy by class (a life partner, a birthday, an
acquirer, revenue "brought in"), one word per period, lower-case values where the writer's casing
says nothing, lower-case brand names the grammar marks, a thing both sentences name in lower-case
words, and the traps each must keep apart. Pure: no database; the embedding model where the
alignment consults it."""

from __future__ import annotations

import pytest

from fabric.placement.facts import compare, extract, names
from tests.fix_placement import decide


def verdict(old: str, new: str) -> str:
    o, n = extract(old, new), extract(new, old)
    assert o is not None and n is not None, (o, n)
    return compare(o, n)


def test_a_pseudo_cleft_names_its_subject_after_what():
    fact = extract("The Enterprise tier is what Marlow Bakeries pays for these days.")
    assert fact is not None and (fact.subject, fact.relation, fact.value) == ("Marlow Bakeries", "billing_plan",
                                                                             "Enterprise")
    assert verdict("Marlow Bakeries is on the Basic plan.",
                   "The Enterprise tier is what Marlow Bakeries pays for these days.") == "contradiction_fork"


@pytest.mark.parametrize("old, new", [
    ("Ines Carvalho's partner is Tomasz Bielecki.", "Ines Carvalho is now in a relationship with Joao Pires."),
    ("Ines Carvalho is married to Tomasz Bielecki.", "Ines Carvalho is dating Joao Pires these days."),
    ("Oren Fadel's birthday is June 9.", "Oren Fadel was born on June 19."),
    ("Quillon Games is a subsidiary of Brightmoor Group.", "Harlow Capital acquired Quillon Games."),
    ("Quillon Games is owned by Brightmoor Group.", "Harlow Capital bought Quillon Games last spring."),
    ("Tidewater Labs' annual revenue is $3.1M.", "Tidewater Labs now brings in around five million dollars a year."),
    ("The Nimbus plan costs $9 per month.", "The monthly price of the Nimbus plan went up to eleven dollars."),
    ("Staff at Corvid Print totals 420.", "After the merger, Corvid Print is up to 610 employees."),
])
def test_one_attribute_in_words_of_one_class(old, new):
    assert verdict(old, new) == "contradiction_fork"


@pytest.mark.parametrize("old, new", [
    # a business partner is no life partner; another company's owner; another period's figure
    ("Ines Carvalho's partner is Tomasz Bielecki.", "Ines Carvalho partners with Northgate Legal."),
    ("Brightmoor Group's partner is Northgate Legal.", "Brightmoor Group's partner is Halden Audit."),
    ("Quillon Games is owned by Brightmoor Group.", "Harlow Capital bought Pellucid Audio."),
    ("The Nimbus plan costs $9 per month.", "The Nimbus plan costs $90 a year."),
    ("Oren Fadel's birthday is June 9.", "Oren Fadel's sister was born on June 19."),
])
def test_the_same_words_for_another_fact_stay_apart(old, new):
    o, n = extract(old, new), extract(new, old)
    assert o is None or n is None or compare(o, n) != "contradiction_fork"


def test_a_lower_case_value_in_a_chat_note_about_the_user():
    fact = extract("the user is employed by figma these days")
    assert fact is not None and (fact.subject, fact.relation, fact.value) == ("User", "employer", "figma")
    assert verdict("The user works for Atlassian.", "the user is employed by figma these days") \
        == "contradiction_fork"
    # a writer who uses capitals: a lower-case word after "by" is no name ("is employed by contract")
    assert extract("Mira Solberg is employed by contract these days") is None


def test_a_favourite_in_any_case():
    assert verdict("Nikos Andreou loves paella more than any other food.",
                   "Nikos Andreou's favourite food is bibimbap these days.") == "contradiction_fork"
    assert verdict("The user's favourite singer is Adele.", "user says their favourite singer is now mitski") \
        == "contradiction_fork"
    # a lower-case value still tells a colour from a car
    o, n = extract("Nikos Andreou's car is red."), extract("Nikos Andreou drives a Volvo.")
    assert o is None or n is None or compare(o, n) == "separate"


def test_a_lower_case_brand_where_the_grammar_marks_a_name():
    assert [sp.key for sp in names("Dana Whitfield is now quickbase's chief executive.")] == ["dana whitfield",
                                                                                            "quickbase"]
    assert [sp.key for sp in names("quickbase is led by CEO Arne Toft.")] == ["quickbase", "arne toft"]
    assert verdict("quickbase is led by CEO Arne Toft.", "Dana Whitfield is now quickbase's chief executive.") \
        == "contradiction_fork"
    # the head noun after a name, a determiner, a time word: no brand
    assert [sp.key for sp in names("The Orwell library's reading room opens at 9.")][0] == "orwell"
    assert all(sp.key != "today" for sp in names("Check Lena Ortiz's notes before today's call."))
    assert all(sp.key != "company" for sp in names("Lena Ortiz runs the company's Berlin office."))
    assert [sp.key for sp in names("rent is €900 at the Lisbon flat")] == ["900", "lisbon"]


def test_a_thing_named_in_lower_case_words_in_both_sentences():
    assert verdict("Hugo Lindqvist owns the mobile release checklist.",
                   "Ownership of the mobile release checklist passed to Amal Haddad.") == "contradiction_fork"
    # one name each and no thing in common: nothing to align
    assert extract("Hugo Lindqvist owns the mobile release checklist.",
                   "Amal Haddad owns the desktop release checklist.") is None


@pytest.mark.parametrize("old, new", [
    ("Keiko Arai is a data analyst at Fernwood Bank.", "Fernwood Bank promoted Keiko Arai to analytics manager."),
    ("Keiko Arai is the head of payments at Fernwood Bank.", "Fernwood Bank made Keiko Arai its Chief Risk Officer."),
    ("Keiko Arai is a data analyst at Fernwood Bank.", "Keiko Arai's title is now Principal Analyst."),
])
def test_a_job_title_in_other_frames(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and d.relation == "job_title"


@pytest.mark.parametrize("old, new", [
    ("Keiko Arai is a data analyst at Fernwood Bank.", "Keiko Arai is a volunteer at the Harbour Food Bank."),
    ("Keiko Arai is a data analyst at Fernwood Bank.", "Keiko Arai is a board advisor at Lumen Health."),
    ("Keiko Arai is a data analyst at Fernwood Bank.", "Fernwood Bank promoted Keiko Aran to analytics manager."),
    ("Keiko Arai is a data analyst at Fernwood Bank.", "Keiko Arai was formerly a teacher at Elmside School."),
])
def test_other_titles_of_other_places_or_people_stay_apart(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork"


# (old, new, what the validator must decide; "!" + a kind: anything but that kind)
@pytest.mark.parametrize("old, new, kind", [
    # a life partner in other words; a business partner is another fact
    ("Ingrid Maas is married to Pieter Bos.", "Ingrid Maas is in a relationship with Karel Smit now.",
     "contradiction_fork"),
    ("Ingrid Maas is married to Pieter Bos.", "Ingrid Maas partners with Delftware Studio on a new collection.",
     "new_branch"),
    # a preference switched, the old one denied in the same sentence; a relative's preference
    ("Rafael Souza prefers coffee over tea.", "Rafael Souza switched to tea and would rather not have coffee anymore.",
     "contradiction_fork"),
    ("Rafael Souza prefers coffee over tea.", "Rafael Souza's sister prefers tea over coffee.", "!contradiction_fork"),
    # a relative's fact is no repeat; "Y is where X works": X is the subject, another person at Y corrects nothing
    ("Lucia Ferrante's husband works at Vantor Systems.", "Lucia Ferrante works at Vantor Systems.", "new_branch"),
    ("Vantor Systems is where Lucia Ferrante works now.", "Marco Ferrante works at Vantor Systems.", "new_branch"),
    # someone living with them is a detail: the same home, in more words
    ("Lucia Ferrante lives in Turin.", "Lucia Ferrante lives in Turin, in a flat near the river with her husband.",
     "child_update"),
    # an office line is not a person's new number; a mobile is their own number
    ("Jonas Brandt changed numbers: 0171 555 0199.", "Jonas Brandt's office number is 030 555 0100.",
     "!contradiction_fork"),
    ("Jonas Brandt's mobile is 0171 555 0199.", "Jonas Brandt got a new number: 0171 555 0142.", "contradiction_fork"),
])
def test_through_the_validator(rules, embedder, old, new, kind):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != kind[1:] if kind.startswith("!") else d.kind == kind


def test_a_thing_in_lower_case_words_is_corrected_only_when_said_to_change():
    assert verdict("Hugo Lindqvist owns the mobile release checklist.",
                   "Amal Haddad now owns the mobile release checklist.") == "contradiction_fork"
    assert verdict("Hugo Lindqvist owns the mobile release checklist.",
                   "Amal Haddad owns the mobile release checklist.") == "separate"  # maybe both do


def test_a_period_is_one_word_after_an_amount_only():
    from fabric.placement.align import canonical
    assert canonical("Lodge Gym costs 40 euros a month.") == "Lodge Gym costs 40 euros monthly."
    assert canonical("Mira Voss visits the gym every week.") == "Mira Voss visits the gym every week."


def test_a_state_or_a_title_keys_a_text_write(rules, embedder):
    from fabric.placement.rules import state_key
    assert state_key("Wiebke Sand went fully vegetarian.") == ("Wiebke Sand", "diet", "vegetarian")
    assert state_key("Wiebke Sand's brother is vegetarian.")[0] == "Wiebke Sand's brother"  # his diet, not hers
    assert state_key("Wiebke Sand is not vegetarian.") is None
    assert state_key("Ostfeld Bank promoted Wiebke Sand to lead auditor.") == ("Wiebke Sand", "job_title",
                                                                                "lead auditor")
    d, _ = decide(rules, embedder, "Wiebke Sand is vegetarian.", "Wiebke Sand went fully vegan.", pregated=True)
    assert d.kind == "contradiction_fork" and (d.subject, d.relation, d.value) == ("Wiebke Sand", "diet", "vegan")
