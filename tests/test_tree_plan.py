"""The tree rule per decision kind, as a pure function (no database): placement.tree."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from fabric.placement.intervals import ChainMember
from fabric.placement.tree import ChainLookup, chain_lookup, chain_of, plan
from fabric.placement.validator import Candidate, Decision, IncomingWrite


def T(y: int) -> datetime:
    return datetime(y, 1, 1, tzinfo=timezone.utc)


ROOT, MID, LEAF, NODE = (uuid.uuid4() for _ in range(4))
Y2020, Y2024 = T(2020), T(2024)


def cand(id: uuid.UUID, *, parent: uuid.UUID | None, depth: int, valid_from: datetime = Y2020,
         valid_to: datetime | None = None, subject: str | None = None, relation: str | None = None,
         value: str | None = None, key_match: bool = False) -> Candidate:
    return Candidate(id=id, content=f"memory {id}", similarity=0.9, valid_from=valid_from, valid_to=valid_to,
                     parent_id=parent, root_id=ROOT, depth=depth, version=1, subject=subject, relation=relation,
                     value=value, key_match=key_match)


# A branch ROOT -> MID -> LEAF; MID is under the key (ada, employer).
TREE = [cand(ROOT, parent=None, depth=0), cand(MID, parent=ROOT, depth=1, subject="ada", relation="employer",
                                               value="Acme", key_match=True),
        cand(LEAF, parent=MID, depth=2)]


def write(*, valid_from: datetime = Y2024, subject: str | None = None, relation: str | None = None,
          value: str | None = None) -> IncomingWrite:
    return IncomingWrite(id=uuid.uuid4(), org="o", content="new fact", valid_from=valid_from, subject=subject,
                         relation=relation, value=value)


def decision(kind: str, target: uuid.UUID | None, **key: str) -> Decision:
    return Decision(kind, target, "test", 0.9, "test", **key)  # type: ignore[arg-type]


def key_row(c: Candidate, state: str = "live") -> dict:
    return {"id": c.id, "subject": c.subject, "relation": c.relation, "value": c.value,
            "valid_from": c.valid_from, "valid_to": c.valid_to, "state": state}


def test_a_new_branch_is_a_root_of_its_own():
    p = plan(write(), decision("new_branch", None), TREE, [], NODE)
    assert p is not None
    assert (p.parent_id, p.root_id, p.depth, p.state, p.revisions) == (None, NODE, 0, "live", ())


def test_a_child_update_hangs_under_its_target_one_level_down():
    p = plan(write(), decision("child_update", MID), TREE, [], NODE)
    assert p is not None
    assert (p.parent_id, p.root_id, p.depth, p.state, p.revisions) == (MID, ROOT, 2, "live", ())


def test_a_duplicate_and_an_unknown_target_make_no_node():
    assert plan(write(), decision("duplicate", MID), TREE, [], NODE) is None
    assert plan(write(), decision("child_update", uuid.uuid4()), TREE, [], NODE) is None
    assert plan(write(), decision("contradiction_fork", uuid.uuid4()), TREE, [], NODE) is None


def test_a_contradiction_is_a_sibling_of_what_it_supersedes():
    w = write(subject="ada", relation="employer", value="Globex")
    p = plan(w, decision("contradiction_fork", MID), TREE, chain_of([key_row(TREE[1])]), NODE)
    assert p is not None
    assert (p.parent_id, p.root_id, p.depth, p.state) == (ROOT, ROOT, 1, "live")
    assert [(r.memory_id, r.valid_to, r.superseded_by) for r in p.revisions] == [(MID, T(2024), NODE)]
    assert p.details == {"out_of_order": False, "superseded": [str(MID)]}


def test_a_root_s_correction_is_a_root_of_its_own():
    p = plan(write(), decision("contradiction_fork", ROOT), TREE, [], NODE)
    assert p is not None
    assert (p.parent_id, p.root_id, p.depth) == (None, NODE, 0)
    assert [r.memory_id for r in p.revisions] == [ROOT]


def test_an_older_contradiction_is_history_beside_the_version_it_precedes():
    w = write(valid_from=T(2018), subject="ada", relation="employer", value="Initech")
    p = plan(w, decision("contradiction_fork", MID), TREE, chain_of([key_row(TREE[1])]), NODE)
    assert p is not None
    assert (p.parent_id, p.depth, p.state, p.superseded_by, p.valid_to) == (ROOT, 1, "superseded", MID, T(2020))
    assert p.revisions == () and p.details["out_of_order"] is True


def test_a_fork_sits_beside_the_chain_member_it_revises_not_the_target():
    # The validator named LEAF, but the key's live version is MID: the new node is MID's sibling.
    w = write(subject="ada", relation="employer", value="Globex")
    leaf = cand(LEAF, parent=MID, depth=2, valid_from=T(2010), valid_to=T(2012))
    chain = [ChainMember(MID, T(2020), None, "Acme")]
    p = plan(w, decision("contradiction_fork", LEAF), [TREE[0], TREE[1], leaf], chain, NODE)
    assert p is not None
    assert (p.parent_id, p.depth) == (ROOT, 1) and [r.memory_id for r in p.revisions] == [MID]


def test_the_node_key_is_the_caller_s_else_the_validator_s():
    keyed = write(subject="ada", relation="employer", value="Globex")
    p = plan(keyed, decision("new_branch", None, subject="x", relation="y", value="z"), TREE, [], NODE)
    assert p is not None and (p.subject, p.relation, p.value) == ("ada", "employer", "Globex")
    p = plan(write(), decision("child_update", MID, subject="ada", relation="title", value="CTO"), TREE, [], NODE)
    assert p is not None and (p.subject, p.relation, p.value) == ("ada", "title", "CTO")


def test_what_a_fork_needs_fetched_first():
    keyed = write(subject="ada", relation="employer", value="Globex")
    fork = decision("contradiction_fork", MID)
    # Nothing to read for other kinds, or for a target that is not a candidate.
    assert chain_lookup(keyed, decision("child_update", MID), TREE, []) is None
    assert chain_lookup(keyed, decision("contradiction_fork", uuid.uuid4()), TREE, []) is None
    # A keyed write: its key's versions, unless they were gathered already.
    assert chain_lookup(keyed, fork, TREE, [key_row(TREE[1])]) is None
    assert chain_lookup(keyed, fork, TREE, []) == ChainLookup("ada", "employer", MID)
    # A text-only write whose read key no gathered memory is under: the target's supersession chain.
    text = decision("contradiction_fork", MID, subject="bob", relation="title", value="CTO")
    assert chain_lookup(write(), text, TREE, [key_row(TREE[1])]) == ChainLookup(None, None, MID)
    assert not ChainLookup(None, None, MID).by_key
    # ... and one whose read key a gathered memory is under: those rows are the chain.
    read = decision("contradiction_fork", MID, subject="ada", relation="employer", value="Globex")
    assert chain_lookup(write(), read, TREE, [key_row(TREE[1])]) is None
