"""Keys from text, history of restated facts, and the read-time conflict net, end to end: the real
RQ worker places the writes (issues 10 and 15)."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from fabric import Fabric
from fabric.placement.validator import Decision
from fabric.read.search import flag_conflicts
from fabric.write.placer import Placer


def T(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, tzinfo=timezone.utc)


def put(fab, org, text, *, key=None, **kw):
    s, r, v = key if key else (None, None, None)
    return fab.wait(fab.write(text, org=org, subject=s, relation=r, value=v, **kw), 60)


def test_text_only_versions_in_other_words_get_one_key_and_a_history(fab, org, pg):
    first = put(fab, org, "Nadia Holmqvist is the chief executive of Halcyon Robotics.", valid_from=T(2019))
    put(fab, org, "Halcyon Labs is led by chief executive Tomas Berg.", valid_from=T(2019))  # a sister company
    put(fab, org, "Nadia Holmqvist lives in Lisbon.", valid_from=T(2019))                  # another attribute
    second = put(fab, org, "Halcyon Robotics is led by chief executive Soren Yarrow.", valid_from=T(2022))
    third = put(fab, org, "Mira Olsen now heads Halcyon Robotics.", valid_from=T(2024))
    assert first.decision == "new_branch"
    assert (second.decision, second.target_id) == ("contradiction_fork", first.memory_id), second.reason
    assert (third.decision, third.target_id) == ("contradiction_fork", second.memory_id), third.reason

    # current_value and history answer for memories written without keys.
    assert fab.current_value("Halcyon Robotics", "ceo", org=org).value == "Mira Olsen"
    assert fab.current_value("Halcyon Robotics", "ceo", org=org, valid_at=T(2020)).value == "Nadia Holmqvist"
    assert fab.current_value("Halcyon Robotics", "ceo", org=org, valid_at=T(2023)).value == "Soren Yarrow"
    assert fab.current_value("Halcyon Labs", "ceo", org=org).value == "Tomas Berg"
    assert fab.current_value("Nadia Holmqvist", "home_city", org=org).value == "Lisbon"
    assert [m.value for m in fab.history(third.memory_id, org=org)] == [
        "Nadia Holmqvist", "Soren Yarrow", "Mira Olsen"]
    # The analysts' SQL surface sees the same keys.
    row = pg.execute("SELECT value FROM fabric_api.current_value(%s, 'Halcyon Robotics', 'ceo')", (org,)).fetchone()
    assert row[0] == "Mira Olsen"
    hits = fab.search("Who is the chief executive of Halcyon Robotics?", org=org, k=3)
    assert hits[0].id == third.memory_id
    assert not {first.memory_id, second.memory_id} & {h.id for h in hits}


def test_a_relation_outside_the_lexicon_gets_one_key_and_a_history(fab, org):
    """Versions of an attribute no word list names, each worded its own way: the first sentence names the
    attribute ("parrot_called"), the later versions reuse that name (align.py)."""
    first = put(fab, org, "Leon Ashby's parrot is called Kiwi.", valid_from=T(2019))
    other = put(fab, org, "Leon Ashby's tortoise is called Shelby.", valid_from=T(2019))  # another attribute
    second = put(fab, org, "The name of Leon Ashby's parrot is Mango.", valid_from=T(2022))
    third = put(fab, org, "Leon Ashby's parrot answers to Pip now.", valid_from=T(2024))
    assert other.decision == "new_branch", other.reason
    assert (second.decision, second.target_id) == ("contradiction_fork", first.memory_id), second.reason
    assert (third.decision, third.target_id) == ("contradiction_fork", second.memory_id), third.reason
    assert fab.current_value("Leon Ashby", "parrot_called", org=org).value == "Pip"
    assert fab.current_value("Leon Ashby", "parrot_called", org=org, valid_at=T(2020)).value == "Kiwi"
    assert fab.current_value("Leon Ashby", "parrot_called", org=org, valid_at=T(2023)).value == "Mango"
    assert [m.value for m in fab.history(third.memory_id, org=org)] == ["Kiwi", "Mango", "Pip"]
    assert fab.current_value("Leon Ashby", "tortoise_called", org=org).value == "Shelby"


@pytest.mark.parametrize("keyed", [True, False])
def test_the_same_value_at_an_earlier_time_is_history_not_a_duplicate(fab, org, keyed):
    """Issue 15: Contoso from 2024, Fabrikam from 2022, then Contoso from 2020."""
    def employer(value: str, year: int):
        key = ("Ada Moreau", "employer", value) if keyed else None
        return put(fab, org, f"Ada Moreau works at {value}.", key=key, valid_from=T(year))

    late = employer("Contoso", 2024)
    middle = employer("Fabrikam", 2022)
    early = employer("Contoso", 2020)
    assert middle.decision == "contradiction_fork" and middle.out_of_order
    assert early.decision == "contradiction_fork" and early.out_of_order, early.reason
    assert early.memory_id != late.memory_id
    for at, expected in ((T(2021, 6), "Contoso"), (T(2023), "Fabrikam"), (None, "Contoso")):
        cv = fab.current_value("Ada Moreau", "employer", org=org, valid_at=at)
        assert cv is not None and cv.value == expected, at
    assert fab.current_value("Ada Moreau", "employer", org=org).id == late.memory_id
    # A repeat from after the memory it repeats starts is still a duplicate.
    again = employer("Contoso", 2025)
    assert again.decision == "duplicate" and again.memory_id == late.memory_id


def test_a_key_brought_by_older_history_finds_the_newer_version_written_first(fab, org, pg):
    """Out of order: the newest version comes first and its sentence states no key; the older one, placed
    after it as its history, brings the key. current_value under that key follows the chain to the newest."""
    newest = put(fab, org, "Kornblum Bakery now opens its doors at 07:00.", valid_from=T(2024))
    between = datetime.now(timezone.utc)
    older = put(fab, org, "Kornblum Bakery opens at 6:30 in the morning.", valid_from=T(2020))
    assert newest.decision == "new_branch" and fab.get(newest.memory_id, org=org).subject is None
    assert older.decision == "contradiction_fork" and older.out_of_order, older.reason
    kept = fab.get(older.memory_id, org=org)
    key = (kept.subject, kept.relation)
    assert key == ("Kornblum Bakery", "opens")
    now = fab.current_value(*key, org=org)
    assert now is not None and now.id == newest.memory_id
    then = fab.current_value(*key, org=org, valid_at=T(2022))
    assert then is not None and then.id == older.memory_id
    assert fab.current_value(*key, org=org, known_at=between) is None  # the key was not yet written then
    row = pg.execute("SELECT id FROM fabric_api.current_value(%s, %s, %s)", (org, *key)).fetchone()
    assert row[0] == newest.memory_id
    # another key's history leads nowhere: an unkeyed memory is found only through its own chain
    assert fab.current_value("Kornblum Bakery", "closes", org=org) is None


class EveryWriteANewBranch:
    """A validator that misses every version (as a weak one might): what the read-time net is for."""

    name = "blind"
    model = None

    def decide(self, write, candidates):
        return Decision("new_branch", None, "places every write on its own", 0.5, self.name)


def test_search_ranks_the_later_of_two_live_values_first_and_flags_the_other(database_url, redis_url, org):
    fab = Fabric.connect(database_url, redis_url, run_worker=False, auto_migrate=False,
                         queue_name=f"fabric-t-{uuid.uuid4().hex[:8]}")
    try:
        old = fab.write("Copperline Foods is on the Growth plan.", org=org, subject="Copperline Foods",
                        relation="billing_plan", value="Growth", valid_from=T(2021))
        new = fab.write("Copperline Foods moved to the Scale plan.", org=org, subject="Copperline Foods",
                        relation="billing_plan", value="Scale", valid_from=T(2024))
        other = fab.write("Copperline Foods is based in Leeds.", org=org, valid_from=T(2020))
        Placer(fab.settings, fab.pool, validator=EveryWriteANewBranch()).place(org, [old.id, new.id, other.id])
        hits = fab.search("Which plan is Copperline Foods on? Growth?", org=org, k=5)
        by_value = {h.value: h for h in hits}
        assert {"Growth", "Scale"} <= set(by_value)
        order = [h.value for h in hits]
        assert order.index("Scale") < order.index("Growth")
        assert by_value["Growth"].conflict_with == by_value["Scale"].id
        assert by_value["Scale"].conflict_with is None
        assert fab.stats(org)[org]["conflicts"] == 1
    finally:
        fab.close()


def test_stats_counts_conflicts_as_the_safety_net_sees_subjects_and_values(database_url, redis_url, org):
    """Placed blind, every pair below stays live. A subject in other case or in the first person is one
    subject, a number in other spacing one value; a name twin is another subject."""
    fab = Fabric.connect(database_url, redis_url, run_worker=False, auto_migrate=False,
                         queue_name=f"fabric-t-{uuid.uuid4().hex[:8]}")
    pairs = [(("Vellum Cartography", "ceo", "Ilse Marr"), ("VELLUM CARTOGRAPHY", "ceo", "Odo Brandt")),   # 1
             (("I", "home city", "Cork"), ("User", "home_city", "Galway")),                               # 1
             (("Tamsin Ure", "phone", "+44 7700 900 123"), ("Tamsin Ure", "phone", "+44 7700 900123")),   # 0
             (("Corin Lindqvist", "employer", "Globex"), ("Corin Lindquist", "employer", "Hooli"))]       # 0
    try:
        ids = [fab.write(f"{s} {r}: {v}", org=org, subject=s, relation=r, value=v, valid_from=T(2020 + n))
               .id for pair in pairs for n, (s, r, v) in enumerate(pair)]
        Placer(fab.settings, fab.pool, validator=EveryWriteANewBranch()).place(org, ids)
        assert fab.stats(org)[org]["conflicts"] == 2
    finally:
        fab.close()


def row(value, year, *, subject="Ada", relation="city", state="live"):
    return {"id": uuid.uuid4(), "subject": subject, "relation": relation, "value": value, "state": state,
            "valid_from": T(year), "recorded_at": T(year)}


def test_flag_conflicts_moves_only_the_conflicting_fact():
    stale, unrelated, detail, answer = (row("Lisbon", 2020), row("x", 2020, relation="pet"),
                                        row("lisbon", 2021), row("Tallinn", 2023))
    out = flag_conflicts([stale, unrelated, detail, answer])
    assert [r["value"] for r in out] == ["Tallinn", "x", "Lisbon", "lisbon"]
    assert stale["conflict_with"] == detail["conflict_with"] == answer["id"]
    assert answer["conflict_with"] is None and unrelated["conflict_with"] is None
    # A superseded row (include_superseded) is history, not a conflict; one value is no conflict.
    rows = [row("Lisbon", 2020, state="superseded"), row("Tallinn", 2023)]
    assert [r["conflict_with"] for r in flag_conflicts(rows)] == [None, None]


def test_a_version_beyond_the_nearest_neighbours_is_found_by_its_text_key(database_url, redis_url, org):
    """With one neighbour only, the nearest memory is a same-template fact about a name twin; the old
    version is found through the key the new sentence states."""
    fab = Fabric.connect(database_url, redis_url, run_worker=False, auto_migrate=False,
                         queue_name=f"fabric-t-{uuid.uuid4().hex[:8]}")
    try:
        placer = Placer(fab.settings.model_copy(update={"neighbours_k": 1}), fab.pool)
        first = fab.write("Amara Draycott lives in Lisbon.", org=org, valid_from=T(2019))
        others = [fab.write(f"Home for {name} is {city}.", org=org, valid_from=T(2019))
                  for name, city in (("Amara Holt", "Tallinn"), ("Amara Quist", "Tallinn"), ("Tomasz Wren", "Tallinn"))]
        new = fab.write("Home for Amara Draycott is Tallinn.", org=org, valid_from=T(2023))
        placer.place(org, [first.id, *(o.id for o in others), new.id])
        placed = fab.wait(new, 10)
        assert placed.decision == "contradiction_fork", placed.reason
        assert placed.target_id == fab.wait(first, 10).memory_id
        assert fab.current_value("Amara Draycott", "home_city", org=org).value == "Tallinn"
        assert fab.current_value("Tomasz Wren", "home_city", org=org).value == "Tallinn"
    finally:
        fab.close()


def test_a_sentence_only_the_classifier_reads_is_keyed_and_current(fab, org):
    """No word list reads these phone numbers; the attribute classifier names the key of the first version
    (attributes.key), so current_value answers for it and for its correction."""
    first = put(fab, org, "Call Marit Olsson on 555-0143.", valid_from=T(2021))
    later = put(fab, org, "Marit Olsson picks up at 555-0188 these days.", valid_from=T(2024))
    assert first.decision == "new_branch", first.reason
    assert fab.current_value("Marit Olsson", "phone", org=org, valid_at=T(2022)).value == "555-0143"
    assert fab.current_value("Marit Olsson", "phone", org=org).value == "555-0188", later.reason
