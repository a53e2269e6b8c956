"""The attribute classifier by meaning (fabric/placement/attributes.py) and its one hook in the rule validator:
versions of one attribute in wordings no word list was written for, and the traps it must not fall into.
Sentences written for this file; the real embedding model throughout (no database)."""

from __future__ import annotations

import time

import pytest

from fabric.placement import attributes
from tests.fix_placement import decide

# (first write, later write): one attribute of one subject, another value, worded apart.
CORRECTIONS = [
    ("Lena Varga works at Brightline Insurance.", "Halvard Bank hired Lena Varga as a risk analyst."),
    ("I work at Fernhill Media.", "I just started a new job at Quillon Press."),
    ("Osric Pell lives in Ghent.", "Home for Osric Pell is Utrecht these days."),
    ("Tamsin Rowe's favourite novel is Salt Roads.", "Tamsin Rowe loves Glass Orchard more than any other book."),
    ("Juniper Analytics is on the Starter plan.", "The Enterprise tier is what Juniper Analytics pays for now."),
    ("Inés Cabral's birthday is March 4.", "Inés Cabral was actually born on March 14."),
    ("The Wrenfield project's deadline is May 2, 2027.", "The Wrenfield project now has to ship by July 2027."),
]

# (first write, later write): not a correction of the first.
APART = [
    # twins: one first name, two people
    ("Lena Varga works at Brightline Insurance.", "Lena Vardy works at Halvard Bank."),
    # another attribute of the same person with the same value
    ("Osric Pell lives in Ghent.", "Osric Pell studied in Ghent."),
    # sister companies
    ("Juniper Analytics is headquartered in Leeds.", "Juniper Robotics is headquartered in York."),
    # relatives
    ("Lena Varga works at Brightline Insurance.", "Lena Varga's husband works at Halvard Bank."),
    # many values: languages, offices
    ("Osric Pell speaks Dutch.", "Osric Pell speaks Portuguese."),
    ("Juniper Analytics opened an office in Oslo.", "Juniper Analytics opened an office in Lyon."),
    # another date of the same person
    ("Inés Cabral's birthday is March 4.", "Inés Cabral's wedding anniversary is June 21."),
    # a role read backwards: Nils is Mara's manager, then Mara manages someone
    ("Nils Brandt manages Mara Quist.", "Mara Quist manages Ove Lind."),
    # the same value for another attribute, and a side role
    ("Ayla Brenner works at Corvane Bank.", "Ayla Brenner banks with Corvane Bank."),
    ("Ayla Brenner works at Corvane Bank.", "Ayla Brenner consults for Tessaro Bank on weekends."),
    ("Ayla Brenner studies at Leeds University.", "Ayla Brenner teaches at York University."),
    # a manager's manager
    ("Ayla Brenner reports to Dov Keller.", "Dov Keller reports to Ines Roth."),
    # another figure of the same subject
    ("Corvane Bank has 1,200 employees.", "Corvane Bank has 300 branches."),
    # another plan of the same customer
    ("Juniper Analytics is on the Starter plan.", "Juniper Analytics' support plan is Premium."),
]


@pytest.mark.parametrize(("old", "new"), CORRECTIONS)
def test_a_reworded_correction_forks(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new)
    assert d.kind == "contradiction_fork", d.reason
    assert target == old


@pytest.mark.parametrize(("old", "new"), APART)
def test_another_fact_stays_apart(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new)
    assert d.kind == "new_branch", d.reason


def test_the_correction_carries_one_key(rules, embedder):
    """The fork carries (subject, attribute, value) so current_value answers for text-only writes."""
    d, _ = decide(rules, embedder, "Lena Varga works at Brightline Insurance.",
                  "Halvard Bank hired Lena Varga as a risk analyst.")
    assert (d.subject, d.relation, d.value) == ("Lena Varga", "employer", "Halvard Bank")


def test_same_value_reworded_is_a_duplicate():
    same = attributes.compare("Corvid Labs is led by Ilse Marten.", "Ilse Marten runs Corvid Labs.")
    assert same is not None and same.verdict == "duplicate" and same.attribute == "ceo"


def test_classifier_reads_the_direction():
    """X and Y in the other order are another attribute: "X manages Y" is not X's manager."""
    assert attributes.classify_frame("Y manages X").attribute.name == "manager"
    assert attributes.classify_frame("X manages Y").attribute.name == "reports"
    assert attributes.classify_frame("Y hired X").attribute.name == "employer"


def test_unsure_or_many_is_no_correction():
    """A frame like none of the prototypes, or like two of them, names no attribute; an event is one of many."""
    for masked in ("X presented the roadmap to Y", "X and Y had lunch together", "X painted the fence Y"):
        found = attributes.classify_frame(masked).attribute
        assert found is None or found.multi, (masked, found)


def test_value_sort_filters_attributes():
    """A date value cannot be a home city; the best date attribute is taken."""
    assert attributes.classify_frame("X was born on Y", "date").attribute.name == "birthday"
    assert attributes.classify_frame("X was born in Y", "name").attribute.name == "birthplace"


def test_cheap_once_warm():
    attributes.compare("Lena Varga works at Brightline Insurance.", "Halvard Bank hired Lena Varga.")
    start = time.perf_counter()
    for _ in range(100):
        attributes.compare("Lena Varga works at Brightline Insurance.", "Halvard Bank hired Lena Varga.")
    assert (time.perf_counter() - start) / 100 < 0.005  # cached frames: no model call


def test_a_hypothetical_corrects_nothing(rules, embedder):
    d, _ = decide(rules, embedder, "I live in Porto.", "I might move to Galway next year.")
    assert d.kind == "new_branch", d.reason


# ----------------------------------------------------------------------------------------- keys for one sentence

# Sentences the word lists key nothing in: the classifier names the attribute and the subject.
KEYED = [
    ("Call Marit Olsson on 555-0143.", ("Marit Olsson", "phone", "555-0143")),
    ("Marit Olsson picks up at 555-0143.", ("Marit Olsson", "phone", "555-0143")),
    ("Marit Olsson teaches at Ostvik College.", ("Marit Olsson", "employer", "Ostvik College")),
]

# Guards and readings that must key nothing.
UNKEYED = [
    "Marit Olsson might teach at Ostvik College next year.",   # hypothetical
    "Marit Olsson no longer teaches at Ostvik College.",       # negation
    "Marit Olsson used to teach at Ostvik College.",           # the past
    "Marit Olsson also teaches at Ostvik College.",            # one more value
    "Marit Olsson's brother teaches at Ostvik College.",       # a relative holds it
    "Marit Olsson interviewed at Ostvik College.",             # an event, read backwards as an employer
    "Marit Olsson speaks Norwegian.",                          # many values
    "Marit Olsson met Jonas Lund in Bergen.",                  # two values
]


@pytest.mark.parametrize(("text", "expected"), KEYED)
def test_a_sentence_the_lexicon_cannot_read_gets_a_key(rules, embedder, text, expected):
    d, _ = decide(rules, embedder, "The Ostvik ferry leaves at noon.", text)
    assert d.kind == "new_branch", d.reason
    assert (d.subject, d.relation, d.value) == expected


def test_each_name_is_tried_as_the_subject():
    """The subject is the name the sentence reads as one single-valued attribute of; the other way round
    it reads as the inverse (the firm's employees, of many values)."""
    assert attributes.key("Norvik Shipping hired Marit Olsson.") == ("Marit Olsson", "employer", "Norvik Shipping")
    assert attributes.key("Jonas Lund manages me.") == ("User", "manager", "Jonas Lund")


@pytest.mark.parametrize("text", UNKEYED)
def test_no_key_under_the_guards(text):
    assert attributes.key(text) is None


@pytest.mark.parametrize("text", [
    "Marit Olsson works at Norvik Shipping.", "Marit Olsson reports to Jonas Lund.",
    "Marit Olsson is married to Jonas Lund.", "Marit Olsson earns $70,000 a year.",
    "Norvik Shipping is led by Jonas Lund.", "Norvik Shipping is on the Growth plan.",
    "Norvik Shipping has 800 employees.", "Jonas Lund is the CFO of Norvik Shipping.",
])
def test_the_key_is_named_as_the_lexicon_names_it(text):
    """A classifier key and a lexicon key (or a caller's key in the lexicon's names) for one fact meet."""
    from fabric.placement.facts import extract, value_key

    fact, found = extract(text), attributes.key(text)
    assert fact is not None and found is not None
    assert (found[0], found[1], value_key(found[2])) == (fact.subject, fact.relation, fact.value_key)
