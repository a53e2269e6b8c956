"""Round 7 of the rule validator: states told in lower-case words ("vegetarian" / "vegan", "on hold" /
"back in active development"). Sentences written here, not taken from the labelled sets
(tests/data/placement_pairs_v*.jsonl). Pure: no database; the real embedding model."""

from __future__ import annotations

import pytest

from fabric.placement.states import state
from tests.fix_placement import decide


@pytest.mark.parametrize("text, attribute, value, subject", [
    ("Nikhil Rao went fully vegan in May.", "diet", "vegan", "nikhil rao"),
    ("I'm vegetarian.", "diet", "vegetarian", "user"),
    ("Marta Silva's diet is now pescatarian.", "diet", "pescatarian", "marta silva"),
    ("Project Wren has been put on hold.", "status", "on hold", "wren"),  # "Project": no part of the name
    ("Project Kite is back in active development.", "status", "active", "kite"),
    ("The Atlas project was cancelled.", "status", "cancelled", "atlas project"),
])
def test_a_state_and_its_holder_are_read(text, attribute, value, subject):
    st = state(text)
    assert st is not None and (st.attribute, st.value, st.subject, st.read) == (attribute, value, subject, True)


@pytest.mark.parametrize("text", [
    "Omar Haddad runs a vegan bakery.",           # a noun follows: the bakery's state
    "Omar Haddad used to be vegan.",              # held once
    "Is Omar Haddad vegan?",                      # asked
    "Project Lynx is active on GitHub.",          # another sense of the word
])
def test_states_not_held_now_are_not_read(text):
    st = state(text)
    assert st is not None and not st.read


def test_two_states_of_one_attribute_are_not_read():
    assert state("Project Lynx was paused last year but is active now.") is None


@pytest.mark.parametrize("old, new", [
    ("Dana Okafor is vegan.", "Dana Okafor is vegetarian again."),
    ("Lena Fischer is a vegetarian.", "Lena Fischer has gone vegan."),
    ("the user is vegetarian", "the user went vegan last month"),
    ("I'm vegetarian.", "I'm vegan now."),
    ("Project Heron is paused.", "Project Heron has resumed."),
    ("Project Wren is in active development.", "Project Wren has been put on hold."),
    ("Orion is on hold until further notice.", "Orion is back in development."),
    ("the migration is on hold", "the migration has resumed"),
    ("the user prefers tea", "the user prefers coffee now"),
    ("I prefer coffee.", "I prefer tea these days."),
    ("i live in york", "i moved to leeds"),                            # a chat typed in lower case
    ("I live in York.", "i moved to leeds"),
    ("the user lives in york", "the user moved to leeds last week"),
    ("i'm based in bristol", "i relocated to cardiff"),
])
def test_another_state_of_the_same_holder_forks(rules, embedder, old, new):
    d, target = decide(rules, embedder, old, new, pregated=True)
    assert d.kind == "contradiction_fork" and target == old, d.reason


@pytest.mark.parametrize("old, new", [
    ("Nikhil Rao is vegetarian.", "Nikhil Rao's sister is vegan."),
    ("Nikhil Rao is vegetarian.", "Priya Shah went vegan in May."),
    ("Nikhil Rao is vegetarian.", "Nikhil Rao is not vegan."),
    ("Nikhil Rao is vegetarian.", "Nikhil Rao also cooks vegan meals."),
    ("Omar Haddad is vegetarian.", "Omar Haddad was vegan in college."),
    ("Omar Haddad is vegetarian.", "Omar Haddad and Lea Kim are vegan."),
    ("Omar Haddad is vegetarian.", "Is Omar Haddad vegan?"),
    ("Project Kite is on hold.", "Project Heron is back in active development."),
    ("Project Kite is on hold.", "Project Kite's budget was cancelled."),
    ("Project Lynx is in progress.", "The Lynx prototype was scrapped."),
    ("the migration is on hold", "the hiring is active"),
    ("the user likes tea", "the user also likes coffee"),
    ("the user likes tea", "the user likes coffee"),                   # two likes; only "prefers" picks one
    ("the user prefers tea", "the user also likes coffee"),
    ("the user prefers tea in the morning", "the user prefers coffee in the afternoon"),
    ("the user prefers tea", "the user's husband prefers coffee"),
    ("Ana Ruiz prefers tea.", "Ana Ruiz prefers coffee shops with wifi."),
    ("Ana Ruiz prefers tea.", "Ana Ruiz drinks coffee at work."),
    ("Ana Ruiz prefers tea.", "Does Ana Ruiz prefer coffee?"),
    ("i live in york", "my sister moved to leeds"),
    ("i live in york", "i moved to the suburbs"),
    ("i live in york", "i lived in leeds as a student"),
    ("i live in york", "i'm not moving to leeds"),
    ("i live in york", "i moved to sales"),                              # a department, not a town
    ("i live in york", "i moved to nights last month"),
    ("the user lives in york", "the user's parents moved to leeds"),
])
def test_other_holders_and_other_senses_correct_nothing(rules, embedder, old, new):
    d, _ = decide(rules, embedder, old, new, pregated=True)
    assert d.kind not in ("contradiction_fork", "duplicate"), d.reason


def test_the_state_said_to_hold_now_of_two():
    s = state("The Larkspur app shipped and is now in maintenance mode.")
    assert s is not None and (s.attribute, s.value, s.subject, s.read) == ("status", "maintenance", "larkspur app",
                                                                           True)
    assert state("Project Fen was paused in May, then restarted.") is None  # two states, none said to hold now
    assert state("Imogen prefers green tea over coffee.") is not None
    assert state("Imogen has switched to coffee and would rather not have tea.").value == "coffee"
    assert state("Imogen prefers tea in the morning and coffee after lunch.") is None  # each at its time
