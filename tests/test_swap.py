"""Corrections whose value is a lower-case word or phrase (a voice part, a stage, a day, a kind of milk), in users'
wording: the same sentence with one span swapped, a terse note against a sentence, a break-up told with the new
partner; and the traps a correction must not fall into (synonyms, many values, other holders, other times,
hypotheticals). Sentences written for this file; the real embedding model throughout (no database)."""

from __future__ import annotations

import pytest

from tests.fix_placement import decide

# (first write, later write): one fact, another lower-case value.
CORRECTED = [
    # the same frame, one word swapped, no word of change: a value that holds one at a time
    ("Priya Shah sings tenor in the Hallam Male Voice Choir.", "Priya Shah sings bass in the Hallam Male Voice Choir."),
    ("Marta Ruiz is a beginner climber at the Foundry wall.", "Marta Ruiz is an advanced climber at the Foundry wall."),
    ("Juno Hart is engaged.", "Juno Hart is married."),
    ("The parcel to Turku is in transit.", "The parcel to Turku has been delivered."),
    ("Amos Reed works nights.", "Amos Reed is on early shifts now."),
    # a change said
    ("I put whole milk in my tea.", "fyi I've switched to almond milk in my tea"),
    ("The Orla app is in alpha.", "The Orla app is in beta now."),
    ("Quill Notes is in private preview.", "Quill Notes has been generally available since 3 March."),
    ("Beno Kraus works nights at the Delph depot.", "Beno Kraus moved to day shifts at the Delph depot."),
    ("Yuki Sato plays viola in the Northgate Quartet.", "Yuki Sato switched to cello in the Northgate Quartet."),
    ("The Harbour Run is held in spring.", "The Harbour Run has moved to autumn."),
    ("The Larch Street pool is heated.", "The Larch Street pool is unheated now."),
    # no name: the words both open with are the subject
    ("Our office dog is a beagle.", "our office dog is a spaniel now"),
    # a terse note against a sentence
    ("The Harlow Book Club meets on Tuesdays.", "Harlow Book Club meetings: Wednesdays, 6pm"),
    # a break-up, and the new partner
    ("Dev Malik's partner is Sami.", "Dev Malik and Sami split up; Dev Malik is with Alex now."),
    ("Ines Roa is dating Theo.", "Ines Roa broke up with Theo and is seeing Marco these days."),
]

# (first write, later write): not a correction of the first.
APART = [
    # synonyms and other verbs: the same fact reworded
    ("Ola Berg bought a car last week.", "Ola Berg purchased a car last week."),
    ("The Eastgate Band rehearses on Mondays.", "The Eastgate Band practises on Mondays."),
    ("The Kestrel Cafe is large.", "The Kestrel Cafe is big."),
    ("I walk the dog every morning.", "I now feed the cat every morning."),
    ("Our office dog is a beagle.", "Our office cat is a tabby."),
    ("The Orla app is in beta.", "The Orla app's new feature is in alpha."),  # another holder inside the span
    ("Ravi Das takes the bus to work.", "Ravi Das takes the train to the gym now."),  # another thing, another place
    # many values at once
    ("Tomas Lind plays tennis.", "Tomas Lind plays golf now."),
    ("Yuki Sato plays viola in the Northgate Quartet.", "Yuki Sato also plays cello at home."),
    ("Tomas Lind plays tennis.", "Tomas Lind plays badminton."),
    ("Ravi Osei has a cat.", "Ravi Osei has a dog."),
    ("Hana Ito speaks French.", "Hana Ito speaks Spanish."),
    ("Ines Roa sings alto in the Greyfriars Choir.", "Ines Roa also sings soprano in the Bach Society."),
    # another holder: a relative, a twin, a sister product
    ("Mina Cho sings alto in the Greyfriars Choir.", "Mina Cho's daughter sings soprano in the Greyfriars Choir."),
    ("Orla Pay is in beta.", "Orla Books is generally available now."),
    ("Jon Hale is a beginner climber.", "Jon Hale's twin is an advanced climber."),
    ("Juno Hart is engaged.", "Juno Hart's sister is married."),
    ("Mara Quist is a junior designer at Fenwick.", "Mara Quist was a senior designer at Fenwick."),
    # another time, a hypothetical
    ("Tala Reyes works nights in winter.", "Tala Reyes works days in summer."),
    ("Nomi Achebe sings alto in the Greyfriars Choir.", "Nomi Achebe might sing soprano in the Greyfriars Choir."),
    ("Dev Malik's partner is Sami.", "Dev Malik's brother broke up with Alex."),
]


@pytest.mark.parametrize(("old", "new"), CORRECTED)
def test_a_lower_case_value_changed_forks(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new)
    assert d.kind == "contradiction_fork", d.reason
    assert target == old


@pytest.mark.parametrize(("old", "new"), APART)
def test_no_false_correction(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new)
    assert d.kind != "contradiction_fork", d.reason


@pytest.mark.parametrize(("old", "new"), [
    ("Priya Shah sings tenor in the Hallam Male Voice Choir.", "Priya Shah sings bass in the Hallam Male Voice Choir."),
    ("Tomas Lind plays tennis.", "Tomas Lind plays badminton."),
    ("The Orla cafe's walls are green.", "The Orla cafe's walls are yellow."),
    ("Tilde Mora is left-handed.", "Tilde Mora is right-handed."),
    ("I take my coffee with sugar.", "I've stopped taking sugar in my coffee."),
])
def test_a_swapped_value_is_never_a_duplicate(rules, embedder, old, new):
    """Whatever else is decided, a lost fact is the worst outcome: a changed value is no rewording."""
    d, _ = decide(rules, embedder, old, new)
    assert d.kind != "duplicate", d.reason


@pytest.mark.parametrize(("old", "new"), [
    ("The Kestrel Cafe is large.", "The Kestrel Cafe is big."),
    ("Hugo Lind is a keen cyclist.", "Hugo Lind is an avid cyclist."),
])
def test_a_synonym_is_still_a_duplicate(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new)
    assert d.kind == "duplicate", d.reason


@pytest.mark.parametrize(("old", "new", "fork"), [
    ("Oskar Lind works at Fernhill Labs.", "Oskar Lind left Fernhill Labs for Quanta Robotics.", True),
    ("Bea Holm's gym is Pure Gym Leeds.", "Bea Holm cancelled Pure Gym and joined The Gym Group.", True),
    # a trip, an errand, an object left somewhere, someone else, a maybe
    ("Oskar Lind works at Fernhill Labs.", "Oskar Lind left Fernhill Labs for Berlin on Monday.", False),
    ("Oskar Lind works at Fernhill Labs.", "Oskar Lind left Fernhill Labs early for a lunch with Quanta.", False),
    ("Oskar Lind works at Fernhill Labs.", "Oskar Lind left his laptop at Fernhill Labs for Quanta.", False),
    ("Bea Holm's gym is Pure Gym Leeds.", "Bea Holm's husband cancelled Pure Gym and joined The Gym Group.", False),
])
def test_left_for_the_next_one(rules, embedder, old, new, fork):
    """"left X for Y", "cancelled X and joined Y": the old value said gone, the new one named right after it."""
    d, _ = decide(rules, embedder, old, new)
    assert (d.kind == "contradiction_fork") is fork, d.reason
