"""Wordings users write that round 1 of the rule validator missed (fabric/placement/align.py, facts.py,
rules.py): chat memories about "the user", reported speech, honorifics, adverbs inside a relation,
values written in other forms, brand names in camel case. Sentences written here, not taken from the
labelled sets (tests/data/placement_pairs_v*.jsonl). Pure: no database; the embedding model where
the alignment consults it."""

from __future__ import annotations

import pytest

from fabric.placement.align import canonical
from fabric.placement.facts import extract
from tests.fix_placement import decide


@pytest.mark.parametrize("text, written", [
    ("the user works for a bakery", "User works for a bakery"),
    ("The User owns a kayak.", "User owns a kayak."),
    ("My sister is a nurse.", "User's sister is a nurse."),
    ("I'm based in Oslo and I commute by bike.", "User is based in Oslo and User commutes by bike."),
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


def read_both(old: str, new: str):
    """Each sentence's fact, read beside the other; both must read."""
    a, b = extract(old, new), extract(new, old)
    assert a is not None and b is not None
    return a, b


@pytest.mark.parametrize("old, new", [
    ("The user lives in Cork.", "User said they recently moved to Cork."),
    ("I live in Cork.", "the user lives in Cork"),
    ("Priya Das answers to Leo Grant.", "Priya Das reports directly to Leo Grant."),
])
def test_restated_by_the_user_or_with_an_adverb_the_fact_is_the_same(old, new):
    a, b = read_both(old, new)
    assert (a.subject_key, a.relation, a.value_key) == (b.subject_key, b.relation, b.value_key)


def test_brands_in_camel_case_are_names():
    fact = extract("Noor Haddad is a designer at eToro these days.")
    assert (fact.subject_key, fact.relation, fact.value_key) == ("noor haddad", "employer", "etoro")
    assert extract("The kiosk sells iPads.") is None or extract("The kiosk sells iPads.").value != "kiosk"


@pytest.mark.parametrize("old, new", [
    ("Eli Stone's phone number is +44 20 7946 0958.", "The phone number of Eli Stone is +44 20 79460958."),
    ("Project Wren's budget is $90,000.", "Wren has a budget of 90k dollars."),
])
def test_values_and_names_written_another_way_are_the_same(old, new):
    a, b = extract(old, new), extract(new, old)
    assert a is not None and b is not None
    assert (a.subject_key, a.value_key) == (b.subject_key, b.value_key)


def test_a_second_line_is_not_a_new_number():
    from fabric.placement.align import compare_aligned, relation_similarity

    got = compare_aligned("Eli Stone's mobile is 0612-345678.", "Eli Stone's office line is 0144-556677.",
                          relation_similarity)
    assert got.verdict == "separate"
    same = compare_aligned("Eli Stone's phone number is 0612 345678.", "Eli Stone's mobile: 0612-345-678.",
                           relation_similarity)
    assert same.verdict == "duplicate"
    moved = compare_aligned("Eli Stone's mobile is 0612-345678.", "Eli Stone's mobile is now 0699-112233.",
                            relation_similarity)
    assert moved.verdict == "contradiction_fork"


def test_a_figure_of_another_year_is_another_fact():
    from fabric.placement.facts import compare

    old = extract("Orchard Mills had a turnover of $8 million in 2021.")
    assert compare(old, extract("In 2022 the turnover of Orchard Mills was $9.5 million.")) == "separate"
    assert compare(old, extract("Orchard Mills' 2021 revenue was 8,000,000 dollars.")) == "duplicate"
    # a change dated "since" is still a change of the one current figure
    assert extract("Since 2024, Orchard Mills has had 340 employees.").period == frozenset()
    assert compare(extract("Orchard Mills has 300 employees."),
                   extract("Since 2024, Orchard Mills has had 340 employees.")) == "contradiction_fork"


def test_words_that_only_look_negative_negate_nothing():
    assert not extract("Tove Berg lives in Malmo, not far from the harbour.").negated
    assert extract("Tove Berg does not live in Malmo.").negated


def test_a_qualified_head_noun_and_places_been_to():
    from fabric.placement.align import compare_aligned, relation_similarity

    assert compare_aligned("Ravi Menon's email is ravi@oak.dev.", "Ravi Menon's email address is now rm@pine.dev.",
                           relation_similarity).verdict == "contradiction_fork"
    assert compare_aligned("Ravi Menon has been to Peru.", "Ravi Menon has been to Chile.",
                           relation_similarity).verdict == "separate"


@pytest.mark.parametrize("text, written", [
    ("The audit is due 2026-07-09.", "The audit is due July 9, 2026."),
    ("The audit is due on the 9th of July, 2026.", "The audit is due on the July 9, 2026."),
    ("The audit is due July 9th.", "The audit is due July 9."),
    ("Ward 4 May close early.", "Ward 4 May close early."),  # a verb, not a month
])
def test_dates_are_written_one_way(text, written):
    assert canonical(text) == written


def test_a_new_holder_named_after_a_comma_replaces_the_old_one():
    from fabric.placement.facts import compare

    old = extract("Dr. Helen Achterberg is the conductor of Brightwater Symphony.")
    new = extract("Brightwater Symphony has a new conductor: Tomas Varga.")
    assert new is not None and (new.subject_key, new.value_key) == ("brightwater symphony", "tomas varga")
    assert compare(old, new) == "contradiction_fork"


def test_a_date_a_project_must_ship_by_is_its_deadline():
    from fabric.placement.facts import compare

    old, new = extract("Juniper's deadline is 2026-02-01."), extract("Juniper must be done by 1 February 2026.")
    assert (new.relation, new.value_key) == ("deadline", old.value_key)
    assert compare(old, new) in ("duplicate", "child_update")


def test_a_relative_is_someone_the_subject_has_not_a_word_in_a_clause():
    from fabric.placement.align import read

    assert read("Omar Said's daughter studies in Delft.").relatives == frozenset({"daughter"})
    assert read("The partner of Omar Said runs a bakery.").relatives == frozenset({"partner"})
    assert read("Omar Said chairs Lindqvist, a former Accenture partner.").relatives == frozenset()


def test_a_former_role_in_a_trailing_clause_leaves_the_fact_current():
    fact = extract("The chief executive of Ostwind Rail is Mara Pohl, formerly a consultant.")
    assert fact is not None and not fact.past
    assert extract("Mara Pohl was formerly the chief executive of Ostwind Rail.").past


def test_when_a_change_takes_effect_is_no_part_of_the_attribute():
    from fabric.placement.align import compare_aligned, relation_similarity

    got = compare_aligned("The Lindenhof pool closes at 9 pm.",
                          "Starting next month the Lindenhof pool will close at 10 pm.", relation_similarity)
    assert (got.verdict, got.old_value, got.new_value) == ("contradiction_fork", "21:00", "22:00")


@pytest.mark.parametrize("text, written", [
    ("The vote was postponed by a week, to June 2.", "The vote was postponed to June 2."),
    ("Go-live got moved forward 3 days to May 9.", "Go-live got moved to May 9."),
    ("The cluster runs Redis v7.2.", "The cluster runs Redis 7.2."),
])
def test_how_far_a_date_moved_and_a_version_prefix_are_left_out(text, written):
    assert canonical(text) == written


def test_money_in_other_currencies_is_money():
    from fabric.placement.align import compare_aligned, relation_similarity
    from fabric.placement.facts import number_key

    assert number_key("120 kronor") == number_key("120") == "120"
    got = compare_aligned("A sauna session at Kallbad Vest costs 120 SEK.",
                          "A sauna session at Kallbad Vest is 150 kronor.", relation_similarity)
    assert got.verdict == "contradiction_fork"
    other = compare_aligned("A sauna session at Kallbad Vest costs 120 SEK.",
                            "A sauna session at Kallbad Vest lasts 120 minutes.", relation_similarity)
    assert other.verdict not in ("contradiction_fork", "duplicate")


@pytest.mark.parametrize("old, new", [
    ("I work at Stripe.", "User just joined Revolut."),
    ("Helios Labs is owned by Arkwright.", "Ownership of Helios Labs passed to Brightstar Capital."),
    ("my manager is Tom Reed", "The user now reports to Aiko Mori."),
])
def test_a_change_said_with_a_verb_of_change_is_a_contradiction(old, new):
    from fabric.placement.facts import compare

    assert compare(extract(old, new), extract(new, old)) == "contradiction_fork"


def test_an_adjective_before_the_possessed_noun_keeps_the_fact_tight():
    from fabric.placement.facts import compare

    old, new = extract("Marta Ruiz's line manager is Ivo Petrov."), extract("Marta Ruiz's new line manager is Sven Ek.")
    assert not new.loose
    assert compare(old, new) == "contradiction_fork"


@pytest.mark.parametrize("old, new", [
    ("Marta Sousa's favourite bakery is Pão Quente.", "Lately Marta Sousa's go-to bakery is Crumb & Co."),
    ("Omar Lindqvist's favorite podcast is Deep Field.", "Omar Lindqvist's fave podcast these days is Night Shift."),
    ("The go-to editor of Ines Baptiste is Vim.", "Ines Baptiste's favourite editor is now Helix."),
])
def test_go_to_and_fave_name_the_same_favourite(old, new):
    a, b = read_both(old, new)
    assert a.relation == b.relation and a.relation.startswith("favourite_")
    assert a.subject_key == b.subject_key and a.value_key != b.value_key


def test_a_go_to_favourite_changed_is_a_correction(rules, embedder):
    old = "Hugo Lenz's favourite café is Kaffeeklatsch."
    d, target = decide(rules, embedder, old, "These days Hugo Lenz's go-to café is Bean There.", pregated=True)
    assert d.kind == "contradiction_fork" and target == old
