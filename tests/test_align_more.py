"""Wordings users write that round 1 of the rule validator missed (fabric/placement/align.py, facts.py,
rules.py): chat memories about "the user", reported speech, honorifics, adverbs inside a relation,
values written in other forms, brand names in camel case. Sentences written here, not taken from the
labelled sets (tests/data/placement_pairs_v*.jsonl). Pure: no database; the embedding model where
the alignment consults it."""

from __future__ import annotations

import pytest

from fabric.placement.align import canonical
from fabric.placement.facts import extract


@pytest.mark.parametrize("text, written", [
    ("the user works for a bakery", "User works for a bakery"),
    ("The User owns a kayak.", "User owns a kayak."),
    ("My sister is a nurse.", "User's sister is a nurse."),
    ("I'm based in Oslo and I commute by bike.", "User is based in Oslo and User commute by bike."),
    ("Chapter I begins with a storm.", "Chapter I begins with a storm."),  # a numeral, not the speaker
    ("user-facing errors are logged", "user-facing errors are logged"),
])
def test_the_user_is_one_subject_however_it_is_named(text, written):
    assert canonical(text) == written


@pytest.mark.parametrize("text, written", [
    ("Farah Idris told me her dentist is Paul Okoro.", "Farah Idris's dentist is Paul Okoro."),
    ("User mentioned that they relocated to Ghent.", "User relocated to Ghent."),
    ("Bruno Costa says he drives a Volvo.", "Bruno Costa drives a Volvo."),
])
def test_reported_speech_is_the_speakers_own_fact(text, written):
    assert canonical(text) == written


def test_honorifics_adverbs_and_a_denied_old_value_are_left_out():
    assert extract("Dr. Imogen Hale is the dentist of Tariq Aziz.").value == "Imogen Hale"
    assert canonical("Lena works closely with Omar.") == "Lena works with Omar."
    assert canonical("Lena reports directly to Omar.") == "Lena reports to Omar."
    fact = extract("Tariq Aziz's favourite city is really Kyoto, not Osaka.")
    assert (fact.value, fact.negated) == ("Kyoto", False)
    assert extract("Tariq Aziz's favourite city is not Osaka.").negated  # a negation with no correction stays one


@pytest.mark.parametrize("old, new", [
    ("The user lives in Cork.", "User said they recently moved to Cork."),
    ("I live in Cork.", "the user lives in Cork"),
    ("Priya Das answers to Leo Grant.", "Priya Das reports directly to Leo Grant."),
])
def test_restated_by_the_user_or_with_an_adverb_the_fact_is_the_same(old, new):
    a, b = extract(old, new), extract(new, old)
    assert a is not None and b is not None
    assert (a.subject_key, a.relation, a.value_key) == (b.subject_key, b.relation, b.value_key)
