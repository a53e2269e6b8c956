"""Round 6 of the rule validator: corrections in the words people use to correct ("no longer A, now B",
dates written with an ordinal and a year). Sentences written here, not taken from the labelled sets
(tests/data/placement_pairs_v*.jsonl). Pure: no database; the real embedding model."""

from __future__ import annotations

import pytest

from fabric.placement.align import canonical
from tests.fix_placement import decide


@pytest.mark.parametrize("text, read", [
    ("Jonas Pike is no longer in Oslo, he lives in Bergen.", "Jonas Pike lives in Bergen."),
    ("The user no longer lives in Oslo; they moved to Bergen.", "User moved to Bergen."),
    ("jonas pike doesn't live in oslo anymore, he lives in bergen", "jonas pike lives in bergen"),
    ("Ardent Bank is no longer in Zurich - it is now headquartered in Geneva.",
     "Ardent Bank is now headquartered in Geneva."),
])
def test_a_denied_value_then_a_pronoun_reads_as_the_new_value(text, read):
    assert canonical(text) == read


@pytest.mark.parametrize("text", [
    "Tom no longer drinks coffee.",                                     # nothing said instead
    "He no longer works there, she said.",                              # someone else speaking
    "Helga Moreau no longer works at Siemens; she is now at Bosch.",     # "is at" alone names no attribute
    "Tom is not happy, and Ann left.",                                   # no pronoun: another subject
])
def test_other_negations_are_read_as_written(text):
    assert canonical(text) == text


@pytest.mark.parametrize("text, read", [
    ("The launch was pushed to April 10th 2027.", "The launch was pushed to April 10, 2027."),
    ("It ships on April 10 2027.", "It ships on April 10, 2027."),
    ("It ships on April 10th, 2027.", "It ships on April 10, 2027."),
    ("It ships on April 10th.", "It ships on April 10."),
    ("It ships in March 2027.", "It ships in March 2027."),             # a month and year is no day
])
def test_a_day_and_its_year_are_one_date(text, read):
    assert canonical(text) == read


@pytest.mark.parametrize("old, new", [
    ("Jonas Pike lives in Oslo.", "Jonas Pike is no longer in Oslo, he lives in Bergen."),
    ("Cora Hale lives in Leeds.", "Cora Hale doesn't live in Leeds any more; she lives in York."),
    ("The launch of Orion is on March 3, 2027.", "The Orion launch has been pushed to April 10th 2027."),
    ("The Vesta review is on May 2nd 2026.", "The Vesta review moved to June 9 2026."),
])
def test_corrections_in_these_words_fork(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason


@pytest.mark.parametrize("old, new", [
    ("Jonas Pike lives in Oslo.", "Jonas Pike's sister is no longer in Oslo, she lives in Bergen."),
    ("Jonas Pike lives in Oslo.", "Jonas Peake is no longer in Oslo, he lives in Bergen."),
    ("The launch of Orion is on March 3, 2027.", "The launch of Vega is on April 10th 2027."),
])
def test_other_subjects_said_that_way_correct_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork", d.reason


@pytest.mark.parametrize("old, new", [
    # "has become", "started": words of change, not another relation
    ("The favourite film of Iris Lowe is Paper Moon.", "Heat has become Iris Lowe's favourite film."),
    ("Ravi Menon works for Stripe.", "ravi menon started working at adyen"),
    ("The favourite band of Ula Brandt is Wire.", "Low became Ula Brandt's favourite band."),
    # "actually": a correction said outright
    ("Lumen Works was founded in 2011.", "Lumen Works was actually founded in 2012."),
    # "relocated from A to B": a move, not an event of its own
    ("Amara Draycott lives in Lisbon.", "Amara Draycott relocated from Lisbon to Tallinn."),
    # "called" / "named": one predicate
    ("The user's dog is called Biscuit.", "The user's dog is named Pepper."),
    ("Leon Ashby's cat is named Miso.", "Leon Ashby's cat is called Tofu now."),
])
def test_words_of_change_and_one_predicate_fork(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason


@pytest.mark.parametrize("old, new", [
    ("The favourite film of Iris Lowe is Paper Moon.", "Heat has become Iris Lowe's favourite book."),
    ("Ravi Menon works for Stripe.", "Ravi Menon's wife started working at Adyen."),
    ("Lumen Works was founded in 2011.", "Lumen Labs was actually founded in 2012."),
    ("The user's dog is called Biscuit.", "The user's cat is named Pepper."),
    ("Amara Draycott lives in Lisbon.", "Amara Draycott's brother relocated from Lisbon to Tallinn."),
])
def test_the_same_words_of_another_fact_correct_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork", d.reason


@pytest.mark.parametrize("old, new", [
    ("The office wifi password is tulip42.", "The office wifi password was changed to maple77."),
    ("The staging server is web01.", "The staging server is now web03."),
    ("The office wifi password is tulip42.", "office wifi password: maple77"),
])
def test_a_code_of_letters_and_digits_is_a_value(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason


@pytest.mark.parametrize("old, new", [
    ("The guest wifi password is tulip42.", "The office wifi password was changed to maple77."),
    ("The staging server is web01.", "The production server is web02."),
    ("The promo code is save10.", "The promo code for students is stu20."),
    ("Our build runs on node18.", "Our tests run on node20."),
])
def test_codes_of_other_things_correct_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork", d.reason


@pytest.mark.parametrize("old, new", [
    ("Dana Wu is a Senior Engineer at Flux.", "Dana Wu is now a Staff Engineer at Flux."),
    ("Lea Roth works as a Product Manager at Kivo.", "Lea Roth is now a Group Product Manager at Kivo."),
    ("Ana Gil was a Data Analyst at Norte.", "Ana Gil became a Data Scientist at Norte."),
])
def test_a_new_title_at_the_same_place_forks(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason


@pytest.mark.parametrize("old, new", [
    ("Dana Wu is a Senior Engineer at Flux.", "Dana Wu is a Staff Engineer at Fluxon."),   # another place
    ("Dana Wu is a Senior Engineer at Flux.", "Dana Wu met a Staff Engineer at Flux."),    # no title slot
    ("Dana Wu is a Senior Engineer at Flux.", "Dana Wu's brother is a Staff Engineer at Flux."),
    ("Dana Wu is a member of the Chess Club at Flux.", "Dana Wu is a member of the Book Club at Flux."),
    ("Dana Wu is a fan of Arsenal in London.", "Dana Wu is a fan of Chelsea in London."),
    # "X is a mentor for Y" names Y's mentor: another mentee is another fact
    ("Dana Wu is a mentor for the Rust Guild at Flux.", "Dana Wu is a mentor for the Go Guild at Flux."),
])
def test_other_slots_between_the_same_names_correct_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork", d.reason


def test_a_mentor_for_someone_is_their_mentor(rules, embedder):
    d, _ = decide(rules, embedder, "Ivo Berg's mentor is Ada Lind.", "Ada Lind is a mentor to Ivo Berg.", pregated=True)
    assert d.kind == "duplicate", d.reason


@pytest.mark.parametrize("old, new", [
    # a generic noun after a name is part of the name
    ("The Falcon team has 12 engineers.", "Falcon now has 15 engineers."),
    ("The Delta service runs on Java 11.", "Delta now runs on Java 17."),
    ("The Kite project budget is $20,000.", "Kite's budget was cut to $15,000."),
    # "is down to", "cut to": words of change
    ("The Falcon team has 12 engineers.", "The Falcon team is down to nine engineers."),
    # the old value in a "who used to" clause
    ("Zara Bell lives in Glasgow.", "Zara Bell, who used to live in Glasgow, now lives in Dundee."),
])
def test_a_name_with_or_without_its_generic_noun_is_one_subject(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason


@pytest.mark.parametrize("old, new", [
    ("The Falcon team has 12 engineers.", "The Falcon app has 15 engineers."),
    ("The Delta service runs on Java 11.", "The Delta app runs on Java 17."),
    ("The Tern project deadline is June 30.", "The Tern programme deadline is July 15."),
    ("The Falcon team has 12 engineers.", "The Falcon team has 3 designers."),
])
def test_two_things_of_one_name_stay_apart(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork", d.reason


def test_a_used_to_clause_is_dropped_from_the_reading():
    assert canonical("Zara Bell, who used to live in Glasgow, now lives in Dundee.") == "Zara Bell now lives in Dundee."


@pytest.mark.parametrize("old, new", [
    ("Theo Park's manager is Alma Reyes.", "Theo Park moved under Joel Kim."),
    ("Theo Park reports to Alma Reyes.", "Theo Park now sits under Joel Kim."),
])
def test_under_a_person_names_the_manager(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason


@pytest.mark.parametrize("old, new", [
    ("Theo Park's manager is Alma Reyes.", "Theo Park moved under the Joel Kim Bridge."),  # a place
    ("Theo Park's manager is Alma Reyes.", "Alma Reyes now sits under Joel Kim."),        # a manager chain
    ("Theo Park reports to Alma Reyes.", "Theo Park moved under 30 km away."),
])
def test_under_a_place_or_in_a_chain_corrects_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork", d.reason
