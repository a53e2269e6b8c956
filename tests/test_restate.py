"""The same content in other words (fabric/placement/restate.py): a fact restated with the same names, numbers,
times and content words after normalisation is a duplicate; one that says all of it and more about the same
subject is a refinement; and the traps that must stay apart (role swaps, twins, another date, another value, a
negation, a relative, a question). Sentences written for this file."""

from __future__ import annotations

import pytest

from fabric.placement.restate import restatement
from tests.fix_placement import decide

# (first write, later write): the same content, other words.
SAME = [
    ("My bike is stored in rack 7 at the Hollis Street garage.", "bike rack: #7 (Hollis Street garage)"),
    ("The Dunmore library is open 9:00-17:00 on weekdays.", "Dunmore library hours: 9am to 5pm, Mon-Fri"),
    ("User's ring size is EU 54.", "I take a size 54 in rings (EU sizing)"),
    ("Koa's blood group is A positive.", "Koa: A-pos (blood group)"),
    ("I have a season ticket for Ashby Town.", "season ticket - Ashby Town (mine)"),
    ("Bellway Gym offers a sauna.", "Bellway Gym has a sauna."),
    ("Our wifi password is heron42.", "wifi password: heron42"),
    ("My passport expires on 3 March 2029.", "passport expiry: 03/03/2029"),
    ("The gym closes at 10pm on Fridays.", "Fri: gym shuts 22:00"),
    ("User works from home on Mondays and Fridays.", "WFH Mon + Fri"),
    ("Ada Brennan's birthday is 12 May.", "Ada Brennan was born on 12 May."),
    ("The Wi-Fi network is called Heron-5G.", "wifi network: Heron-5G"),
    ("User's favorite color is teal.", "fave colour: teal"),
    ("The Fenwick branch is located at 22 Mill Rd.", "Fenwick branch: 22 Mill Road"),
    ("User has two cats.", "I've got 2 cats"),
    ("The Rowan Street flat has two bedrooms.", "Rowan St flat: 2 bedrooms"),
    ("Noor's anniversary is on 14 February.", "Noor anniversary - Feb 14"),
    ("Verity Labs' office is on the 3rd floor.", "Verity Labs office - third floor"),
    ("User's car is a 2019 Toyota Yaris.", "I drive a Toyota Yaris (2019)"),
    ("User lives in New York City.", "i live in NYC"),
    ("User's flight to Oslo is on Friday at 06:00.", "flying to Oslo Fri 6am"),
    ("User's meeting with Ana is on Thursday at 3pm.", "Thu 15:00 - meeting w/ Ana"),
    ("The Pine Street bakery closes on Mondays.", "pine st bakery: closed mondays"),
    ("User's favourite band is Radiohead.", "fav band: radiohead"),
    ("User's mum lives in Galway.", "my mother lives in galway"),
    ("Jakub Nowak owns the payments roadmap.", "The payments roadmap is owned by Jakub Nowak."),
    ("Ada Lund manages Ben Ortiz.", "Ben Ortiz is managed by Ada Lund."),
    # a note leaves a word out: it says less, nothing else
    ("User's mortgage rate is 4.2%.", "mortgage: 4.2 per cent"),
    ("The Harbour St car park costs £3 an hour.", "Harbour St car park: £3/hr"),
]

# (first write, later write): the same subject and attribute, with more said.
MORE = [
    ("User cycles to work.", "User rides a bike to work, along the canal path from Jericho to Osney."),
    ("Tallis Bank offers a savings account.", "Tallis Bank's savings account pays 4.1% on balances up to 5,000."),
    ("User goes to work by bus.", "User commutes by bus, usually the number 35 from Headington."),
    ("User is vegetarian.", "User is vegetarian but eats fish on holidays."),
    ("The Larch Street gym has a pool.", "The Larch Street gym has a 25 m pool, open 6am-10pm."),
    ("user has a peanut allergy", "User has a severe peanut allergy and carries an EpiPen."),
]

# (first write, later write): must not be read as the same fact, nor as more of it.
APART = [
    ("Ines Moreau manages Pablo Ruiz.", "Pablo Ruiz manages Ines Moreau."),
    ("Lena Vogt plays cello in the Eastfield orchestra.", "Lina Vogt plays cello in the Eastfield orchestra."),
    ("The Dunmore library is open 9:00-17:00 on weekdays.", "The Dunmore library is open 10:00-16:00 on Saturdays."),
    ("User's ring size is EU 54.", "User's ring size is EU 56."),
    ("User eats fish.", "User doesn't eat fish."),
    ("Tobias Hahn lives in Graz.", "Tobias Hahn's sister lives in Graz with her husband."),
    ("User goes to work by bus.", "Should I go to work by bus?"),
    ("User lives in Harrogate.", "User lived in Harrogate until 2019."),
    ("Quarry Labs' support contact is Ivo Bell.", "Quarry Labs Europe's support contact is Ivo Bell."),
    ("My locker is number 12.", "My locker at the office is number 21."),
    ("The Rialto cinema opens at 10:00 on Sundays.", "The Rialto cinema opens at 10:00 on Mondays."),
    ("User's shoe size is UK 9.", "User's dress size is UK 9."),
    ("User plays chess.", "Mira plays chess with User on Tuesdays."),
    ("Bellway Gym offers a sauna.", "Bellway Gym also offers a steam room."),
    ("The Ardent team's standup is at 09:30.", "The Ardent team's standup was moved to 10:00."),
    ("User has a cat.", "User might get a second cat next spring."),
    ("Haddon Ltd was founded in 2009.", "Haddon Ltd's Leeds branch was founded in 2009."),
    ("Ada Lund's manager is Ben Ortiz.", "Ada Lund manages Ben Ortiz."),
    ("Ada Lund's locker is number 12.", "locker: #12"),
    ("The gym closes at 10pm on Fridays.", "The gym closes at 10pm on Saturdays."),
    ("User works from home on Mondays.", "User's partner works from home on Mondays."),
    ("User has two cats.", "User had two cats."),
    ("Acme is based in Leeds.", "Acme was based in Leeds."),
    ("User's mortgage rate is 4.2%.", "User's savings rate is 4.2%."),
    ("User's mortgage rate is 4.2%.", "mortgage: 4.5%"),
    ("Oren Vale works at Harrow Bank.", "Oren Vale banks with Harrow Bank."),  # a verb that is a word of a name
    ("User lives in New York City.", "User lives in New Jersey."),
    ("User's mum lives in Galway.", "User's dad lives in Galway."),
    ("Ada Lund manages Ben Ortiz.", "Ada Lund is managed by Ben Ortiz."),
    ("User is vegetarian.", "User's partner is vegetarian and eats fish on holidays."),
    ("The Larch Street gym has a pool.", "The Larch Street gym's sister site in Cowley has a pool and sauna."),
    ("Tomas works at Fenwick.", "Tomas Berg works at Fenwick Capital in Bristol."),
    # another place whose name holds the old one's words: no note leaving a word out, no more detail
    ("Dunmore Children's Library has 9,000 books.", "Dunmore Library has 9,000 books."),
    ("Dunmore Library has 9,000 books.", "Dunmore Children's Library has 9,000 books."),
    ("Velto Labs' escalation contact is Bea Lund.", "Velto's escalation contact is Bea Lund."),
    ("The choir sings at St Jude's on Sundays.", "The choir sings at St Mary's on Sundays."),
    ("User's flight to Oslo is on Friday at 06:00.", "User's flight to Bergen is on Friday at 06:00."),
]


@pytest.mark.parametrize("old,new", SAME)
def test_the_same_content_is_a_duplicate(old, new):
    assert restatement(old, new) == "duplicate"


@pytest.mark.parametrize("old,new", MORE)
def test_more_content_about_the_same_is_a_refinement(old, new):
    assert restatement(old, new) == "refinement"


# Pairs the rule validator once took for repeats: one word swapped, or a count of something else.
NOT_REPEATS = [
    ("User swims on Fridays.", "User used to swim on Fridays."),
    ("User swims on Fridays.", "User wants to swim on Fridays."),
    ("My sister Ana lives in Porto.", "My cousin Ana lives in Porto."),
    ("Vantage Cycles has 85 employees.", "Vantage Cycles has 85 stores."),
    ("User's shoe size is UK 9.", "User's dress size is UK 9."),
]


@pytest.mark.parametrize("old,new", APART)
def test_traps_stay_apart(old, new):
    assert restatement(old, new) is None


def test_a_refinement_is_not_a_duplicate_the_other_way():
    """Less than the old sentence says is no refinement of it."""
    old, new = MORE[1]
    assert restatement(new, old) is None


@pytest.mark.parametrize("old,new,kind", [
    ("I drive a blue Honda Jazz.", "my car's a blue Honda Jazz", "duplicate"),  # the lexicon reads two subjects
    ("My sister Ana lives in Porto.", "Ana (my sister) lives in Porto", "duplicate"),
    ("User's car is a 2019 Toyota Yaris.", "I drive a Toyota Yaris (2019)", "duplicate"),  # one value, other spans
    (SAME[0][0], SAME[0][1], "duplicate"), (SAME[1][0], SAME[1][1], "duplicate"),
    (SAME[3][0], SAME[3][1], "duplicate"), (MORE[1][0], MORE[1][1], "child_update"),
    (MORE[0][0], MORE[0][1], "child_update"),
])
def test_the_rule_validator_places_restatements(rules, embedder, old, new, kind):
    decision, target = decide(rules, embedder, old, new, pregated=True)
    assert (decision.kind, target) == (kind, old)


@pytest.mark.parametrize("old,new", APART[:6] + APART[8:9] + APART[11:12] + NOT_REPEATS)
def test_the_rule_validator_keeps_traps_apart(rules, embedder, old, new):
    decision, _ = decide(rules, embedder, old, new, pregated=True)
    assert decision.kind not in ("duplicate", "child_update")
