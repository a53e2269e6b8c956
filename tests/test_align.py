"""Reading restatements of relations the lexicon does not know (fabric/placement/align.py): numbers,
times and phone numbers written one way, names and values aligned, the masked relation compared by the
real embedding model. Pure and fast: no database. The sentences here are not those of the labelled
sets the thresholds were chosen on (tests/data/placement_pairs_v2.jsonl)."""

from __future__ import annotations

import pytest

from fabric.placement.align import canonical, compare_aligned, read, relation_similarity, single_key, stem
from fabric.placement.rules import adds_detail


def verdict(old: str, new: str) -> str:
    return compare_aligned(old, new, relation_similarity).verdict


@pytest.mark.parametrize("text, written", [
    ("The gym has forty-two lockers.", "The gym has 42 lockers."),
    ("Seven hundred and eighty-five people work there.", "785 people work there."),
    ("The clinic opens at 8 am.", "The clinic opens at 08:00."),
    ("The clinic opens at 8:00 in the morning.", "The clinic opens at 08:00."),
    ("The bar closes at 11pm.", "The bar closes at 23:00."),
    ("Call 555-0142 or 555 0142.", "Call 555-0142 or 555-0142."),
    ("Lunch is at noon.", "Lunch is at 12:00."),
    ("The pool is heated to 28°C.", "The pool is heated to 28 degrees."),
])
def test_numbers_times_and_phones_are_written_one_way(text, written):
    assert canonical(text) == written


def test_stems_equate_forms_of_one_word():
    assert stem("owner") == stem("owns") == stem("ownership")
    assert stem("allergic") == stem("allergy")
    assert stem("services") == stem("service")
    assert stem("departure") == stem("departs")
    assert stem("prefers") == stem("preferred")


# (old, new): the same attribute restated, in other words, with another value.
RESTATED_CHANGE = [
    ("The Juniper build server runs Ubuntu 20.04.", "The Juniper build server was upgraded to Ubuntu 22.04."),
    ("The Hawthorn bakery opens at seven in the morning.", "Since March the Hawthorn bakery opens at 6:30 am."),
    ("The direct line for the Westgate clinic is 555-0161.", "You can call the Westgate clinic on 555 0199."),
    ("Marek Zielinski is on the Platform team.", "Marek Zielinski moved to the Growth team."),
    ("Nora Lindgren's locker number is 214.", "Nora Lindgren now uses locker 305."),
    ("A ticket to the Ravensworth museum costs 12 euros.", "Ravensworth museum tickets went up to fifteen euros."),
    # one dimension:
    ("The nightly Kestrel backup takes 40 minutes.", "The nightly Kestrel backup now takes two hours."),
]

# (old, new): the same fact and value, reworded.
RESTATED_SAME = [
    ("The Westgate clinic's phone number is 555-0161.", "To reach the Westgate clinic, dial 555 0161."),
    ("The Hawthorn bakery opens at 7 am.", "Opening time at the Hawthorn bakery is seven in the morning."),
]

# (old, new): not the same fact, however alike the sentences.
ANOTHER_FACT = [
    ("Nora Lindgren's locker number is 214.", "Nora Lindgren's desk number is 12."),          # another noun
    ("A day ticket to the Ravensworth museum costs 12 euros.",
     "A family ticket to the Ravensworth museum costs 30 euros."),                          # a qualifier swapped
    ("The Westgate clinic's phone number is 555-0161.", "The Eastgate clinic's phone number is 555-0162."),
    ("The Harbor office wifi password is Gull2024.", "The Harbor office guest wifi password is Tern55."),
    ("Marek Zielinski's daughter attends Linden School.", "Marek Zielinski attends Oakhill School."),  # a relative
    ("Marek Zielinski has visited Norway.", "Marek Zielinski has visited Chile."),            # many values
    ("Ilse Brandt presented the Falcon roadmap to Tessera Bank.",
     "Ilse Brandt presented the Falcon roadmap to Quorum Insurance."),                       # events
    ("Tomas Reyna recommended Signe Holt for the Oslo role.",
     "Signe Holt recommended Tomas Reyna for the Oslo role."),                               # roles swapped
    ("Ilse Brandt calls her cat Miso.", "Petra Voss calls her cat Miso."),                    # another owner
    ("The Birchwood lab employs 8 engineers.", "The Birchwood lab now includes 3 designers."),  # other things counted
    ("The Juniper build server runs Ubuntu 22.04.", "The Juniper build server is not on Ubuntu 24.04."),
]


@pytest.mark.parametrize("old, new", RESTATED_CHANGE)
def test_a_restated_attribute_with_another_value_is_a_contradiction(old, new):
    assert verdict(old, new) == "contradiction_fork", compare_aligned(old, new, relation_similarity)


@pytest.mark.parametrize("old, new", RESTATED_SAME)
def test_a_reworded_repeat_is_a_duplicate(old, new):
    assert verdict(old, new) == "duplicate", compare_aligned(old, new, relation_similarity)


@pytest.mark.parametrize("old, new", ANOTHER_FACT)
def test_another_fact_is_never_a_contradiction(old, new):
    assert verdict(old, new) in ("separate", "unknown"), compare_aligned(old, new, relation_similarity)


# Written with the cases above and missed: the masked relations are too far apart for the embedding
# (below the 0.80 a reworded duplicate needs). Placed as a new branch: nothing is lost.
KNOWN_MISSES = [
    ("Nora Lindgren's locker number is 214.", "Locker 214 belongs to Nora Lindgren.", "duplicate"),
]


@pytest.mark.parametrize("old, new, kind", KNOWN_MISSES)
@pytest.mark.xfail(strict=True, reason="measured 2026-11-30: the masked relations are not similar enough")
def test_known_misses(old, new, kind):
    assert verdict(old, new) == kind


def test_more_detail_is_a_refinement():
    old = "Nora Lindgren rides a blue Gazelle bicycle."
    new = "Nora Lindgren rides a blue Gazelle bicycle to work every day, and locks it in the basement."
    assert verdict(old, new) == "child_update"


def test_a_restatement_with_added_detail_adds_detail_whatever_its_words():
    assert adds_detail("Ada Moreau works at Ostara Labs.", "Ostara Labs employs Ada Moreau as a data engineer.")
    assert adds_detail("Nora Lindgren's locker number is 214.", "Nora Lindgren's locker number is 214, "
                                                                  "next to the showers.")
    assert not adds_detail("Ada Moreau works at Ostara Labs.", "Ostara Labs employs Ada Moreau.")


def test_a_single_sentence_keys_a_fact_only_where_the_grammar_names_its_subject():
    assert single_key("Nora Lindgren's locker number is 214.") == ("Nora Lindgren", "locker_number", "214")
    assert single_key("The direct line for the Westgate clinic is 555-0161.") == (
        "Westgate", "direct_line_clinic", "555-0161")
    assert single_key("Marek Zielinski has visited Norway.") is None         # one of many values
    assert single_key("Ilse Brandt presented the roadmap to Tessera Bank.") is None  # an event
    assert single_key("Marek Zielinski's son attends Linden School.") is None       # about a relative


def test_the_other_sentence_lends_its_names_in_any_case():
    r = read("the locker of nora lindgren is 214.", "Nora Lindgren's locker is 305.")
    assert {a.key for a in r.anchors} == {"nora lindgren", "214"}
