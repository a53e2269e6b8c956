"""The generic same-fact path (fabric/placement/samefact.py) and its hooks in the rule validator: one subject and
one value a side in frames alike, a change said in closed-class words, a replacement said outright, values written
differently; and the traps a correction must not fall into. Sentences written for this file; the real embedding
model throughout (no database)."""

from __future__ import annotations

import pytest

from fabric.placement import samefact
from tests.fix_placement import decide

# (first write, later write): one fact, another value, and the new sentence says the change.
CHANGED = [
    ("Marit Solberg's team is Payments Core.", "Marit Solberg switched to the Ledger team."),
    ("The Tidewater ferry costs 14 euros.", "Tidewater raised the ferry's fare to €17."),
    ("Osian Bell manages the Crewe depot.", "Osian Bell was moved to run the Stafford depot."),
    ("Nadia Kerr's rent is 950 a month.", "Nadia Kerr's landlord put the rent up to £1,020 a month."),
]

# (first write, later write): one fact, the old value said gone and a new one named in its place.
REPLACED = [
    ("Halloway Clinic's dentist is Dr. Ines Varga.", "Dr. Tomas Reid has replaced Dr. Ines Varga at Halloway Clinic."),
    ("Lowri Pryce is married to Anton Diaz.", "Lowri Pryce divorced Anton Diaz and married Sami Okoro."),
    ("Bram Jessop drives a grey Skoda Octavia.", "Bram Jessop sold the Skoda and drives a Kia Niro now."),
    ("Petra Lund is the secretary of the Elmbridge Chess Club.",
     "The Elmbridge Chess Club elected Yusuf Amari as secretary, replacing Petra Lund."),
]

# (first write, later write): the same value written another way.
SAME = [
    ("Idris Kane's phone number is 07700 900 431.", "Idris Kane can be reached on +44 7700 900431."),
    ("The Larkspur kettle weighs 1.5 kg.", "Larkspur kettle weight: 1500 grams"),
    ("Fenmore Bakery employs 120 people.", "Fenmore Bakery has a staff of one hundred and twenty."),
]

# (first write, later write): no correction of the first, though a word of change may be said.
APART = [
    # another attribute of the same subject, with a change said
    ("Orrin Vale lives in Bruges.", "Orrin Vale now works in Antwerp."),
    ("Halden Foods' CFO is Ruth Amsel.", "Halden Foods has a new CTO, Bram Ek."),
    ("The Ostrava office has 40 desks.", "The Ostrava office now has 12 meeting rooms."),
    ("Abel Ferro weighs 80 kg.", "Abel Ferro now lifts 120 kg."),
    # many values at once
    ("Pell & Daughters has an office in Leeds.", "Pell & Daughters opened a new office in York."),
    ("Ravi Osei supports Arsenal.", "Ravi Osei now also follows Celtic."),
    # time-scoped: other days, another line
    ("The Brisk Cafe opens at 8am on weekdays.", "The Brisk Cafe now opens at 10am on Sundays."),
    ("Juno Park's phone number is 0161 496 0012.", "Juno Park's office line is now 0161 496 0999."),
    # a relative, a sister company
    ("Kaito Brandt is 34.", "Kaito Brandt's son is now 6."),
    ("Corvel Labs is based in Oslo.", "Corvel Robotics moved to Bergen."),
    # a role read backwards, a manager's manager
    ("Ezra Quint's manager is Dana Holt.", "Ezra Quint now manages Leo Park."),
    ("Bryn Ames reports to Carla Voss.", "Carla Voss now reports to Ivo Marsh."),
    # a replacement of someone else, or of something the old sentence does not name
    ("Ezra Quint's manager is Dana Holt.", "Ezra Quint replaced Dana Holt as team lead at Fenwick."),
    ("Sunniva Berg drives a red Polo.", "Sunniva Berg sold her bike and bought a Brompton."),
    ("Sunniva Berg has a Polo.", "Sunniva Berg's sister sold the Polo and bought a Clio."),
]


@pytest.mark.parametrize(("old", "new"), CHANGED + REPLACED)
def test_a_correction_in_other_words_forks(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new)
    assert d.kind == "contradiction_fork", d.reason
    assert target == old


@pytest.mark.parametrize(("old", "new"), SAME)
def test_the_same_value_written_otherwise_is_a_duplicate(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new)
    assert d.kind == "duplicate", d.reason
    assert target == old


@pytest.mark.parametrize(("old", "new"), APART)
def test_no_false_correction(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new)
    assert d.kind != "contradiction_fork", d.reason
    found = samefact.compare(old, new)
    assert found is None or found.verdict != "contradiction_fork", found


def test_a_changed_value_needs_a_change_said():
    """Two values of one frame with no word of change may both hold (a second office, two cars)."""
    old = "Marit Solberg's team is Payments Core."
    assert samefact.compare(old, "Marit Solberg switched to the Ledger team.") is not None
    assert samefact.compare(old, "Marit Solberg is in the Ledger team.") is None


def test_the_replacement_reads_who_is_gone():
    found = samefact.replacement("Lowri Pryce is married to Anton Diaz.",
                                 "Lowri Pryce divorced Anton Diaz and married Sami Okoro.")
    assert found is not None
    assert (found.subject, found.old_value, found.new_value) == ("Lowri Pryce", "Anton Diaz", "Sami Okoro")


@pytest.mark.parametrize(("a", "b", "same"), [
    ("07700 900 431", "+44 7700 900431", True),
    ("07700 900 431", "07700 900 432", False),
    ("1.5 kg", "1500 grams", True),
    ("1.5 kg", "1500 metres", False),
    ("120", "120", True),
    ("Payments Core", "payments core", True),
    ("Payments Core", "Ledger", False),
])
def test_values_compared_after_normalisation(a, b, same):
    assert samefact.same_value(a, b) is same


@pytest.mark.parametrize(("old", "new", "more"), [
    ("Ada Roe has a cat.", "Ada Roe's cat Miso is afraid of the hoover.", True),
    ("I have a bike.", "My bike is a green Brompton I bought in Leeds.", True),
    ("Lena Varga works at Halvard Bank.", "Lena Varga's husband works at Halvard Bank.", False),  # someone else
    ("Lena Varga has a sister.", "Lena Varga has another sister, Ilse, in Graz.", False),  # a second one
    ("Lena Varga works at Halvard Bank.", "Lena Varga no longer works at Halvard Bank since the merger.", False),
    ("I'm a night owl.", "If I ever stop being a night owl it'll be for my new baby.", False),  # a hypothetical
    # a change said in a verb of change
    ("The standup is at 9:15 on Mondays.", "The standup at 9:15 on Mondays was moved to 9:45 today.", False),
    ("Our rota is posted on Fridays.", "Our rota, posted on Fridays, switched to Thursdays this term.", False),
    ("Ada Roe lives in York.", "Ada Roe has lived in York since 2019, near the Minster.", True),  # "since": detail
])
def test_a_refinement_says_all_the_old_one_says(old, new, more):
    assert samefact.refines(old, new) is more


def test_a_refinement_is_placed_under_its_parent(rules, embedder):
    d, target = decide(rules, embedder, "Ada Roe has a cat.", "Ada Roe's cat Miso is afraid of the hoover.")
    assert d.kind == "child_update", d.reason
    assert target == "Ada Roe has a cat."
