"""Contradiction resolution as a pure function over valid-time intervals (no database)."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from fabric.placement.intervals import ChainMember, plan_insert


def T(y: int) -> datetime:
    return datetime(y, 1, 1, tzinfo=timezone.utc)


A, B, C, NEW = (uuid.uuid4() for _ in range(4))


def test_a_newer_fact_closes_the_live_one():
    plan = plan_insert(NEW, T(2024), None, "Contoso", [ChainMember(A, T(2020), None, "Northwind")])
    assert plan.new_valid_to is None and plan.new_superseded_by is None and not plan.out_of_order
    assert [(r.memory_id, r.valid_to, r.superseded_by) for r in plan.revisions] == [(A, T(2024), NEW)]
    assert plan.anchor_id == A


def test_an_older_fact_is_history():
    plan = plan_insert(NEW, T(2018), None, "Fabrikam", [ChainMember(A, T(2020), None, "Northwind")])
    assert plan.out_of_order and plan.revisions == ()
    assert plan.new_valid_to == T(2020) and plan.new_superseded_by == A


def test_a_fact_between_two_versions_slots_in():
    chain = [ChainMember(A, T(2018), T(2022), "x"), ChainMember(B, T(2022), None, "y")]
    plan = plan_insert(NEW, T(2020), None, "z", chain)
    assert plan.new_valid_to == T(2022) and plan.new_superseded_by == B
    assert [(r.memory_id, r.valid_to) for r in plan.revisions] == [(A, T(2020))]


def test_intervals_only_shrink():
    # A has already ended in 2019; a 2021 contradiction does not touch it (never extends, never reopens).
    plan = plan_insert(NEW, T(2021), None, "y", [ChainMember(A, T(2015), T(2019), "x")])
    assert plan.revisions == () and plan.new_valid_to is None
    # An explicit valid_to earlier than the successor is kept.
    plan = plan_insert(NEW, T(2016), T(2017), "y", [ChainMember(A, T(2020), None, "x")])
    assert plan.new_valid_to == T(2017)


def test_every_live_member_with_another_value_is_closed_and_same_value_ones_are_not():
    chain = [ChainMember(A, T(2020), None, "Acme"), ChainMember(B, T(2021), None, "Acme"),
             ChainMember(C, T(2021), None, "Globex")]
    plan = plan_insert(NEW, T(2023), None, "Globex", chain)
    assert {r.memory_id for r in plan.revisions} == {A, B}


def test_empty_intervals_are_ignored():
    chain = [ChainMember(A, T(2020), T(2020), "x"), ChainMember(B, T(2019), None, "y")]
    plan = plan_insert(NEW, T(2021), None, "z", chain)
    assert [r.memory_id for r in plan.revisions] == [B] and plan.new_superseded_by is None
