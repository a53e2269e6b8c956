"""One contract, two APIs: every test here runs against `Fabric` and against `AsyncFabric` (the `api`
fixture), so the async API cannot drift from the sync one (issue 12)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from fabric.errors import NotFound, PolicyRefused, ValidationError
from fabric.types import Memory, Placement, WriteReceipt, utcnow


def T(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=timezone.utc)


def put(api, org, text, key, valid_from=None) -> Placement:
    s, r, v = key
    return api.wait(api.write(text, org=org, subject=s, relation=r, value=v, valid_from=valid_from), 60)


def test_write_wait_and_current_value(api, org):
    receipt = api.write("Meridian Bio's CEO is Jonathan Hale.", org=org, subject="Meridian Bio", relation="ceo",
                        value="Jonathan Hale", valid_from=T(2024))
    assert isinstance(receipt, WriteReceipt) and receipt.org == org and receipt.enqueued
    placed = api.wait(receipt, 60)
    assert isinstance(placed, Placement) and placed.decision == "new_branch"
    cv = api.current_value("Meridian Bio", "CEO", org=org)
    assert isinstance(cv, Memory) and cv.value == "Jonathan Hale" and cv.id == placed.memory_id


def test_contradiction_supersedes_and_time_travel(api, org):
    old = put(api, org, "Meridian Bio's CEO is Jonathan Hale.", ("Meridian Bio", "ceo", "Jonathan Hale"), T(2024))
    before_new = utcnow()
    new = put(api, org, "Meridian Bio's CEO is Priya Nair.", ("Meridian Bio", "ceo", "Priya Nair"), T(2025))
    assert new.decision == "contradiction_fork" and new.target_id == old.memory_id
    assert api.current_value("Meridian Bio", "ceo", org=org).value == "Priya Nair"
    assert api.current_value("Meridian Bio", "ceo", org=org, valid_at=T(2024) + timedelta(days=30)).value \
        == "Jonathan Hale"
    # what we believed before the correction arrived
    assert api.current_value("Meridian Bio", "ceo", org=org, known_at=before_new).value == "Jonathan Hale"
    hits = api.search("Who is the CEO of Meridian Bio?", org=org, k=5)
    assert [m.value for m in hits] == ["Priya Nair"]
    hits = api.search("Who is the CEO of Meridian Bio?", org=org, k=5, include_superseded=True, explain=True)
    assert {m.value for m in hits} == {"Priya Nair", "Jonathan Hale"}
    assert all(m.ranks is not None for m in hits)
    chain = api.history(new.memory_id, org=org)
    assert [m.id for m in chain] == [old.memory_id, new.memory_id]
    states = {m.id: m.state for m in api.walk(old.memory_id, org=org, include_superseded=True)}
    assert states[old.memory_id] == "superseded"
    belief = api.belief_state(org=org, valid_at=T(2024) + timedelta(days=1))
    assert [m.value for m in belief] == ["Jonathan Hale"]
    assert api.get(new.memory_id, org=org).value == "Priya Nair"
    logged = api.decisions(org=org, kind="contradiction_fork")
    assert [d.memory_id for d in logged] == [new.memory_id]


def test_search_context_walks_the_branch(api, org):
    root = put(api, org, "Lena Park joined the robotics club.", ("Lena Park", "club", "robotics"))
    child = put(api, org, "Lena Park joined the robotics club and builds drones.", ("Lena Park", "club", "robotics"))
    assert child.decision == "child_update"
    hits = api.search("robotics club drones", org=org, k=1, context=2)
    assert hits[0].id == child.memory_id and [c.id for c in hits[0].context] == [root.memory_id]


def test_retract_restores_the_previous_value(api, org):
    put(api, org, "Ada lives in Paris.", ("Ada", "city", "Paris"), T(2020))
    wrong = put(api, org, "Ada lives in Rome.", ("Ada", "city", "Rome"), T(2021))
    decision = api.retract(wrong.memory_id, org=org, reason="test: bad source")
    assert isinstance(decision, uuid.UUID)
    assert api.current_value("Ada", "city", org=org).value == "Paris"
    with pytest.raises(NotFound):
        api.get(wrong.memory_id, org=org)


def test_write_many_and_drain(api, org):
    receipts = api.write_many([{"content": f"Note {i}: the kettle is in cupboard {i}.", "org": org}
                               for i in range(5)])
    assert len(receipts) == 5 and len({r.id for r in receipts}) == 5
    assert api.drain(org, timeout=60) == 0
    assert len(api.belief_state(org=org)) == 5


def test_bad_input_names_the_field_and_writes_nothing(api, org):
    with pytest.raises(ValidationError, match="^content: empty"):
        api.write("   ", org=org)
    with pytest.raises(ValidationError, match=r"^items\[1\]\.relation"):
        api.write_many([{"content": "fine", "org": org}, {"content": "x", "org": org, "subject": "s"}])
    with pytest.raises(ValidationError, match="^valid_from: naive datetime"):
        api.write("x", org=org, valid_from=datetime(2024, 1, 1))
    with pytest.raises(ValidationError, match="^k: "):
        api.search("anything", org=org, k=0)
    with pytest.raises(ValidationError, match="^mode: "):
        api.search("anything", org=org, mode="fuzzy")
    with pytest.raises(ValidationError, match="^relation: "):
        api.current_value("Ada", " ", org=org)
    with pytest.raises(ValidationError, match="^root_id: "):
        api.walk("not-a-uuid", org=org)
    with pytest.raises(PolicyRefused, match="^kind: "):
        api.write("Plan tier is gold.", org=org, kind=sorted(api.settings.refused_kinds)[0])
    assert api.drain(org, timeout=30) == 0
    assert api.belief_state(org=org) == []  # nothing of the refused batch was written
    with pytest.raises(NotFound):
        api.wait(uuid.uuid4(), org=org, timeout=1)


def test_tenants_see_only_their_own(api, org):
    other = f"{org}-other"
    mine = put(api, org, "The vault code is 4411.", ("vault", "code", "4411"))
    assert api.current_value("vault", "code", org=other) is None
    assert api.search("vault code", org=other, k=5) == []
    with pytest.raises(NotFound):
        api.get(mine.memory_id, org=other)
