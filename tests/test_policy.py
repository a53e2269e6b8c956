"""The write policy (seed 004): refused kinds, episodic decay, source invalidation (issue 5)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from fabric.errors import NotFound, PolicyRefused, ValidationError
from fabric.write.policy import REFUSED_KEY, refusal_counts
from fabric.types import utcnow


def T(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, tzinfo=timezone.utc)


def put(fab, org, text, **kw):
    return fab.wait(fab.write(text, org=org, **kw), 60)


# ------------------------------------------------------------------ refused kinds

def test_a_refused_kind_is_refused_with_a_reason_naming_the_field_and_counted(fab, org, pg):
    assert "plan_tier" in fab.settings.refused_kinds
    with pytest.raises(PolicyRefused) as exc:
        fab.write("Acme is on the Pro plan.", org=org, kind="plan_tier")
    assert exc.value.field == "kind"
    assert "system of record" in str(exc.value) and "plan_tier" in str(exc.value)
    with pytest.raises(PolicyRefused):
        fab.write("Acme's March invoice is unpaid.", org=org, kind="invoice_status")
    with pytest.raises(ValidationError) as exc:  # in a batch, the item is named
        fab.write_many([{"content": "Fine.", "org": org}, {"content": "Pro plan.", "org": org, "kind": "plan_tier"}])
    assert exc.value.field == "items[1].kind"
    # Nothing reached the store, not even the good item of the refused batch.
    assert pg.execute("SELECT count(*) FROM fabric.writes WHERE org = %s", (org,)).fetchone()[0] == 0
    assert refusal_counts(fab.redis, org) == {org: {"plan_tier": 2, "invoice_status": 1}}
    # An accepted kind is not counted.
    put(fab, org, "Acme prefers email over phone calls.", kind="stated_preference")
    assert refusal_counts(fab.redis, org) == {org: {"plan_tier": 2, "invoice_status": 1}}
    assert fab.stats(org)[org]["refusals"] == {"plan_tier": 2, "invoice_status": 1}


def test_refused_kinds_are_configurable(database_url, redis_url, data_dir, org):
    from fabric import Fabric

    with Fabric.connect(database_url, redis_url, data_dir=data_dir, run_worker=False, auto_migrate=False,
                        refused_kinds={"ticket_state"}) as f:
        with pytest.raises(PolicyRefused):
            f.write("Ticket 42 is open.", org=org, kind="ticket_state")
        f.write("Acme is on the Pro plan.", org=org, kind="plan_tier")  # not refused here
        assert refusal_counts(f.redis, org) == {org: {"ticket_state": 1}}
        f.redis.delete(REFUSED_KEY + org)


# ------------------------------------------------------------------ episodic decay

def test_episodic_writes_decay_out_of_retrieval_but_keep_their_trace(fab, org):
    ttl = timedelta(days=fab.settings.episodic_ttl_days)
    old_from = utcnow() - ttl - timedelta(days=2)
    old = put(fab, org, "During the call the user sounded rushed and asked to keep it short.", kind="episodic",
              valid_from=old_from)
    fresh = put(fab, org, "During today's call the user asked about exporting their invoices to a spreadsheet.",
                kind="episodic")
    stable = put(fab, org, "The user asked to keep every call short.", valid_from=old_from)

    found = {m.id for m in fab.search("user call keep it short", org=org, k=10)}
    assert old.memory_id not in found          # past its TTL: out of retrieval now
    assert fresh.memory_id in found and stable.memory_id in found

    m = fab.history(old.memory_id, org=org)[0]  # the trace stays
    assert m.kind == "episodic" and m.valid_to == old_from + ttl
    inside = {x.id for x in fab.belief_state(org=org, valid_at=old_from + timedelta(days=1))}
    assert old.memory_id in inside
    assert old.memory_id in {x.id for x in fab.search("user call keep it short", org=org, k=10,
                                                      valid_at=old_from + timedelta(days=1))}
    assert fab.get(fresh.memory_id, org=org).valid_to is not None
    assert fab.get(stable.memory_id, org=org).valid_to is None  # only episodic writes decay


def test_an_earlier_valid_to_on_an_episodic_write_is_kept(fab, org):
    start = utcnow() - timedelta(hours=2)
    p = put(fab, org, "The user is on a train right now.", durability="episodic", valid_from=start,
            valid_to=start + timedelta(hours=1))
    assert fab.history(p.memory_id, org=org)[0].valid_to == start + timedelta(hours=1)


# ------------------------------------------------------------------ invalidate_source

def test_invalidate_source_ends_valid_time_as_new_versions_and_logs_it(fab, org):
    a = put(fab, org, "Acme's account manager is Dana.", source="crm", valid_from=T(2024),
            subject="Acme", relation="account_manager", value="Dana")
    b = put(fab, org, "Acme's billing contact is Lee.", source="crm", valid_from=T(2024),
            subject="Acme", relation="billing_contact", value="Lee")
    other = put(fab, org, "Acme prefers invoices in euros.", source="chat", valid_from=T(2024))
    later = put(fab, org, "Acme's renewal owner is Kim.", source="crm", valid_from=T(2026, 6),
                subject="Acme", relation="renewal_owner", value="Kim")
    at = T(2025, 3)

    assert fab.invalidate_source("crm", org=org, at=at) == 2  # `later` starts after `at`: untouched

    assert fab.current_value("Acme", "account_manager", org=org) is None
    assert fab.current_value("Acme", "account_manager", org=org, valid_at=T(2025)).id == a.memory_id
    assert fab.get(a.memory_id, org=org).valid_to == at and fab.get(b.memory_id, org=org).valid_to == at
    assert fab.get(a.memory_id, org=org).version == 2
    assert fab.get(other.memory_id, org=org).valid_to is None
    assert fab.get(later.memory_id, org=org).valid_to is None
    # Known before the invalidation, the old belief (open-ended) stands.
    d = fab.decisions(org=org, action="invalidate_source")
    assert len(d) == 1 and "crm" in d[0].reason
    before = fab.current_value("Acme", "account_manager", org=org,
                               known_at=d[0].created_at - timedelta(microseconds=1))
    assert before is not None and before.valid_to is None
    # Nothing live from that source any more at that time: a second call ends nothing and logs nothing.
    assert fab.invalidate_source("crm", org=org, at=at) == 0
    assert len(fab.decisions(org=org, action="invalidate_source")) == 1


def test_invalidate_source_defaults_to_now(fab, org):
    p = put(fab, org, "Acme's plan renews monthly.", source="billing", valid_from=T(2024))
    assert fab.invalidate_source("billing", org=org) == 1
    assert fab.get(p.memory_id, org=org).valid_to <= utcnow()
    assert fab.search("When does Acme's plan renew?", org=org, k=5) == []


def test_invalidate_source_bad_input(fab, org):
    put(fab, org, "Something.", source="crm")
    with pytest.raises(ValidationError) as exc:
        fab.invalidate_source("  ", org=org)
    assert exc.value.field == "source"
    with pytest.raises(ValidationError) as exc:
        fab.invalidate_source("crm", org=org, at=datetime(2025, 1, 1))
    assert exc.value.field == "at"
    with pytest.raises(NotFound):
        fab.invalidate_source("crm", org=f"nobody-{uuid.uuid4().hex[:6]}")
