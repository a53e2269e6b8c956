"""The public methods the admin CLI uses (it no longer reaches into Fabric's private helpers):
validate_write, writes_summary, require_org, worker_status -- on Fabric and AsyncFabric alike."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from fabric.admin.orgs import UnknownOrg
from fabric.errors import NotFound, PolicyRefused, ValidationError
from fabric.write.policy import refusal_counts


def test_validate_write_checks_and_gates_but_writes_nothing(api, fab, org, pg):
    start = datetime(2025, 3, 2, 9, 30, tzinfo=timezone.utc)
    note = api.validate_write({"content": "  Stand-up ran long on Tuesday. ", "org": org, "kind": "episodic",
                               "valid_from": start})
    # As `write` would store it: the episodic note's valid time is bounded by the policy.
    assert note.org == org and note.kind == "episodic"
    assert note.valid_to == start + timedelta(days=fab.settings.episodic_ttl_days)
    with pytest.raises(ValidationError) as exc:
        api.validate_write({"content": "", "org": org})
    assert exc.value.field == "content"
    with pytest.raises(PolicyRefused) as refused:
        api.validate_write({"content": "Globex pays monthly.", "org": org, "kind": "invoice_status"})
    assert refused.value.field == "kind"
    assert refusal_counts(fab.redis, org) == {org: {"invoice_status": 1}}  # counted as on write()
    assert pg.execute("SELECT count(*) FROM fabric.writes WHERE org = %s", (org,)).fetchone()[0] == 0


def test_writes_summary_counts_statuses_and_decisions(api, org):
    same = "Priya Raman leads the Oslo data team."
    receipts = api.write_many([{"content": same, "org": org}])
    api.drain(org, timeout=60)
    receipts += api.write_many([{"content": same, "org": org},
                                {"content": "The Lisbon office closes at six on Fridays.", "org": org}])
    api.drain(org, timeout=60)
    summary = api.writes_summary(receipts)
    assert summary == {"status": {"placed": 2, "duplicate": 1},
                       "decisions": {"new_branch": 2, "duplicate": 1}}
    assert api.writes_summary([]) == {"status": {}, "decisions": {}}


def test_require_org_names_an_org_nothing_was_written_to(api, org):
    api.wait(api.write("Kofi Mensah moved to Accra.", org=org), timeout=60)
    api.require_org(org)  # exists: no error
    nobody = f"nobody-{uuid.uuid4().hex[:6]}"
    with pytest.raises(UnknownOrg) as exc:
        api.require_org(nobody)
    assert isinstance(exc.value, NotFound) and nobody in str(exc.value)
    with pytest.raises(ValidationError):
        api.require_org("")


def test_worker_status_says_who_listens(api, bare, org):
    api.wait(api.write("Ines Duarte chairs the Porto board.", org=org), timeout=120)  # its worker is up
    assert "1 worker(s) listening on queue" in api.worker_status()   # the session's worker
    assert "no worker is listening" in bare.worker_status()         # a queue of its own, no worker
