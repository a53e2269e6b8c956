"""The local rule validator (fabric/placement/rules.py): pure decisions over candidates whose
similarities come from the real embedding model (fixtures `rules` and `embedder`: tests/fix_placement.py)."""

from __future__ import annotations

from fabric.placement.rules import (
    entities, is_paraphrase, leading_name, negates, single_substitution, value_position,
)
from fabric.placement.validator import words
from tests.fix_placement import decide

# ------------------------------------------------------------------------------ contradictions


def test_value_at_the_end_is_a_contradiction(rules, embedder):
    d, target = decide(rules, embedder, "Rosa Holm lives in Dresden.", "Rosa Holm lives in Tallinn.")
    assert d.kind == "contradiction_fork" and target == "Rosa Holm lives in Dresden."


def test_value_in_the_middle_after_the_leading_name_is_a_contradiction(rules, embedder):
    old = "Meridian Bio has Jonathan Hale as its CEO."
    d, target = decide(rules, embedder, old, "Meridian Bio has Priya Nair as its CEO.")
    assert d.kind == "contradiction_fork" and target == old
    assert "jonathan hale" in d.reason.lower() and "priya nair" in d.reason.lower()


def test_a_different_subject_in_the_same_frame_is_another_fact(rules, embedder):
    d, _ = decide(rules, embedder, "Ada Moreau works at Kestrel Dynamics.", "Bruno Castell works at Kestrel Dynamics.")
    assert d.kind == "new_branch"
    # Half of the name changed: still another person, not a correction and not a repeat.
    d, _ = decide(rules, embedder, "Ada Moreau works at Kestrel Dynamics.", "Ada Lindqvist works at Kestrel Dynamics.")
    assert d.kind == "new_branch"


def test_a_changed_verb_right_after_the_name_is_not_a_changed_value(rules, embedder):
    d, _ = decide(rules, embedder, "Ada Moreau lives in Lyon.", "Ada Moreau works in Lyon.")
    assert d.kind != "contradiction_fork"


def test_a_negated_extension_is_a_contradiction_not_a_detail(rules, embedder):
    old = "The Berlin office is open on Sundays."
    d, target = decide(rules, embedder, old, "The Berlin office is not open on Sundays.")
    assert d.kind == "contradiction_fork" and target == old
    d, _ = decide(rules, embedder, old, "The Berlin office is open on Sundays from noon to five.")
    assert d.kind == "child_update"


# ------------------------------------------------------------------------------ duplicates


def test_a_reworded_frame_with_the_same_names_is_a_paraphrase(rules, embedder):
    old = "Bramble Data has its headquarters in Riga."
    d, target = decide(rules, embedder, old, "Bramble Data is headquartered in Riga.")
    assert d.kind == "duplicate" and target == old


def test_a_sentence_initial_common_word_is_not_a_name(rules, embedder):
    old = "The warehouse in Rotterdam stores frozen goods."
    d, target = decide(rules, embedder, old, "Frozen goods are stored at the Rotterdam warehouse.")
    assert d.kind == "duplicate" and target == old


def test_swapped_roles_are_not_a_paraphrase(rules, embedder):
    d, _ = decide(rules, embedder, "Ada Moreau reports to Jonathan Hale.", "Jonathan Hale reports to Ada Moreau.")
    assert d.kind == "new_branch"


def test_a_negation_is_never_a_paraphrase():
    a, b = "Ada Moreau works at Northwind Traders.", "Ada Moreau does not work at Northwind Traders."
    assert is_paraphrase(a, a.replace("works", "is employed"), 0.95, 0.92)
    assert not is_paraphrase(a, b, 0.99, 0.92)
    assert not is_paraphrase(a, "Ada Moreau isn't at Northwind Traders.", 0.99, 0.92)
    assert not is_paraphrase(a, a.replace("works", "is employed"), 0.90, 0.92)  # below the threshold


def test_a_different_name_or_number_is_not_a_paraphrase():
    assert not is_paraphrase("The API allows 100 requests a minute.", "The API allows 200 requests a minute.",
                             0.99, 0.92)
    assert not is_paraphrase("Ada Moreau lives in Lyon.", "Ada Moreau lives in Porto.", 0.99, 0.92)


def test_a_detail_is_a_child_update_and_a_repeat_a_duplicate(rules, embedder):
    old = "Greta Laine works at Marlowe Logistics."
    d, target = decide(rules, embedder, old, "Greta Laine works at Marlowe Logistics as a data engineer.")
    assert d.kind == "child_update" and target == old
    d, target = decide(rules, embedder, old, "greta laine works at Marlowe Logistics!")
    assert d.kind == "duplicate" and target == old


def test_the_right_neighbour_among_distractors(rules, embedder):
    olds = ["Jana Teixeira works at Larkspur Semiconductors.", "Elif Esposito has a job at Meridian Bio.",
            "Greta Laine works at Marlowe Logistics."]
    d, target = decide(rules, embedder, olds, "Greta Laine works at Ostara Labs.")
    assert d.kind == "contradiction_fork" and target == "Greta Laine works at Marlowe Logistics."


# ------------------------------------------------------------------------------ keys


def test_keys_decide_before_text(rules, embedder):
    old = "Greta Laine works at Marlowe Logistics."
    key = ("Greta Laine", "employer", "Marlowe Logistics")
    d, _ = decide(rules, embedder, old, "Greta Laine is employed by Marlowe Logistics.", key=key, old_key=key)
    assert d.kind == "duplicate"
    d, target = decide(rules, embedder, old, "Greta Laine has a job at Ostara Labs.",
                       key=("Greta Laine", "employer", "Ostara Labs"), old_key=key)
    assert d.kind == "contradiction_fork" and target == old
    # A single swapped span under another key is another fact.
    d, _ = decide(rules, embedder, "Greta Laine lives in Lyon.", "Greta Laine lives in Porto.",
                  key=("Greta Laine", "home_city", "Porto"), old_key=("Greta Laine", "holiday_city", "Lyon"))
    assert d.kind == "new_branch"


# ------------------------------------------------------------------------------ the helpers


def test_helpers():
    assert leading_name("Meridian Bio has Jonathan Hale as its CEO.") == 2
    assert leading_name("The Berlin office closes at six.") == 2
    assert leading_name("The chief executive of Meridian Bio is Jonathan Hale.") == 0
    assert leading_name("frozen goods are stored here") == 0
    assert negates("Our office doesn't open on Sundays.") and negates("No one works there.")
    assert not negates("Nora knows the way.")
    assert entities("Frozen goods are stored at the Rotterdam warehouse.", lowercase={"frozen"}) == {"rotterdam"}
    assert entities("Tom drives a red Toyota Corolla.") == {"tom", "toyota", "corolla"}
    old, new = "Meridian Bio has Jonathan Hale as its CEO.", "Meridian Bio has Priya Nair as its CEO."
    sub = single_substitution(words(old), words(new))
    assert sub == (3, 5, 3, 5) and value_position(old, new, sub)
    old, new = "Ada Moreau works at Kestrel.", "Bruno Castell works at Kestrel."
    assert not value_position(old, new, single_substitution(words(old), words(new)))
