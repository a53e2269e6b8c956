"""Admin replay: re-run placement over a subtree with a chosen validator, see what changes, apply it or not.

How it works (one transaction, under the org's placement lock):

1. The family: the branch under `root` (walked through superseded nodes), closed over supersession
   links in both directions (a contradiction of a root starts a new root, so one fact's versions can
   span branches). The writes: those whose current memory is in the family, plus those recorded as
   duplicates of one, in their original transaction-time order (the time of their first placement).
2. Undo: every placement of those writes is taken back: their nodes' current versions expire (and,
   as `retract_memory` does (`ledger.belief_before`), a memory one of them superseded is believed again as before).
3. Redo: each write is placed again, in order, with the chosen validator: candidates are gathered
   from the scratch state (the family as re-placed so far, plus the rest of the org as it stood when
   the write was first placed — memories of other branches that entered the tree later are left out,
   so a replay cannot see the future). A write whose placement is unchanged keeps its node (a new
   version reinstates it); a write whose placement changed gets a new node through `apply_decision`
   (nodes are immutable) with an action='replay' decision carrying the replay's id.
   A valid time an admin ended (`invalidate_source`) is carried over to the re-placed memory.
4. Compact: for every memory whose belief ends up as it was, the versions recorded in this replay are
   dropped and the previous one is believed again — so only real changes leave new versions, and
   versions recorded and expired within the replay (never visible to any known_at) are dropped.
5. Diff: the decisions that changed, and the facts that went from live to superseded or back.

A dry run does all of it inside a savepoint and rolls it back: nothing is written. An apply commits
it: old versions expire at the replay's transaction time, so `known_at` before it still sees the old
placement. The org's placement lock is held for the whole replay (seconds for a thousand writes with
the rule validator; with the LLM validator, as long as its calls take).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import psycopg

from ..config import Settings
from ..errors import ConfigurationError, NotFound, ValidationError
from ..placement.rules import text_key
from ..placement.validator import Candidate, Decision, IncomingWrite, Validator
from ..sql import q
from ..types import as_uuid, check_org
from ..write import ledger
from ..write.apply import (
    apply_decision, candidate_from_row, decide, plan_node, with_key_members, write_revisions,
)
from .orgs import require_org

if TYPE_CHECKING:
    from ..db import Conn
    from ..embed import Embed

log = logging.getLogger(__name__)

VALIDATORS = ("rule", "llm")


@dataclass
class ReplayChange:
    """One write whose placement changes. `change` is 'decision' (another kind or target) or 'moved'
    (the same decision, but its target was re-created, so the write lands on a new node too)."""

    write_id: uuid.UUID
    content: str
    change: str
    old_kind: str | None
    new_kind: str
    old_target: uuid.UUID | None
    new_target: uuid.UUID | None
    old_memory: uuid.UUID | None
    new_memory: uuid.UUID | None
    reason: str
    validator: str
    decision_id: uuid.UUID | None = None


@dataclass
class FactChange:
    """A fact (the memory of one write) whose belief changes: live <-> superseded, or it appears/disappears."""

    write_id: uuid.UUID | None
    memory_id: uuid.UUID
    content: str
    before: str | None
    after: str | None
    before_valid_to: datetime | None = None
    after_valid_to: datetime | None = None
    superseded_by: uuid.UUID | None = None


@dataclass
class ReplayReport:
    org: str
    root_id: uuid.UUID
    validator: str
    applied: bool
    replay_id: uuid.UUID | None
    at: datetime | None
    family: int = 0
    writes: int = 0
    unchanged: int = 0
    changes: list[ReplayChange] = field(default_factory=list)
    superseded: list[FactChange] = field(default_factory=list)
    revived: list[FactChange] = field(default_factory=list)
    added: list[FactChange] = field(default_factory=list)
    removed: list[FactChange] = field(default_factory=list)
    new_nodes: int = 0
    validator_calls: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> int:
        return len(self.changes)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["changed"] = self.changed
        return out


def make_replay_validator(settings: Settings, name: str) -> Validator:
    from ..write.placer import make_validator

    if name not in VALIDATORS:
        raise ValidationError("validator", f"{name!r} is not one of {', '.join(VALIDATORS)}")
    try:
        # Replaying with the LLM asks it about every write: a replay is how an admin has the model
        # re-judge what the rules decided, so the rules must not settle anything first.
        return make_validator(settings, name, rules_first=False)
    except ImportError as exc:
        raise ConfigurationError(f"the {name} validator is not available: {exc}") from exc


def replay(conn: Conn, settings: Settings, embed: Embed, org: str, root_id: uuid.UUID | str,
           *, validator: str = "rule", apply: bool = False) -> ReplayReport:
    """Replay the subtree under `root_id` on `conn` (acting for `org`); see the module's docstring."""
    check_org(org)
    rid = as_uuid("root_id", root_id)
    v = make_replay_validator(settings, validator)
    started = time.perf_counter()
    require_org(conn, org)
    if conn.execute(q("memory_exists"), {"org": org, "id": rid}).fetchone() is None:
        raise NotFound("memory", rid, org)
    with conn.transaction():
        report = _run(conn, settings, embed, org, rid, v, validator)
        if not apply:
            raise psycopg.Rollback()  # the dry run: everything above is undone
    report.applied = apply
    if not apply:
        report.replay_id = None
    report.seconds = time.perf_counter() - started
    log.info("replay", extra={"action": "replay", "org": org, "root": str(rid), "applied": apply,
                              "writes": report.writes, "changed": report.changed, "seconds": report.seconds})
    return report


def _run(conn: Conn, s: Settings, embed: Embed, org: str, rid: uuid.UUID, v: Validator,
         vname: str) -> ReplayReport:
    now = ledger.lock_org(conn, org)
    family = [r["id"] for r in conn.execute(q("replay_family"), {"org": org, "root": rid}).fetchall()]
    rows = conn.execute(q("replay_writes"), {"org": org, "ids": family}).fetchall()
    replay_id = uuid.uuid4()
    report = ReplayReport(org=org, root_id=rid, validator=vname, applied=False, replay_id=replay_id, at=now,
                          family=len(family), writes=len(rows))

    # Embeddings: a placed write's node carries its embedding; a duplicate's text is embedded again.
    vecs: dict[uuid.UUID, np.ndarray] = {}
    dup_rows = [r for r in rows if r["status"] == "duplicate"]
    if dup_rows:
        for r, vec in zip(dup_rows, embed([r["content"] for r in dup_rows])):
            vecs[r["id"]] = vec
    for r in rows:
        if r["status"] == "placed":
            emb = r["node_embedding"]
            vecs[r["id"]] = np.asarray(emb.to_numpy() if hasattr(emb, "to_numpy") else emb, dtype=np.float32)

    ledger.log_decision(conn, org, replay_id, action="replay", now=now, memory_id=rid, validator=v.name,
                        model=v.model, reason=f"replay of the subtree under {rid} with the {vname} validator",
                        replay_id=replay_id, details={"root": str(rid), "validator": vname})

    # 2. Undo. Every node the replay re-places stops being believed (one statement); a memory they had
    # superseded that is not itself re-placed is believed again as before (`retract_memory`'s rule).
    undone = [r["memory_id"] for r in rows if r["status"] == "placed"]
    conn.execute(q("replay_expire_nodes"), {"org": org, "ids": undone, "now": now})
    for sup in conn.execute(q("replay_superseded_outside"), {"org": org, "ids": undone}).fetchall():
        _revive(conn, org, sup, now, replay_id)

    # 3. Redo, oldest first.
    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(max(s.ef_search, s.neighbours_k)),))
    conn.execute(q("replay_members_create"))
    conn.execute(q("replay_members_add"), {"ids": family})
    writer: dict[uuid.UUID, uuid.UUID | None] = {r["memory_id"]: r["id"] for r in rows if r["status"] == "placed"}
    with conn.pipeline():  # statements whose results nobody reads ride along with the next query
        for r in rows:
            write = IncomingWrite(org=org, id=r["id"], content=r["content"], valid_from=r["valid_from"],
                                  valid_to=r["valid_to"], subject=r["subject"], relation=r["relation"],
                                  value=r["value"], source=r["source"], kind=r["kind"], durability=r["durability"],
                                  metadata=r["metadata"] or {})
            vec = vecs[r["id"]]
            cands, key_rows = _candidates(conn, write, vec, r["placed_at"], k=s.neighbours_k)
            decision = decide(write, cands, v, near_similarity=s.near_similarity)
            if decision.called:
                report.validator_calls += 1
            change = _replace(conn, write, vec, decision, cands, key_rows, now, r, replay_id, writer)
            _keep_ended(conn, org, r, change, now)
            if change is None:
                report.unchanged += 1
                continue
            report.changes.append(change)
            if change.new_memory is not None and change.new_kind != "duplicate" and change.new_memory != r["memory_id"]:
                conn.execute(q("replay_members_add"), {"ids": [change.new_memory]})
                writer[change.new_memory] = r["id"]
                report.new_nodes += 1

    # 4. Compact, 5. diff.
    _compact(conn, org, now)
    _diff(conn, org, now, report)
    ledger.set_details(conn, org, replay_id, {
        "family": report.family, "writes": report.writes, "changed": report.changed,
        "new_nodes": report.new_nodes, "superseded": [str(f.memory_id) for f in report.superseded],
        "revived": [str(f.memory_id) for f in report.revived]})
    return report


_NEAR = q("replay_near_base")
_NEAR_ANN = _NEAR + "\nORDER BY distance\nLIMIT %(k)s"
_NEAR_EXACT = ("WITH qualifying AS MATERIALIZED (\n" + _NEAR + "\n)\n"
               "SELECT * FROM qualifying ORDER BY distance LIMIT %(k)s")


def _candidates(conn: Conn, write: IncomingWrite, vec: np.ndarray, placed_at: datetime, *,
                k: int) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """`gather_candidates` as of the write's first placement: the k nearest live memories plus every
    memory believed under the write's key, leaving out memories of other branches that entered the
    tree after it was first placed. The as-of filter runs before the top-k cut, so later memories
    cannot crowd out the neighbours the write had."""
    params = {"org": write.org, "q": vec, "k": k, "placed_at": placed_at}
    rows = conn.execute(_NEAR_ANN, params).fetchall()
    if len(rows) < k:
        rows = conn.execute(_NEAR_EXACT, params).fetchall()
    cands = {r["id"]: candidate_from_row(r, 1.0 - float(r["distance"]), False) for r in rows}
    key_rows: list[dict[str, Any]] = []
    subject, relation = (write.subject, write.relation) if write.keyed else text_key(write.content)
    if subject is not None:
        key_rows = conn.execute(q("replay_key_members"), {**params, "subject": subject,
                                                          "relation": relation}).fetchall()
    return with_key_members(cands, key_rows)


def _keep_ended(conn: Conn, org: str, r: dict[str, Any], change: ReplayChange | None,
                now: datetime) -> None:
    """A valid time ended by an admin action (a source invalidation: live, no successor, ending before the
    write said) is not a placement: it carries over to the write's re-placed memory."""
    ended = r["cur_valid_to"]
    if not (r["status"] == "placed" and r["cur_state"] == "live" and r["cur_superseded_by"] is None
            and ended is not None and (r["valid_to"] is None or ended < r["valid_to"])):
        return
    if change is None:
        mid = r["memory_id"]
    elif change.new_kind != "duplicate" and change.new_memory is not None:
        mid = change.new_memory
    else:
        return
    cur = conn.execute(q("replay_current_version"), {"org": org, "memory_id": mid}).fetchone()
    if (cur is not None and cur["state"] == "live" and cur["superseded_by"] is None and cur["valid_from"] < ended
            and (cur["valid_to"] is None or cur["valid_to"] > ended)):
        ledger.revise(conn, org, mid, valid_to=ended, state=cur["state"], superseded_by=cur["superseded_by"],
                      decision_id=r["cur_decision_id"], now=now)


def _revive(conn: Conn, org: str, sup: dict[str, Any], now: datetime, decision_id: uuid.UUID) -> None:
    """Believe a memory again as it was before the (taken back) node superseded it."""
    prev = ledger.belief_before(conn, org, sup["memory_id"], sup["version"], sup["superseded_by"])
    ledger.revise(conn, org, sup["memory_id"], valid_to=prev["valid_to"], state=prev["state"],
                  superseded_by=prev["superseded_by"], decision_id=decision_id, now=now)


def _target_writer(conn: Conn, org: str, mid: uuid.UUID | None,
                   writer: dict[uuid.UUID, uuid.UUID | None]) -> uuid.UUID | None:
    if mid is None:
        return None
    if mid not in writer:
        row = conn.execute(q("memories_created"), {"org": org, "ids": [mid]}).fetchone()
        writer[mid] = row["write_id"] if row else None
    return writer[mid] or mid


def _replace(conn: Conn, write: IncomingWrite, vec: np.ndarray, decision: Decision,
             cands: Sequence[Candidate], key_rows: Sequence[dict[str, Any]], now: datetime, r: dict[str, Any],
             replay_id: uuid.UUID, writer: dict[uuid.UUID, uuid.UUID | None]) -> ReplayChange | None:
    """Place one write again. Returns None when its placement is unchanged (its node is kept)."""
    org = write.org
    old_target_w = r["old_target_write"] or r["old_target"]
    new_target_w = _target_writer(conn, org, decision.target_id, writer)
    same_decision = decision.kind == r["old_kind"] and new_target_w == old_target_w
    old_memory = r["memory_id"] if r["status"] == "placed" else None

    if decision.kind == "duplicate":
        if same_decision and r["status"] == "duplicate" and decision.target_id == r["memory_id"]:
            return None
    elif r["status"] == "placed":
        shape = _shape(conn, write, vec, decision, cands, key_rows, r["memory_id"])
        if shape is not None and shape["node"] == (r["node_parent"], r["node_root"], r["node_depth"],
                                                   r["node_subject"], r["node_relation"], r["node_value"],
                                                   r["node_placement"]):
            decision_id = replay_id
            if not same_decision:
                decision_id = uuid.uuid4()
                ledger.log_decision(conn, org, decision_id, action="replay", now=now, reason=decision.reason,
                                    decision=decision, write_id=write.id, memory_id=r["memory_id"],
                                    target_id=decision.target_id, replay_id=replay_id, details={
                                        "replaces": str(r["decision_id"]), "kept_node": True, **shape["details"]})
                conn.execute(q("settle_write"), {"org": org, "id": write.id, "status": "placed",
                                                 "memory_id": r["memory_id"], "decision_id": decision_id,
                                                 "now": now})
            _reinstate(conn, org, r["memory_id"], write, shape, decision_id, now)
            if same_decision:
                return None
            return _change(write, "decision", r, decision, old_memory, r["memory_id"], decision_id)

    placement = apply_decision(conn, write, vec, decision, cands, key_rows, now, replay_id=replay_id)
    ledger.set_details(conn, org, placement.decision_id, {
        "replaces": str(r["decision_id"]) if r["decision_id"] else None,
        "previous_memory": str(r["memory_id"])})
    return _change(write, "decision" if not same_decision else "moved", r, decision, old_memory,
                   placement.memory_id, placement.decision_id)


def _change(write: IncomingWrite, change: str, r: dict[str, Any], d: Decision, old_memory, new_memory,
            decision_id) -> ReplayChange:
    return ReplayChange(write_id=write.id, content=write.content, change=change, old_kind=r["old_kind"],
                        new_kind=d.kind, old_target=r["old_target"], new_target=d.target_id,
                        old_memory=old_memory if r["status"] == "placed" else r["memory_id"],
                        new_memory=new_memory, reason=d.reason, validator=d.validator, decision_id=decision_id)


def _shape(conn: Conn, write: IncomingWrite, vec: np.ndarray, d: Decision,
           cands: Sequence[Candidate], key_rows: Sequence[dict[str, Any]], node_id: uuid.UUID) -> dict | None:
    """Where `apply_decision` would put this write if its node were `node_id` (the same rules: plan_node)."""
    plan = plan_node(conn, write, vec, d, cands, key_rows, node_id)
    if plan is None:
        return None
    return {"node": (plan.parent_id, plan.root_id, plan.depth, plan.subject, plan.relation, plan.value, d.kind),
            "valid_to": plan.valid_to, "state": plan.state, "superseded_by": plan.superseded_by,
            "revisions": plan.revisions, "details": plan.details}


def _reinstate(conn: Conn, org: str, memory_id: uuid.UUID, write: IncomingWrite, shape: dict,
               decision_id: uuid.UUID, now: datetime) -> None:
    conn.execute(q("reinstate_version"), {
        "org": org, "memory_id": memory_id, "valid_from": write.valid_from, "valid_to": shape["valid_to"],
        "state": shape["state"], "superseded_by": shape["superseded_by"], "decision_id": decision_id, "now": now})
    write_revisions(conn, org, shape["revisions"], decision_id, now)


def _compact(conn: Conn, org: str, now: datetime) -> None:
    same = conn.execute(q("replay_unchanged_versions"), {"org": org, "now": now}).fetchall()
    if same:
        ids = [r["memory_id"] for r in same]
        conn.execute(q("replay_drop_versions"), {"org": org, "ids": ids, "now": now})
        conn.execute(q("replay_restore_versions"), {"org": org, "ids": ids,
                                                    "versions": [r["prev_version"] for r in same]})
    conn.execute(q("replay_drop_transient"), {"org": org, "now": now})
    conn.execute(q("replay_renumber"), {"org": org, "now": now})


def _diff(conn: Conn, org: str, now: datetime, report: ReplayReport) -> None:
    before: dict[Any, dict[str, Any]] = {}
    after: dict[Any, dict[str, Any]] = {}
    for row in conn.execute(q("replay_states"), {"org": org, "now": now}).fetchall():
        fact = row["write_id"] or row["id"]
        if row["before_state"] is not None:
            before[fact] = row
        if row["after_state"] is not None:
            after[fact] = row
    for fact in sorted(set(before) | set(after), key=str):
        b, a = before.get(fact), after.get(fact)
        ref = a or b
        assert ref is not None  # the fact is in before or after
        fc = FactChange(write_id=ref["write_id"], memory_id=ref["id"], content=ref["content"],
                        before=b["before_state"] if b else None, after=a["after_state"] if a else None,
                        before_valid_to=b["before_valid_to"] if b else None,
                        after_valid_to=a["after_valid_to"] if a else None,
                        superseded_by=a["after_superseded_by"] if a else None)
        if b and a:
            if fc.before == "live" and fc.after == "superseded":
                report.superseded.append(fc)
            elif fc.before == "superseded" and fc.after == "live":
                report.revived.append(fc)
        elif a:
            report.added.append(fc)
        elif b:
            report.removed.append(fc)
