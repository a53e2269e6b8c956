"""One key per fact (fabric/placement/keys.py): subjects and attributes spelled differently, the read-time
safety net over them, the key a text-only write borrows from its org, and the keys of labelled notes."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from fabric.placement.keys import (attribute_of, borrow_key, counted, note_key, plain_key, same_attribute, subject_key,
                                  title_key)
from fabric.placement.rules import with_text_keys
from fabric.placement.validator import Candidate, Decision, IncomingWrite
from fabric.read.search import flag_conflicts


def T(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=timezone.utc)


def row(subject: str, relation: str, value: str, year: int, **kw) -> dict:
    return {"id": uuid.uuid4(), "subject": subject, "relation": relation, "value": value, "state": "live",
            "valid_from": T(year), "recorded_at": T(year), **kw}


def near(subject: str | None, relation: str | None, value: str | None = None, similarity: float = 0.7,
         content: str = "a neighbour") -> Candidate:
    return Candidate(uuid.uuid4(), content, similarity, T(2020), None, None, uuid.uuid4(), 0, 1,
                     subject=subject, relation=relation, value=value)


# ------------------------------------------------------------------------------ subjects and attributes


@pytest.mark.parametrize("a, b", [("Quillon Freight", "QUILLON FREIGHT"), ("I", "User"), ("my", "the user"),
                                  ("The Orchard Guild", "Orchard Guild"), ("Pia  Lund", "pia lund"),
                                  ("Brisk Ltd's", "Brisk Ltd")])
def test_one_subject_in_other_spellings(a, b):
    assert subject_key(a) == subject_key(b)


@pytest.mark.parametrize("a, b", [("Tomasz Wren", "Tomasz Reyes"), ("Quillon Freight", "Quillon Foods"),
                                  ("User", "User's sister"), ("Quillon", "Quillon Freight")])
def test_twins_sister_companies_and_relatives_stay_apart(a, b):
    assert subject_key(a) != subject_key(b)


@pytest.mark.parametrize("a, b", [("employer", "works_for"), ("ceo", "chief executive"), ("home_city", "resides"),
                                  ("headquarters", "head office"), ("beak_colour", "beak colour")])
def test_one_attribute_under_other_names(a, b):
    assert same_attribute(a, b)


@pytest.mark.parametrize("a, b", [("employer", "home_city"), ("phone", "office_number"),
                                  ("email", "personal_email"), ("languages", "languages"), ("sites", "showroom"),
                                  ("cfo", "ceo")])
def test_other_attributes_and_attributes_of_many_values_are_not_one(a, b):
    assert not same_attribute(a, b)


def test_an_attribute_of_many_values_has_no_attribute():
    assert attribute_of("languages") is None and attribute_of("investors") is None
    assert attribute_of("Chief Executive") == "ceo"


# ------------------------------------------------------------------------------ the read-time safety net


def test_the_later_value_wins_across_relation_names_and_spellings():
    stale = row("QUILLON FREIGHT", "chief executive", "Ines Ruda", 2019)
    other = row("Quillon Freight", "cfo", "Bo Lind", 2019)
    answer = row("Quillon Freight", "ceo", "Marek Holm", 2023)
    out = flag_conflicts([stale, other, answer])
    assert [r["value"] for r in out] == ["Marek Holm", "Bo Lind", "Ines Ruda"]
    assert stale["conflict_with"] == answer["id"]
    assert other["conflict_with"] is None and answer["conflict_with"] is None


def test_the_first_person_is_one_subject_in_the_net():
    stale = row("User", "employer", "Tallow Studio", 2020)
    answer = row("I", "works_for", "Brine Labs", 2024)
    out = flag_conflicts([stale, answer])
    assert out[0] is answer and stale["conflict_with"] == answer["id"]


def test_the_net_never_joins_twins_relatives_or_many_values():
    rows = [row("Tomasz Wren", "home_city", "Lisbon", 2019), row("Tomasz Reyes", "home_city", "Porto", 2023),
            row("User", "home_city", "Braga", 2019), row("User's sister", "home_city", "Faro", 2023),
            row("Quillon Freight", "sites", "Lisbon", 2019), row("Quillon Freight", "showroom", "Porto", 2023)]
    out = flag_conflicts(list(rows))
    assert out == rows and all(r["conflict_with"] is None for r in rows)


def test_names_outside_the_lexicon_join_only_when_spelled_alike():
    a, b = row("Lio Park", "office_number", "555-0101", 2019), row("Lio Park", "phone", "555-0199", 2023)
    assert [r["conflict_with"] for r in flag_conflicts([a, b])] == [None, None]
    c, d = row("Lio Park", "locker_code", "4411", 2019), row("lio park", "locker code", "9073", 2023)
    out = flag_conflicts([c, d])
    assert out[0] is d and c["conflict_with"] == d["id"]


# ------------------------------------------------------------------------------ keys a write borrows


def test_a_write_borrows_the_spelling_and_relation_its_org_uses():
    cands = [near("Quillon Freight", "ceo", "Ines Ruda", 0.8), near("Quillon Foods", "ceo", "Tove Aas", 0.9)]
    assert borrow_key("QUILLON FREIGHT", "chief executive", cands) == ("Quillon Freight", "ceo")


def test_a_write_keeps_its_relation_for_another_attribute_of_the_same_subject():
    cands = [near("Quillon Freight", "cfo", "Bo Lind")]
    assert borrow_key("quillon freight", "ceo", cands) == ("Quillon Freight", "ceo")
    assert borrow_key("Marrow Cove", "ceo", cands) == ("Marrow Cove", "ceo")


def test_a_placed_note_gets_the_key_of_the_sentence_it_restates():
    write = IncomingWrite(uuid.uuid4(), "o", "quillon freight - chief executive: Marek Holm (since May 2024)", T(2024))
    cands = [near("Quillon Freight", "ceo", "Ines Ruda", content="Ines Ruda runs Quillon Freight.")]
    got = with_text_keys(write, Decision("new_branch", None, "no frame match", 0.6, "rule"), cands)
    assert (got.subject, got.relation, got.value) == ("Quillon Freight", "ceo", "Marek Holm")


# ------------------------------------------------------------------------------ keys of labelled notes


@pytest.mark.parametrize("text, key", [
    ("Harbourview Clinic bed count: 310", ("Harbourview Clinic", "beds", "310")),
    ("Warden of Kelso Castle: Fenella Orr", ("Kelso Castle", "warden", "Fenella Orr")),
    ("Pips at Moorland Kennels = 14 (after the spring litters)", ("Moorland Kennels", "pips", "14")),
    ("tamsin oyelaran - employer: Quarry Works (started 3 Feb 2025)", ("tamsin oyelaran", "employer", "Quarry Works")),
    ("Lowick Rowing Club — captain: Ewan Dyce", ("Lowick Rowing Club", "captain", "Ewan Dyce")),
    ("BRISK LTD CFO = Maud Ek", ("BRISK LTD", "cfo", "Maud Ek")),
    ("Lowick Rowing Club's treasurer is Ewan Dyce.", ("Lowick Rowing Club", "treasurer", "Ewan Dyce")),
    ("brisk ltd cto: Maud Ek", ("brisk ltd", "cto", "Maud Ek")),
])
def test_a_labelled_note_states_its_key(text, key):
    assert note_key(text) == key


@pytest.mark.parametrize("text", [
    "Phone network: Kinsale Telecom since May.",          # a capitalised label, no subject
    "The Kelso office is closed.",                         # a name as a modifier, a state in words
    "Fenella Orr's car is red.",                           # a value in lower-case words
    "Kelso Castle changed hands: Fenella Orr bought it.",  # a statement, not a label
    "Warden of Kelso Castle: Fenella Orr, Ewan Dyce, Maud Ek, Tove Aas, Bo Lind, Ines Ruda and Marek Holm",
    "Lowick Rowing Club languages: English",                # no label of many values
])
def test_what_is_not_a_labelled_note(text):
    assert note_key(text) is None


@pytest.mark.parametrize("text, key", [
    ("Moorland Kennels has 14 pups.", ("Moorland Kennels", "pups", "14")),
    ("After the spring litters, Moorland Kennels is up to 22 pups.", ("Moorland Kennels", "pups", "22")),
    ("Fenella Orr: fenella@kelso-castle.test", ("Fenella Orr", "email", "fenella@kelso-castle.test")),
    ("Ewan Dyce is +44 7700 900555", ("Ewan Dyce", "phone", "+44-7700-900555")),
])
def test_a_count_or_a_contact_states_its_key(text, key):
    assert plain_key(text) == key


@pytest.mark.parametrize("text", ["Moorland Kennels had 14 pups.",        # the past
                                  "Moorland Kennels has 14 staff and a vet.",  # no plural of things: the lexicon's
                                  "Phone: +44 7700 900555",                   # a label, no subject
                                  "Fenella Orr wrote to fenella@kelso-castle.test"])
def test_what_is_no_count_or_contact(text):
    assert plain_key(text) is None


def test_a_count_labelled_in_a_note_is_the_count_of_its_things():
    assert note_key("Moorland Kennels pup count: 30") == ("Moorland Kennels", "pups", "30")
    assert counted("number of pups") == counted("pup count") == "pups" and counted("captain") == "captain"


def test_a_head_office_is_the_headquarters_not_one_more_site():
    from fabric.placement.rules import sentence_key

    assert sentence_key("Kelso Mills has its head office in Hawick.") == ("Kelso Mills", "headquarters", "Hawick")
    assert sentence_key("Kelso Mills opened an office in Hawick.") is None  # one more site: many values, no key


def test_a_value_with_a_lower_case_tail_after_a_comma_is_still_a_value():
    assert note_key("Kelso Mills hours are now 9:00-17:00, six days a week.") == ("Kelso Mills", "hours", "09:00-17:00")


@pytest.mark.parametrize("text, key", [
    ("Wren Halloway is a junior analyst.", ("Wren Halloway", "job_title", "junior analyst")),
    ("I'm now ward manager - since March.", ("User", "job_title", "ward manager")),
    ("Ilse Brand has become head nurse.", ("Ilse Brand", "job_title", "head nurse")),
])
def test_a_title_in_lower_case_words_keys_its_holder(text, key):
    assert title_key(text) == key


@pytest.mark.parametrize("text", ["Wren Halloway was a junior analyst.", "Wren Halloway is a former nurse.",
                                  "Wren Halloway is not a nurse.", "Wren Halloway is a regular at the Crown.",
                                  "Wren Halloway is the best analyst.", "Wren Halloway is a mother of two."])
def test_what_is_no_title_held_now(text):
    assert title_key(text) is None


def test_two_titles_of_one_person_are_one_fact_for_the_net():
    from fabric.placement.rules import sentence_key

    old, new = sentence_key("Wren Halloway is a junior analyst."), sentence_key("Wren Halloway got promoted to "
                                                                                "senior analyst.")
    assert old is not None and new is not None and old[:2] == new[:2] == ("Wren Halloway", "job_title")


@pytest.mark.parametrize("text, subject", [
    ("Moved my current account to Brackwater Bank last week.", "User"),   # a capitalised first word is no name
    ("Sold my bike to Ilse Varga.", "User"),
    ("Booked my flights with Corvid Air.", "User"),
])
def test_the_user_is_a_name_alone(text, subject):
    from fabric.placement.rules import written_key

    key = written_key(text)
    assert key is not None and key[0] == subject, key


@pytest.mark.parametrize("text, key", [
    ("Ilsa Brandvold got promoted to senior analyst.", ("Ilsa Brandvold", "job_title")),   # a title in words
    ("Bramwell Clinic is up to 140 beds now.", ("Bramwell Clinic", "beds")),               # a count
    ("Mayor of Tollcross: Esmé Varga", ("Tollcross", "mayor")),                            # a labelled note
    ("Odile Marchetti went fully vegetarian.", ("Odile Marchetti", "diet")),               # a state
    ("Odile Marchetti said she might go vegetarian.", (None, None)),                       # a maybe: no fact
    ("Odile Marchetti is thinking about going vegan.", (None, None)),
])
def test_placement_gathers_under_the_key_a_write_would_be_stored_under(text, key):
    """The lexicon reads none of these; the key the write would be stored under is the one its old
    versions carry, so placement looks them up whatever their similarity (apply.write_key)."""
    from fabric.write.apply import write_key

    write = IncomingWrite(id=uuid.uuid4(), org="o", content=text, valid_from=datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert write_key(write) == key
