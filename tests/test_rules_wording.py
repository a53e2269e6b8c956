"""Round 4 of the rule validator (fabric/placement/align.py, facts.py): synonyms of one attribute, verbs
that only say an event is scheduled, a price said with or without its noun, a title changed by a
promotion, a sentence in capitals, "chief executive officer". Sentences written here, not taken from
the labelled sets (tests/data/placement_pairs_v*.jsonl). Pure: no database; the embedding model where
the alignment consults it."""

from __future__ import annotations

import pytest

from fabric.placement.align import canonical, compare_aligned, relation_similarity
from fabric.placement.facts import compare, extract
from tests.fix_placement import decide


def aligned(old: str, new: str) -> str:
    return compare_aligned(old, new, relation_similarity).verdict


@pytest.mark.parametrize("old, new, verdict", [
    # "due" / "deadline", "population" / "residents": one attribute
    ("The Pelican audit is due on March 3.", "The Pelican audit deadline moved to April 9.", "contradiction_fork"),
    ("The population of Brackwell is 8,200.", "Brackwell now has 8,900 residents.", "contradiction_fork"),
    ("Brackwell has 8,200 inhabitants.", "The population of Brackwell is 8,200.", "duplicate"),
    # "happens on" / "we hold it on" / "takes place on": the same schedule
    ("The Orion retro happens on the last Friday of the month.",
     "On the last Friday of the month we hold the Orion retro.", "duplicate"),
    ("The Orion retro takes place on Fridays.", "The Orion retro is now on Wednesdays.", "contradiction_fork"),
])
def test_one_attribute_in_other_words(old, new, verdict):
    assert aligned(old, new) == verdict


@pytest.mark.parametrize("old, new", [
    ("The Pelican audit is due on March 3.", "The Pelican audit kickoff is on April 9."),  # another event
    ("The population of Brackwell is 8,200.", "Brackwell has 8,200 parking spaces."),      # another count
    ("Project Kite is on hold.", "Project Kite is held in Lisbon."),                       # "on hold" is a state
])
def test_synonyms_do_not_join_other_attributes(old, new):
    assert aligned(old, new) not in ("contradiction_fork", "duplicate")


def test_a_price_with_or_without_its_noun_is_one_price():
    assert aligned("The delivery charge for parcels under 2 kg is 3.50 euros.",
                   "Parcels under 2 kg now ship for €4.20.") == "contradiction_fork"
    assert aligned("A day pass at Loft Climbing costs $18.", "The day pass fee at Loft Climbing is $22.") \
        == "contradiction_fork"
    # a price beside a length of time: another unit, never one attribute
    assert aligned("The delivery charge for parcels under 2 kg is 3.50 euros.",
                   "Parcels under 2 kg now ship in 4 days.") != "contradiction_fork"


def test_a_promotion_changes_the_job_title():
    old, new = "Ilse Brandt's job title is Junior Designer.", "Ilse Brandt was promoted to Senior Designer."
    a, b = extract(old, new), extract(new, old)
    assert (a.relation, b.relation) == ("job_title", "job_title") and b.value == "Senior Designer"
    assert compare(a, b) == "contradiction_fork"
    # another person's promotion is not hers
    assert compare(a, extract("Jonas Weber was promoted to Senior Designer.", old)) == "separate"


def test_a_sentence_in_capitals_is_read_in_lower_case():
    assert canonical("HALDEN PORT IS LOCATED IN BERGEN.") == "halden port is located in bergen."
    assert canonical("The HQ of NATO is in Brussels.") == "The HQ of NATO is in Brussels."  # acronyms stay


def test_chief_executive_officer_is_the_ceo(rules, embedder):
    a = extract("Orla Finch serves as chief executive officer of Tidewell Foods.")
    assert (a.subject, a.relation, a.value) == ("Tidewell Foods", "ceo", "Orla Finch")
    old = "Tidewell Foods' CEO is Orla Finch."
    d, target = decide(rules, embedder, old, "Orla Finch serves as chief executive officer of Tidewell Foods.",
                       pregated=True)
    assert d.kind == "duplicate" and target == old


@pytest.mark.parametrize("old, new", [
    ("The Ember service uses Redis.", "The Ember service switched from Redis to Valkey."),
    ("Odile Fray drives a Peugeot 208.", "Odile Fray traded her Peugeot 208 for a Kia Niro."),
    ("The Marlow Trust board is chaired by Ivo Sand.",
     "Ivo Sand stepped down; Bea Lund now chairs the Marlow Trust board."),
])
def test_the_old_value_named_as_replaced_is_a_correction(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old


@pytest.mark.parametrize("old, new", [
    ("The Ember service uses Redis.", "The Quartz service switched from Redis to Valkey."),  # another subject
    ("The Marlow Trust board is chaired by Ivo Sand.", "Ivo Sand stepped down as treasurer of the Kell Fund."),
    # ("Teo Vance left Brindle Bank." ends the job since round 10: test_rules_notes.py)
])
def test_a_replaced_value_elsewhere_is_no_correction(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork"


def test_left_and_joined_is_a_new_employer():
    old, new = "Teo Vance works at Brindle Bank.", "Teo Vance left Brindle Bank and joined Quarry Capital."
    a, b = extract(old, new), extract(new, old)
    assert (b.subject, b.relation, b.value, b.loose) == ("Teo Vance", "employer", "Quarry Capital", False)
    assert compare(a, b) == "contradiction_fork"


def test_a_spouse_named_by_the_relative_word_is_the_spouse_not_a_relative(rules, embedder):
    old = "Wren Ash is married to Hal Ash."
    d, target = decide(rules, embedder, old, "Wren Ash's husband is Remy Cole.", pregated=True)
    assert d.kind == "contradiction_fork" and target == old
    for other in ("Wren Ash's husband works at Remy Cole Ltd.", "Wren Ash's brother is married to Remy Cole."):
        d, _ = decide(rules, embedder, old, other, pregated=True)
        assert d.kind != "contradiction_fork", other
    d, _ = decide(rules, embedder, "Wren Ash works at Tallow Bank.", "Wren Ash's wife works at Fern Capital.",
                  pregated=True)
    assert d.kind != "contradiction_fork"


def test_turning_an_age_and_yearly_figures():
    a, b = extract("Cass Ode is 41 years old."), extract("Cass Ode turned 42.")
    assert (b.relation, b.value) == ("age", "42") and compare(a, b) == "contradiction_fork"
    turned_down = extract("Cass Ode turned the offer down.")
    assert turned_down is None or turned_down.relation != "age"
    assert canonical("Fennel Ltd's yearly revenue is $3M.") == "Fennel Ltd's annual revenue is $3M."
    assert aligned("Fennel Ltd's annual revenue is $3 million.", "Fennel Ltd's yearly revenue is now $3.4M.") \
        == "contradiction_fork"
    assert aligned("Fennel Ltd's annual revenue is $3 million.", "Fennel Ltd's monthly revenue is $260,000.") \
        != "contradiction_fork"


def test_over_and_under_are_other_qualifiers():
    assert aligned("The delivery fee for orders under 30 euros is 3.99 euros.",
                   "The delivery fee for orders over 30 euros is 0 euros.") != "contradiction_fork"
    assert aligned("The delivery fee for orders under 30 euros is 3.99 euros.",
                   "The delivery fee for orders under 30 euros is now 4.49 euros.") == "contradiction_fork"


@pytest.mark.parametrize("old, new", [
    ("Vera Quist works at Lindgren Bank.", "Vera Quist used to work at Osprey Capital."),
    ("Vera Quist's car is a Saab.", "Vera Quist's first car was a Lada."),
    ("The CFO of Osprey Capital is Vera Quist.", "The CFO of Osprey Capital in 2012 was Ivan Dale."),
    ("Vera Quist volunteers at the Harbour Kitchen.", "Vera Quist volunteers at the City Zoo."),
    ("Osprey Capital partners with Fjord Bank.", "Osprey Capital partners with Nordea."),
    ("Vera Quist's yoga class is at 18:00 on Mondays.", "Vera Quist's yoga class is at 19:30 on Thursdays."),
])
def test_the_past_values_of_many_and_other_qualifiers_correct_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork"


def test_a_predecessor_named_beside_the_new_value_does_not_hide_the_correction():
    old = extract("The CFO of Osprey Capital is Vera Quist, who joined with Tom Lake.")
    new = extract("Ivan Dale replaced Vera Quist as CFO of Osprey Capital.")
    assert compare(old, new) == "contradiction_fork"


@pytest.mark.parametrize("old, new", [
    ("The weekly sync with Dana is on Mondays.", "The sync with Dana now happens every Wednesday."),
    ("The Kelp launch is planned for May 10.", "The Kelp launch date slipped to June 2."),
    ("Birch Ltd pays $300 per month for Notion.", "Birch Ltd's Notion bill is now $420 a month."),
    ("Birch Ltd has 40 staff.", "Birch Ltd grew to 55 employees."),
    ("Sol Reyes's birthday is on 3 March.", "Actually Sol Reyes's birthday is March 13."),
    ("The Birch Ltd team uses Jira for tickets.", "The Birch Ltd team switched from Jira to Linear for tickets."),
    ("the support team uses Jira for tickets", "the support team switched from Jira to Linear for tickets"),
    ("Birch Ltd's CEO is Anna Berg.", "birch ltd's ceo is omar nasser"),
    ("Greta Holm lives in Aarhus.", "greta holm lives in odense now"),
    ("The office wifi password is Owl-2231.", "New office wifi password: Finch-9902."),
])
def test_restated_in_other_words_or_in_lower_case_is_a_correction(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old


@pytest.mark.parametrize("old, new", [
    ("The weekly sync with Dana is on Mondays.", "The monthly sync with Dana is on Wednesdays."),
    ("Birch Ltd pays $300 per month for Notion.", "Birch Ltd pays $90 per month for Zoom."),
    ("the support team uses Jira for tickets", "the sales team switched from Jira to Linear for tickets"),
    ("greta holm lives in aarhus", "greta holm's sister lives in odense"),
    ("greta holm lives in aarhus", "greta holm works in odense"),
    ("A good dentist in town is Dr. Ali.", "A good dentist in town is Dr. Holt."),
    ("Tom Lake owns the payments roadmap.", "Ana Ruiz owns the payments roadmap."),
])
def test_lower_case_and_reworded_traps_stay_apart(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork"


def test_other_qualifiers_of_the_priced_thing_are_another_fact(rules, embedder):
    for old, new in [("A single class at Lotus Yoga costs 14 euros.",
                      "A ten-class card at Lotus Yoga costs 110 euros."),
                     ("Mia Holt's job title is Product Lead.", "Mia Holt's manager's title is VP Product.")]:
        d, _ = decide(rules, embedder, old, new, pregated=True)
        assert d.kind != "contradiction_fork", new
    # words describing the value itself are part of the value, not a qualifier
    d, target = decide(rules, embedder, "Odile Fray drives a blue Saab.", "Odile Fray's car is now a grey Kia.",
                       pregated=True)
    assert d.kind == "contradiction_fork"


def test_a_double_possessive_names_the_other_person():
    fact = extract("Mia Holt's manager's title is VP Product.")
    assert fact.subject == "Mia Holt's manager"


@pytest.mark.parametrize("old, new", [
    ("Project Wren is written in Go.", "Wren is implemented in Golang."),
    ("The Wren API is coded in TypeScript.", "The Wren API is written in TS."),
])
def test_aliases_and_synonyms_of_a_stack_are_one_fact(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "duplicate" and target == old


@pytest.mark.parametrize("old, new, kind", [
    ("Noor Haddad is on the Billing team.", "Noor Haddad moved to the Fraud team.", "contradiction_fork"),
    ("Noor Haddad works on the Billing team.", "Noor Haddad is now part of the Fraud team.", "contradiction_fork"),
    ("noor haddad works on the billing team.", "Noor Haddad is a member of the Billing team.", "duplicate"),
])
def test_the_team_someone_is_on_is_one_fact(rules, embedder, old, new, kind):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == kind and target == old


@pytest.mark.parametrize("old, new", [
    ("Noor Haddad works at Klarna.", "Noor Haddad joined the Fraud team."),       # a team is no employer
    ("Noor Haddad lives in Malmo.", "Noor Haddad moved to the Fraud team."),       # ... and no home
    ("Noor Haddad is on the Billing team.", "Noor Haddad also joined the Fraud team."),
    ("Noor Haddad is on the Billing team.", "Noor Haddad leads the Fraud team."),
    ("Noor Haddad is on the Billing team.", "Noor Haddad's husband is on the Fraud team."),
])
def test_team_traps_stay_apart(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork"


@pytest.mark.parametrize("old, new", [
    ("Ida Moss is the owner of the Larch Street bakery.", "The Larch Street bakery's head baker is Cal Dunn."),
    ("Project Kelp is owned by Ida Moss.", "Project Kelp's QA is owned by Cal Dunn."),
    ("The Kelp dashboard depends on Vue 3.", "The Kelp dashboard depends on Pinia 2."),
])
def test_another_role_another_possessed_thing_another_dependency(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork"


@pytest.mark.parametrize("old, new", [
    ("The Kelp dashboard depends on Vue 2.", "The Kelp dashboard was upgraded to Vue 3."),  # a version: one value
    ("Ida Moss heads the Kelp design team.", "The Kelp design team is now led by Cal Dunn."),  # one role, reworded
    ("The Kelp repo uses Webpack.", "The Kelp repo switched from Webpack to Vite."),
])
def test_the_same_role_or_a_switched_value_is_still_a_correction(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old


@pytest.mark.parametrize("old, new", [
    ("Tickets to the Kelp museum cost 12 euros.", "Parking at the Kelp museum costs 4 euros."),
    ("The 22 bus runs every 10 minutes.", "The 22 bus takes 35 minutes to reach the harbour."),
    ("The Kelp museum is on Elm Road.", "The Kelp museum's archive is on Birch Lane."),
])
def test_another_thing_priced_a_frequency_or_a_part_of_the_subject_stays_apart(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork"


def test_a_frequency_restated_is_still_a_correction(rules, embedder):
    old = "The shuttle from the Kelp hotel leaves every fifteen minutes."
    d, target = decide(rules, embedder, old, "The Kelp hotel's shuttle now leaves every 25 minutes.", pregated=True)
    assert d.kind == "contradiction_fork" and target == old


@pytest.mark.parametrize("old, new", [
    ("The Quay pharmacy is open until 7 pm on weekdays.", "At weekends the Quay pharmacy shuts at 4 pm."),
    ("The Kelp API v2 ships on June 30.", "The Kelp API v3 ships on December 1."),
    ("A day pass at Crag Climbing costs 18 euros.", "A day pass at Crag Climbing costs 160 kroner."),
    ("Pia Lund's favourite bakery is Crumb.",
     "Pia Lund's favourite bakery in Lisbon's old town, Alfama, is Manteigaria."),
])
def test_another_period_version_currency_or_place_stays_apart(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork"


def test_a_period_said_on_one_side_only_may_still_be_a_correction(rules, embedder):
    old = "The Quay pharmacy opens at 8 am."
    d, target = decide(rules, embedder, old, "On weekdays the Quay pharmacy now opens at 7:30.", pregated=True)
    assert d.kind == "contradiction_fork" and target == old


@pytest.mark.parametrize("old, new", [
    ("Kiln Studio opens at noon.", "Opening time at Kiln Studio is 11:15."),
    ("Kiln Studio opens at 10 am.", "Kiln Studio opens its doors at 9:30."),
    ("Closing time at the Tarn Gym is 10 pm.", "The Tarn Gym shuts at 11 pm."),
])
def test_a_time_said_as_a_verb_or_as_a_time_noun_is_one_fact(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old


@pytest.mark.parametrize("old, new", [
    ("Kiln Studio opens at 10 am.", "Closing time at Kiln Studio is 6 pm."),
    ("Opening time at Kiln Studio is 10 am.", "Kiln Studio's lunch service starts at noon."),
    ("The Tarn Gym shuts at 11 pm.", "Check-in time at the Tarn Hotel is 3 pm."),
])
def test_other_times_of_one_place_stay_apart(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork"


def test_the_same_figure_of_another_measure_is_no_paraphrase(rules, embedder):
    old = "Project Teal's budget is €400,000."
    d, _ = decide(rules, embedder, old, "Project Teal has spent €400,000 so far.", pregated=True)
    assert d.kind == "new_branch"
    d, target = decide(rules, embedder, old, "The budget of Project Teal is 400,000 euros.", pregated=True)
    assert d.kind == "duplicate" and target == old


# Generated traps: other attributes of one place or person, each in three phrasings, values of one sort (times,
# prices, people), so that only the relation tells them apart; and name twins stating one attribute.
_TIMES = {"opens": ["{s} opens at {v}.", "Opening time at {s} is {v}."],
          "closes": ["{s} closes at {v}.", "{s} shuts at {v}."],
          "lunch": ["Lunch at {s} is served from {v}.", "{s}'s lunch service starts at {v}."],
          "checkin": ["Check-in at {s} starts at {v}.", "{s}'s check-in time is {v}."]}
_PEOPLE = {"manager": ["{s}'s manager is {v}.", "{s} reports to {v}."],
           "mentor": ["{s}'s mentor is {v}.", "{v} mentors {s}."],
           "dentist": ["{s}'s dentist is {v}.", "{v} is the dentist of {s}."],
           "landlord": ["{s}'s landlord is {v}.", "{s} rents from {v}."]}


def _generated_traps() -> list[tuple[str, str]]:
    out = []
    for groups, subject, twin, (v1, v2) in ((_TIMES, "the Quarry Gym", "the Quarry Pool", ("7 am", "9 pm")),
                                            (_PEOPLE, "Lina Ford", "Lina Forde", ("Ana Ruiz", "Ben Okoro"))):
        for (_a1, f1), (_a2, f2) in [(x, y) for x in groups.items() for y in groups.items() if x[0] != y[0]]:
            out.append((f1[0].format(s=subject, v=v1), f2[1].format(s=subject, v=v2)))  # another attribute
        for f in groups.values():
            out.append((f[0].format(s=subject, v=v1), f[1].format(s=twin, v=v2)))  # a twin, reworded
    return [(o[0].upper() + o[1:], n[0].upper() + n[1:]) for o, n in out]


def test_generated_traps_invalidate_nothing(rules, embedder):
    wrong = []
    for old, new in _generated_traps():
        d, _ = decide(rules, embedder, old, new, pregated=True)
        if d.kind == "contradiction_fork":
            wrong.append((old, new))
    assert len(_generated_traps()) == 32 and wrong == []


# Round 5: a subscription, membership, account or licence held "to / with / at X" is one of many held at
# once; a price whose noun is qualified on both sides by another word names another item ("the family
# membership" / "the student membership"), but "annual" / "a year" is one period.
@pytest.mark.parametrize("old, new", [
    ("Priya Nair has a subscription to The Guardian.", "Priya Nair has a subscription to Netflix."),
    ("Leon Brandt holds a membership at Alpine Club.", "Leon Brandt holds a membership at Kelvin Tennis Club."),
    ("Sana Iqbal has an account with Monzo.", "Sana Iqbal has an account with Revolut."),
    ("Tomas Berg owns a licence for AutoCAD.", "Tomas Berg owns a license for SketchUp."),
    ("Greta Holm took out a subscription to Spotify.", "Greta Holm has a subscription to Duolingo."),
    ("Nadia Haddad has a Netflix subscription.", "Nadia Haddad has a Disney+ subscription."),
    ("Jon Sato has a gym membership at FitHub.", "Jon Sato has a gym membership at PureGym."),
])
def test_subscriptions_and_memberships_hold_many_values(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "new_branch", d.reason


def test_a_subscription_to_a_plan_is_still_the_billing_plan(rules, embedder):
    d, target = decide(rules, embedder, "Mira Holt has a subscription to the Pro plan.",
                       "Mira Holt has a subscription to the Team plan.", pregated=True)
    assert d.kind == "contradiction_fork" and target == "Mira Holt has a subscription to the Pro plan."


@pytest.mark.parametrize("old, new", [
    ("Kestrel Gym's annual membership is 400 pounds.", "Kestrel Gym's family membership costs 650 pounds a year."),
    ("Kestrel Gym's annual membership is 400 pounds.", "Kestrel Gym's family membership is 650 pounds a year."),
    ("Linden Climbing's weekly pass is 25 euros.", "Linden Climbing's youth pass is 15 euros a week."),
    ("The Meridian Club's yearly fee is 300 dollars.", "The Meridian Club's corporate fee is 900 dollars a year."),
    ("The Fenwick Hotel's nightly rate is 140 pounds.", "The Fenwick Hotel's weekend rate is 180 pounds a night."),
    ("Corvid Labs' annual licence is 5,000 dollars.", "Corvid Labs' enterprise licence is 20,000 dollars a year."),
    ("Harbour Yoga's monthly pass costs 60 euros.", "Harbour Yoga's student pass costs 35 euros a month."),
    ("The Larch Theatre's evening ticket is 30 dollars.", "The Larch Theatre's matinee ticket is 18 dollars."),
    ("Oakfield Pool's adult swim is 6 pounds.", "Oakfield Pool's junior swim is 3 pounds."),
])
def test_a_price_of_another_qualified_item_corrects_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind != "contradiction_fork", d.reason


@pytest.mark.parametrize("old, new", [
    ("Kestrel Gym's annual membership is 400 pounds.", "Kestrel Gym's yearly membership is now 420 pounds."),
    ("Kestrel Gym's annual membership is 400 pounds.", "Kestrel Gym's membership is now 420 pounds a year."),
    ("Harbour Yoga's monthly pass costs 60 euros.", "Harbour Yoga's monthly pass now costs 65 euros."),
    ("The Larch Theatre's evening ticket is 30 dollars.", "The Larch Theatre's evening ticket went up to 34 dollars."),
    ("Oakfield Pool's adult swim is 6 pounds.", "Oakfield Pool's current adult swim price is 7 pounds."),
    ("The Fenwick Hotel's nightly rate is 140 pounds.", "The Fenwick Hotel's rate is now 150 pounds a night."),
    ("Corvid Labs' annual licence is 5,000 dollars.", "Corvid Labs' licence fee is now 5,500 dollars a year."),
    ("Brindle Bikes' monthly rental is 45 euros.", "Brindle Bikes now charges 50 euros a month for rental."),
    ("The Meridian Club's membership fee is 300 dollars a year.",
     "The Meridian Club's annual membership fee went up to 320 dollars."),
])
def test_the_same_item_repriced_is_a_correction(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason
