"""Admin replay: re-run placement over a subtree, dry run or applied (issue 5)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest
from psycopg.rows import dict_row

from fabric import Fabric
from fabric.errors import NotFound, ValidationError

TABLES = {
    "writes": "SELECT * FROM fabric.writes WHERE org = %s ORDER BY id",
    "decisions": "SELECT * FROM fabric.decisions WHERE org = %s ORDER BY id",
    "memories": "SELECT org, id, write_id, parent_id, root_id, depth, content, placement, created_at "
                "FROM fabric.memories WHERE org = %s ORDER BY id",
    "versions": "SELECT * FROM fabric.memory_versions WHERE org = %s ORDER BY memory_id, version",
}


def T(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=timezone.utc)


def put(fab, org, text, **kw):
    return fab.wait(fab.write(text, org=org, **kw), 60)


def snapshot(pg, org):
    cur = pg.cursor(row_factory=dict_row)
    return {name: cur.execute(sql, (org,)).fetchall() for name, sql in TABLES.items()}


@pytest.fixture(scope="module")
def strict(database_url, redis_url, data_dir):
    """The same store seen by an admin whose rule validator calls nothing 'near' below 0.99 similarity:
    what the session's validator placed as a correction by similarity, this one calls a new branch (and it
    asks no learned second opinion, which looks past that bar). (A
    refinement that says all the old sentence says, and more, stays one at any similarity: restate.py.)"""
    f = Fabric.connect(database_url, redis_url, data_dir=data_dir, run_worker=False, auto_migrate=False,
                       near_similarity=0.99, learned_second_opinion=False)
    yield f
    f.close()


@pytest.fixture
def office(fab, org):
    """A root, its refinement, a duplicate of the root, and an unkeyed correction of the root."""
    a = put(fab, org, "The Lyon office opens at 9am.", valid_from=T(2020))
    b = put(fab, org, "The Lyon office opens at 9am and closes at 6pm on weekdays.", valid_from=T(2020))
    d = put(fab, org, "The Lyon office opens at 9am.", valid_from=T(2020))
    c = put(fab, org, "The Lyon office opens at 10am.", valid_from=T(2023))
    assert [p.decision for p in (a, b, d, c)] == ["new_branch", "child_update", "duplicate", "contradiction_fork"]
    assert b.target_id == a.memory_id and d.memory_id == a.memory_id and c.target_id == a.memory_id
    return a, b, d, c


def test_replay_with_the_same_validator_changes_nothing(fab, org, office, pg):
    a, *_ = office
    before = snapshot(pg, org)
    report = fab.replay(org, a.memory_id, apply=True)
    assert report.writes == 4 and report.unchanged == 4 and report.changes == []
    assert report.superseded == [] and report.revived == []
    after = snapshot(pg, org)
    # Only the replay's own log entry is new: no node, no version, no write changed.
    assert after["memories"] == before["memories"]
    assert after["versions"] == before["versions"]
    assert after["writes"] == before["writes"]
    new = [d for d in after["decisions"] if d not in before["decisions"]]
    assert [(d["action"], d["replay_id"] == d["id"]) for d in new] == [("replay", True)]


def test_dry_run_reports_changes_and_writes_nothing(strict, org, office, pg):
    a, b, d, c = office
    before = snapshot(pg, org)
    report = strict.replay(org, a.memory_id)  # dry run is the default
    assert not report.applied and report.replay_id is None
    changed = {ch.write_id: ch for ch in report.changes}
    # The correction becomes a branch of its own; the refinement and the exact duplicate stay as they are.
    assert set(changed) == {c.write_id}
    assert (changed[c.write_id].old_kind, changed[c.write_id].new_kind) == ("contradiction_fork", "new_branch")
    # The root stops being superseded: the report says it would be revived.
    assert [f.memory_id for f in report.revived] == [a.memory_id]
    assert snapshot(pg, org) == before


def test_apply_commits_new_versions_and_keeps_the_old_placement_at_known_at(strict, fab, org, office, pg):
    a, b, d, c = office
    believed_before = {m.id: m for m in fab.belief_state(org=org, valid_at=T(2024))}
    assert a.memory_id not in believed_before and c.memory_id in believed_before  # a superseded by c in 2024

    report = strict.replay(org, a.memory_id, apply=True)
    assert report.applied and report.replay_id is not None and len(report.changes) == 1
    at = report.at

    # Now: the root is live again in 2024, and the correction is a root of its own on a new node.
    now_2024 = {m.id: m for m in fab.belief_state(org=org, valid_at=T(2024))}
    assert a.memory_id in now_2024 and c.memory_id not in now_2024
    new_c = next(ch.new_memory for ch in report.changes if ch.write_id == c.write_id)
    assert new_c != c.memory_id and now_2024[new_c].parent_id is None and now_2024[new_c].placement == "new_branch"
    assert fab.get(b.memory_id, org=org).parent_id == a.memory_id  # the refinement stays the root's child

    # As known just before the replay: the old placement, exactly.
    old = {m.id: m for m in fab.belief_state(org=org, valid_at=T(2024), known_at=at - timedelta(microseconds=1))}
    assert old.keys() == believed_before.keys()
    old_walk = fab.walk(a.memory_id, org=org, include_superseded=True, known_at=at - timedelta(microseconds=1))
    assert b.memory_id in {m.id for m in old_walk}  # the refinement, under the root then and now
    assert b.memory_id in {m.id for m in fab.walk(a.memory_id, org=org, include_superseded=True)}

    # Logged: one summary row plus one 'replay' decision per changed write, all carrying the replay id.
    rows = pg.execute("SELECT id, action, kind, write_id, replay_id, details FROM fabric.decisions "
                      "WHERE org = %s AND replay_id = %s", (org, report.replay_id)).fetchall()
    assert {r[1] for r in rows} == {"replay"}
    assert [(r[3], r[2]) for r in rows if r[3] is not None] == [(c.write_id, "new_branch")]
    summary = next(r for r in rows if r[0] == report.replay_id)
    assert summary[5]["changed"] == 1
    # The writes now point at their replay decisions; the old decisions stay in the log.
    w = dict(pg.execute("SELECT id, decision_id FROM fabric.writes WHERE org = %s AND id = %s",
                        (org, c.write_id)).fetchall())
    assert w[c.write_id] == next(ch.decision_id for ch in report.changes if ch.write_id == c.write_id)
    assert pg.execute("SELECT count(*) FROM fabric.decisions WHERE id = %s", (c.decision_id,)).fetchone()[0] == 1
    # Version numbers stay consecutive and every memory has at most one current version.
    for mid, versions in _versions(pg, org).items():
        assert versions == list(range(1, len(versions) + 1)), mid

    # Replaying the correction's new branch with the ordinary validator forks the root again.
    again = fab.replay(org, new_c, apply=True)
    assert [(ch.old_kind, ch.new_kind) for ch in again.changes] == [("new_branch", "contradiction_fork")]
    assert [f.memory_id for f in again.superseded] == [a.memory_id]
    assert a.memory_id not in {m.id for m in fab.belief_state(org=org, valid_at=T(2024))}


def test_a_replayed_decision_can_be_reverted(strict, fab, org, office):
    a, b, d, c = office
    report = strict.replay(org, a.memory_id, apply=True)
    ch = next(ch for ch in report.changes if ch.write_id == c.write_id)
    fab.revert(ch.decision_id, org=org, reason="test")
    with pytest.raises(NotFound):
        fab.get(ch.new_memory, org=org)


def test_bad_input(fab, org, office):
    a, *_ = office
    with pytest.raises(NotFound):
        fab.replay(org, uuid.uuid4())
    with pytest.raises(NotFound):
        fab.replay(f"{org}-nobody", a.memory_id)
    with pytest.raises(ValidationError) as exc:
        fab.replay(org, a.memory_id, validator="oracle")
    assert exc.value.field == "validator"
    with pytest.raises(ValidationError) as exc:
        fab.replay(org, "not-an-id")
    assert exc.value.field == "root_id"


def _versions(pg, org):
    out: dict = {}
    for mid, version in pg.execute("SELECT memory_id, version FROM fabric.memory_versions WHERE org = %s "
                                   "ORDER BY memory_id, version", (org,)).fetchall():
        out.setdefault(mid, []).append(version)
    return out


def test_replay_with_the_llm_validator(database_url, redis_url, data_dir, fab, org, pg):
    """The rule validator calls a changed meeting time a correction; an LLM (a scripted OpenAI-compatible
    server on 127.0.0.1, reached through the real openai client) says these are two different meetings."""
    from tests.openai_stub import OpenAIStub, answer, by_content

    first = put(fab, org, "The design review is on Monday at 10am.")
    second = put(fab, org, "The design review is on Monday at 11am.")
    assert second.decision == "contradiction_fork"
    stub = OpenAIStub(model="stub-model")
    try:
        stub.script(default=by_content([("11am", answer("new_branch", reason="a second review, not a move"))],
                                       fallback=answer("new_branch")))
        with Fabric.connect(database_url, redis_url, data_dir=data_dir, run_worker=False, auto_migrate=False,
                            openai_base_url=stub.base_url, openai_api_key="k", llm_model="stub-model") as admin:
            before = snapshot(pg, org)
            dry = admin.replay(org, first.memory_id, validator="llm")
            assert snapshot(pg, org) == before
            assert [(c.old_kind, c.new_kind, c.validator) for c in dry.changes] == [
                ("contradiction_fork", "new_branch", "llm")]
            assert dry.validator_calls == 1 and stub.count == 1  # the first write needs no call: nothing near
            assert [f.memory_id for f in dry.revived] == [first.memory_id]
            done = admin.replay(org, first.memory_id, validator="llm", apply=True)
        assert done.changes[0].reason == "a second review, not a move"
        assert fab.get(first.memory_id, org=org).state == "live"
        rec = next(d for d in fab.decisions(org=org, action="replay") if d.kind == "new_branch")
        assert rec.validator == "llm" and rec.model == "stub-model"
    finally:
        stub.close()


def test_replay_keeps_a_source_invalidation(strict, fab, org):
    a = put(fab, org, "The Lyon office opens at 9am.", valid_from=T(2020), source="facilities")
    b = put(fab, org, "The Lyon office opens at 10am.", valid_from=T(2021), source="facilities")
    assert b.decision == "contradiction_fork" and fab.get(a.memory_id, org=org).valid_to == T(2021)
    assert fab.invalidate_source("facilities", org=org, at=T(2022)) == 1  # only b was live
    same = fab.replay(org, a.memory_id, apply=True)
    assert same.changes == [] and fab.get(b.memory_id, org=org).valid_to == T(2022)
    assert fab.get(b.memory_id, org=org).version == 2  # nothing re-recorded
    moved = strict.replay(org, a.memory_id, apply=True)  # b becomes a branch of its own, on a new node
    new_b = next(ch.new_memory for ch in moved.changes if ch.write_id == b.write_id)
    assert fab.get(new_b, org=org).valid_to == T(2022)
