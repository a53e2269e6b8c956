"""Place writes: embed, gather candidates, decide (outside any lock), apply in one transaction.

Concurrency: deciding may take an LLM call, so it runs unlocked; applying takes the org's
placement lock, re-reads the candidates and re-decides if they changed meanwhile (optimistic
concurrency). Idempotency: the write row is locked and must still be pending, so a job that
runs twice places once."""

from __future__ import annotations

import logging
import math
import time
import uuid
from dataclasses import dataclass, fields, replace
from datetime import timedelta
from typing import Any, Sequence

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from .. import metrics
from ..db import Conn, is_connection_loss, one
from ..errors import FabricError
from ..placement.rules import text_key
from ..placement.intervals import Revision
from ..placement.tree import NodePlan, chain_lookup, chain_of, plan
from ..placement.validator import Candidate, Decision, IncomingWrite, Validator, check_decision, pregate
from ..read.indexes import org_index_name
from ..read.search import (CURRENT_INDEX, CURRENT_OVERFETCH, ITERATIVE_SCAN_SINCE, VECTOR_SQL, pgvector_version,
                           search_params, session_settings)
from ..sql import q
from ..types import Placement, utcnow
from . import ledger

log = logging.getLogger(__name__)

MAX_RACE_RETRIES = 20


@dataclass
class PlaceStats:
    placed: int = 0
    duplicates: int = 0
    parked: int = 0
    skipped: int = 0
    validator_calls: int = 0
    raced: int = 0


def load_pending(conn: Conn, org: str, ids: Sequence[uuid.UUID]
                 ) -> tuple[list[IncomingWrite], dict[uuid.UUID, str]]:
    """The pending writes among `ids`, oldest first, and those that cannot be read back (id -> why).

    A row Python cannot represent (a time whose UTC value is outside years 1-9999, accepted before
    the gate refused it) must not hold up its job-mates: the batch is then read row by row."""
    try:
        rows = conn.execute(q("load_pending"), {"org": org, "ids": list(ids)}).fetchall()
        unreadable: dict[uuid.UUID, str] = {}
    except psycopg.DataError:
        conn.rollback()
        rows, unreadable = [], {}
        for write_id in ids:
            try:
                rows += conn.execute(q("load_pending"), {"org": org, "ids": [write_id]}).fetchall()
            except psycopg.DataError as exc:
                conn.rollback()
                unreadable[write_id] = f"cannot be read back: {exc}"
    conn.commit()
    return [IncomingWrite(**{**r, "metadata": r["metadata"] or {}}) for r in rows], unreadable


@dataclass(frozen=True)
class Gathered:
    """What one write is decided on: its nearest live memories (`near`, best first; its first k are the
    candidates) and every memory believed under its key. `bound`: no live memory missing from `near` is
    more similar than this (-inf: `near` holds every live memory of the org)."""

    near: list[Candidate]
    key_rows: list[dict[str, Any]]
    k: int
    bound: float

    @property
    def cands(self) -> list[Candidate]:
        return with_key_members({c.id: c for c in self.near[:self.k]}, self.key_rows)[0]


# Neighbours gathered beyond k: a job-mate that supersedes one of a write's k nearest then leaves the next
# one known, so the write need not be asked again (measured: ~40% of writes were, at 16 per chunk).
SPARE_NEIGHBOURS = 4


def write_key(write: IncomingWrite) -> tuple[str | None, str | None]:
    """The (subject, relation) a write is about: its key, or for a text-only write the key its sentence
    states (so a version worded far from the old one is found beyond the k nearest)."""
    return (write.subject, write.relation) if write.keyed else text_key(write.content)


def gather_batch(conn: Conn, writes: Sequence[IncomingWrite], embeddings: np.ndarray, *,
                 k: int, ef_search: int, settings: bool = True) -> list[Gathered]:
    """For each write (all of one org): the k nearest live memories in its org, plus every memory believed
    under its key (`write_key`). Two statements for the whole batch (`nearest_live_batch`,
    `key_members_batch`), sent in one round trip; a write whose index scan came up short is asked again
    with the read path's `search_vector` (its exact scan). `settings=False`: the transaction's search
    settings were made by an earlier gather_batch (they last until it ends)."""
    org = writes[0].org
    assert all(w.org == org for w in writes), "a batch is one org's"
    keys = [write_key(w) for w in writes]
    keyed = [i for i, (subject, _) in enumerate(keys) if subject]
    vectors = list(embeddings)
    want = k + SPARE_NEIGHBOURS
    current = session_settings(ef_search=max(ef_search, want), index=CURRENT_INDEX,
                               org_index="fabric." + org_index_name("current_embeddings", org),
                               iterative=pgvector_version(conn) >= ITERATIVE_SCAN_SINCE)
    with conn.pipeline():
        for stmt, args in current if settings else ():
            conn.execute(stmt, args)
        near_cur = conn.execute(q("nearest_live_batch"), {"org": org, "k": want, "vectors": vectors,
                                                           "scan_limit": CURRENT_OVERFETCH * want,
                                                           "subject_prefix": None})
        available_cur = conn.execute(q("live_available"), {"org": org, "k": want})
        key_cur = conn.execute(q("key_members_batch"), {
            "org": org, "subjects": [keys[i][0] for i in keyed], "relations": [keys[i][1] for i in keyed],
            "vectors": [vectors[i] for i in keyed]}) if keyed else None
    near: list[list[Candidate]] = [[] for _ in writes]
    for r in near_cur.fetchall():
        near[r["i"] - 1].append(candidate_from_row(r, float(r["score"]), False))
    available = one(available_cur)["n"]
    key_rows: list[list[dict[str, Any]]] = [[] for _ in writes]
    for r in key_cur.fetchall() if key_cur else []:
        key_rows[keyed[r["i"] - 1]].append(r)
    short = [i for i, n in enumerate(near) if len(n) < min(want, available)]
    if short:
        exact = _near_one_by_one(conn, [writes[i] for i in short], embeddings[short], k=want, ef_search=ef_search)
        for i, rows in zip(short, exact):
            near[i] = rows
        with conn.pipeline():  # the exact scan set its own: restore these for the transaction's next gathers
            for stmt, args in current:
                conn.execute(stmt, args)
    return [Gathered(n, rows, k, n[-1].similarity if len(n) >= want else -math.inf) for n, rows in zip(near, key_rows)]


def _near_one_by_one(conn: Conn, writes: Sequence[IncomingWrite], embeddings: np.ndarray, *,
                     k: int, ef_search: int) -> list[list[Candidate]]:
    """The k nearest live memories of each write by the read path's own statement (exact fallback included)."""
    now = utcnow()
    with conn.pipeline():
        for stmt, args in session_settings(ef_search=max(ef_search, k)):
            conn.execute(stmt, args)
        cursors = [conn.execute(VECTOR_SQL, search_params(
            org=write.org, text="", vector=vec, mode="vector", k=k, valid_at=now, known_at=now,
            include_superseded=True, live_only=True)) for write, vec in zip(writes, embeddings)]
    return [[candidate_from_row(r, float(r["score"]), False) for r in cur.fetchall()] for cur in cursors]


def gather_candidates(conn: Conn, write: IncomingWrite, embedding: np.ndarray, *,
                      k: int, ef_search: int) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """The k nearest live memories in the org, plus every memory believed under the write's key."""
    g = gather_batch(conn, [write], embedding[None, :], k=k, ef_search=ef_search)[0]
    return g.cands, g.key_rows


def with_key_members(cands: dict[uuid.UUID, Candidate], key_rows: list[dict[str, Any]]
                     ) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """Add the live memories under the write's key to its neighbours; best first."""
    for r in key_rows:
        if r["state"] == "live":
            cands[r["id"]] = candidate_from_row(r, float(r["similarity"]), True)
    return sorted(cands.values(), key=lambda c: -c.similarity), key_rows


def candidate_from_row(r: dict[str, Any], similarity: float, key_match: bool) -> Candidate:
    return Candidate(id=r["id"], content=r["content"], similarity=similarity, valid_from=r["valid_from"],
                     valid_to=r["valid_to"], parent_id=r["parent_id"], root_id=r["root_id"], depth=r["depth"],
                     version=r["version"], subject=r["subject"], relation=r["relation"], value=r["value"],
                     key_match=key_match, kind=r.get("kind"))


def _fingerprint(cands: Sequence[Candidate]) -> frozenset[tuple[uuid.UUID, int]]:
    return frozenset((c.id, c.version) for c in cands)


def decide(write: IncomingWrite, cands: Sequence[Candidate], validator: Validator, *,
           near_similarity: float) -> Decision:
    # A validator that can look again at a new branch (the rules' learned second opinion) does so after the
    # pre-gate too: "nothing near" by similarity is often a restatement in other words.
    reconsider = getattr(validator, "reconsider", None)
    gated = pregate(write, cands, near_similarity=near_similarity)
    if gated is not None:
        if reconsider is not None:
            gated = check_decision(reconsider(write, gated, cands), cands)
        return keep_apart(write, gated, cands)
    started = time.perf_counter()
    decision = validator.decide(write, cands)
    if reconsider is not None:
        decision = reconsider(write, decision, cands)
    if decision.latency_ms is None:
        decision = decision.with_cost(latency_ms=(time.perf_counter() - started) * 1000)
    decision = keep_apart(write, check_decision(decision, cands), cands)
    metrics.decided(decision)
    return decision


def keep_apart(write: IncomingWrite, decision: Decision, cands: Sequence[Candidate]) -> Decision:
    """Whatever a validator said, some writes start a branch of their own (see the two checks below)."""
    if decision.kind == "new_branch":
        return decision
    target = next((c for c in cands if c.id == decision.target_id), None)
    if target is None:
        return decision
    return keep_episodes_apart(write, keep_keys_apart(write, decision, target), target)


def keep_episodes_apart(write: IncomingWrite, decision: Decision, target: Candidate) -> Decision:
    """An episodic memory decays out of retrieval after its TTL, a standing fact does not: a write of
    one is never folded into (nor made to supersede) a memory of the other, however alike their texts
    ("the user asked to keep this call short" / "the user wants every call kept short")."""
    if decision.kind == "new_branch" or (write.kind == "episodic") == (target.kind == "episodic"):
        return decision
    return replace(decision, kind="new_branch", target_id=None,
                   reason=f"{decision.reason}; but one of the two is episodic and the other is not: kept apart")


def keep_keys_apart(write: IncomingWrite, decision: Decision, target: Candidate) -> Decision:
    """A keyed write states another fact than a memory under another key, however alike their texts
    (a LangGraph store writes the same text under many keys): it is neither that memory's duplicate
    nor its correction, whichever validator said so. It starts a branch of its own."""
    if not write.keyed or decision.kind not in ("duplicate", "contradiction_fork"):
        return decision
    if target.subject is None or target.key_match:
        return decision
    return replace(decision, kind="new_branch", target_id=None,
                   reason=f"{decision.reason}; but that memory is under another key "
                          f"({target.subject}, {target.relation}): another fact")


def place_one(conn: Conn, write: IncomingWrite, embedding: np.ndarray, validator: Validator, *,
              k: int, near_similarity: float, ef_search: int, stats: PlaceStats,
              replay_id: uuid.UUID | None = None) -> Placement | None:
    """Decide and apply one write. Returns None if another runner already settled it."""
    for _ in range(MAX_RACE_RETRIES):
        cands, _ = gather_candidates(conn, write, embedding, k=k, ef_search=ef_search)
        conn.commit()
        decision = decide(write, cands, validator, near_similarity=near_similarity)
        if decision.called:
            stats.validator_calls += 1
        with conn.transaction():
            status = conn.execute(q("lock_write"), {"org": write.org, "id": write.id}).fetchone()
            if status is None or status["status"] != "pending":
                stats.skipped += 1
                return None
            conn.execute(q("lock_org"), {"org": write.org})
            fresh, key_rows = gather_candidates(conn, write, embedding, k=k, ef_search=ef_search)
            if _fingerprint(fresh) != _fingerprint(cands):
                stats.raced += 1
                continue  # someone placed nearby meanwhile: decide again on what is there now
            now = one(conn.execute(q("clock")))["now"]
            placement = apply_decision(conn, write, embedding, decision, fresh, key_rows, now, replay_id=replay_id)
        if placement.decision == "duplicate":
            stats.duplicates += 1
        else:
            stats.placed += 1
        return placement
    # Not the validator's fault: let RQ's Retry run the job again later rather than park the write.
    raise FabricError(f"write {write.id}: candidates kept changing over {MAX_RACE_RETRIES} attempts")


@dataclass(frozen=True)
class Placed:
    """What a job-mate placed earlier in the transaction changed: its new node (None for a node stored as
    history), that node as its key's members read it (`row`), and the memories it revised."""

    vector: np.ndarray
    node: Candidate | None
    key: tuple[str | None, str | None]
    row: dict[str, Any]
    revisions: dict[uuid.UUID, Revision]


def catch_up(write: IncomingWrite, vector: np.ndarray, g: Gathered, placed: Sequence[Placed]) -> Gathered | None:
    """`g` brought up to date with the job-mates placed since it was read, as the database would now
    answer: a new node near enough joins `near`, one under the write's key joins its key's members, a
    superseded memory leaves `near` and its key members show its new version. None when only the
    database can tell: superseded neighbours left fewer than k known."""
    key = write_key(write)
    for p in placed:  # in the order they were placed: a later one may revise an earlier one's node
        near, key_rows = g.near, g.key_rows
        if p.revisions:
            near = [c for c in near if c.id not in p.revisions]
            if len(near) < g.k and g.bound > -math.inf:
                return None
            key_rows = [_revised(r, p.revisions[r["id"]]) if r["id"] in p.revisions else r for r in key_rows]
        similarity = float(vector @ p.vector)
        if p.node is not None and similarity >= g.bound:
            near = sorted([*near, replace(p.node, similarity=similarity)], key=lambda c: -c.similarity)
        if None not in p.key and p.key == key:  # key_members_batch matches both, NULL matching nothing
            key_rows = [*key_rows, {**p.row, "similarity": similarity}]
        g = Gathered(near, key_rows, g.k, g.bound)
    return g


def _revised(row: dict[str, Any], rev: Revision) -> dict[str, Any]:
    """A key member's row after `revise_version` (its next version, superseded)."""
    return {**row, "valid_to": rev.valid_to, "state": "superseded", "version": row["version"] + 1}


def place_locked(conn: Conn, writes: Sequence[IncomingWrite], embeddings: np.ndarray,
                 validator: Validator, *, k: int, near_similarity: float, ef_search: int,
                 stats: PlaceStats) -> dict[uuid.UUID, Exception]:
    """Place a job's writes (one org) under the org's lock, for a validator that decides in
    microseconds: per LOCKED_CHUNK writes one transaction, one lock and one candidate round trip, each
    write then decided on what is there (re-read only when a job-mate placed before it changed that), in
    a savepoint of its own. Returns the writes that failed, with why (their savepoints rolled back)."""
    failed: dict[uuid.UUID, Exception] = {}
    for start in range(0, len(writes), LOCKED_CHUNK):
        failed.update(_place_chunk(conn, writes[start:start + LOCKED_CHUNK], embeddings[start:start + LOCKED_CHUNK],
                                   validator, k=k, near_similarity=near_similarity, ef_search=ef_search,
                                   stats=stats))
    return failed


# Writes placed per transaction by place_locked: the org's lock is held this long, and progress is
# committed at this pace (a killed worker loses at most this much work).
LOCKED_CHUNK = 16


def _place_chunk(conn: Conn, writes: Sequence[IncomingWrite], embeddings: np.ndarray,
                 validator: Validator, *, k: int, near_similarity: float, ef_search: int,
                 stats: PlaceStats) -> dict[uuid.UUID, Exception]:
    """One chunk in one transaction, pipelined (`_place_chunk_pipelined`); if anything in it fails, the
    chunk is undone and placed again with a savepoint per write (`_place_chunk_savepoints`), so that
    one failing write does not undo its job-mates."""
    tuning: dict[str, Any] = dict(k=k, near_similarity=near_similarity, ef_search=ef_search)
    chunk = PlaceStats()
    done: list[tuple[str, str | None, float]] = []
    try:
        _place_chunk_pipelined(conn, writes, embeddings, validator, stats=chunk, done=done, **tuning)
    except Exception as exc:
        if is_connection_loss(exc):
            raise
        log.info("chunk failed; placing its writes one savepoint each",
                 extra={"action": "chunk_fallback", "org": writes[0].org, "error": f"{type(exc).__name__}: {exc}"})
        return _place_chunk_savepoints(conn, writes, embeddings, validator, stats=stats, **tuning)
    for kind, validator_name, seconds in done:
        metrics.placement_done(kind, validator_name, seconds)
    for f in fields(PlaceStats):
        setattr(stats, f.name, getattr(stats, f.name) + getattr(chunk, f.name))
    return {}


def _place_chunk_pipelined(conn: Conn, writes: Sequence[IncomingWrite], embeddings: np.ndarray,
                           validator: Validator, *, k: int, near_similarity: float, ef_search: int,
                           stats: PlaceStats, done: list[tuple[str, str | None, float]]) -> None:
    """The org's lock, the chunk's writes claimed and their candidates read in one round trip; then each
    write decided and its apply statements queued without waiting for the server (the pipeline syncs
    once, at the end, unless a write must read the database again). The i-th write's transaction time
    is the clock read under the lock plus i microseconds: the writes of a chunk keep their order."""
    org = writes[0].org
    placed: list[Placed] = []
    with conn.transaction():
        with conn.pipeline():
            conn.execute(q("lock_org"), {"org": org})
            claims = conn.execute(q("lock_writes"), {"org": org, "ids": [w.id for w in writes]})
            clock = conn.execute(q("clock"))
            gathered = gather_batch(conn, writes, embeddings, k=k, ef_search=ef_search)
        status = {r["id"]: r["status"] for r in claims.fetchall()}
        now = one(clock)["now"]
        with conn.pipeline():
            for i, (write, vec, g) in enumerate(zip(writes, embeddings, gathered)):
                if status.get(write.id) != "pending":
                    stats.skipped += 1
                    continue
                started = time.perf_counter()
                g = catch_up(write, vec, g, placed) or gather_batch(conn, [write], vec[None, :], k=k,
                                                                      ef_search=ef_search, settings=False)[0]
                cands = g.cands
                decision = decide(write, cands, validator, near_similarity=near_similarity)
                stats.validator_calls += int(decision.called)
                placement, plan = apply_planned(conn, write, vec, decision, cands, g.key_rows,
                                                now + timedelta(microseconds=i))
                done.append((decision.kind, decision.validator, time.perf_counter() - started))
                _count_placed(write, vec, placement, plan, stats, placed)


def _place_chunk_savepoints(conn: Conn, writes: Sequence[IncomingWrite], embeddings: np.ndarray,
                            validator: Validator, *, k: int, near_similarity: float, ef_search: int,
                            stats: PlaceStats) -> dict[uuid.UUID, Exception]:
    failed: dict[uuid.UUID, Exception] = {}
    placed: list[Placed] = []
    with conn.transaction():
        conn.execute(q("lock_org"), {"org": writes[0].org})
        gathered = gather_batch(conn, writes, embeddings, k=k, ef_search=ef_search)
        for write, vec, g in zip(writes, embeddings, gathered):
            started = time.perf_counter()
            try:
                # A savepoint (one failing write does not undo its job-mates), its statements pipelined: the
                # apply's five or so statements cost one round trip, not one each.
                with conn.pipeline(), conn.transaction():
                    row = conn.execute(q("lock_write"), {"org": write.org, "id": write.id}).fetchone()
                    if row is None or row["status"] != "pending":
                        stats.skipped += 1
                        continue
                    g = catch_up(write, vec, g, placed) or gather_batch(conn, [write], vec[None, :], k=k,
                                                                          ef_search=ef_search, settings=False)[0]
                    cands = g.cands
                    decision = decide(write, cands, validator, near_similarity=near_similarity)
                    stats.validator_calls += int(decision.called)
                    placement, plan = apply_planned(conn, write, vec, decision, cands, g.key_rows, row["now"])
            except Exception as exc:
                if is_connection_loss(exc):
                    raise
                failed[write.id] = exc
                continue
            metrics.placement_done(decision.kind, decision.validator, time.perf_counter() - started)
            _count_placed(write, vec, placement, plan, stats, placed)
    return failed


def _count_placed(write: IncomingWrite, vec: np.ndarray, placement: Placement, plan: NodePlan | None,
                  stats: PlaceStats, placed: list[Placed]) -> None:
    """Count a settled write; a new node is remembered for its job-mates' `catch_up`."""
    if plan is None:
        stats.duplicates += 1
        return
    stats.placed += 1
    row = {"id": placement.memory_id, "content": write.content, "parent_id": plan.parent_id,
           "root_id": plan.root_id, "depth": plan.depth, "subject": plan.subject, "relation": plan.relation,
           "value": plan.value, "kind": write.kind, "valid_from": write.valid_from, "valid_to": plan.valid_to,
           "state": plan.state, "version": 1}
    node = candidate_from_row(row, 1.0, False) if plan.state == "live" else None
    placed.append(Placed(vec, node, (plan.subject, plan.relation), row, {r.memory_id: r for r in plan.revisions}))


def plan_node(conn: Conn, write: IncomingWrite, embedding: np.ndarray, decision: Decision,
              cands: Sequence[Candidate], key_rows: Sequence[dict[str, Any]], node_id: uuid.UUID) -> NodePlan | None:
    """Fetch what the tree rule needs, then apply it (`placement.tree.plan`; apply and replay both use this).
    None for a duplicate, or when the decision's target is not among the candidates."""
    lookup = chain_lookup(write, decision, cands, key_rows)
    chain_rows = key_rows
    if lookup is not None and lookup.by_key:
        chain_rows = conn.execute(q("key_members"), {
            "org": write.org, "subject": lookup.subject, "relation": lookup.relation, "q": embedding}).fetchall()
    elif lookup is not None:
        chain_rows = conn.execute(q("chain_members"), {"org": write.org, "id": lookup.target_id}).fetchall()
    return plan(write, decision, cands, chain_of(chain_rows), node_id)


def write_revisions(conn: Conn, org: str, revisions: Sequence[Revision], decision_id: uuid.UUID,
                    now) -> None:
    for rev in revisions:
        conn.execute(q("revise_version"), {
            "org": org, "memory_id": rev.memory_id, "valid_to": rev.valid_to, "state": "superseded",
            "superseded_by": rev.superseded_by, "decision_id": decision_id, "now": now})


def apply_decision(conn: Conn, write: IncomingWrite, embedding: np.ndarray, decision: Decision,
                   cands: Sequence[Candidate], key_rows: Sequence[dict[str, Any]], now, *,
                   replay_id: uuid.UUID | None = None) -> Placement:
    """Write the decision's consequences. Runs inside the caller's transaction."""
    return apply_planned(conn, write, embedding, decision, cands, key_rows, now, replay_id=replay_id)[0]


def apply_planned(conn: Conn, write: IncomingWrite, embedding: np.ndarray, decision: Decision,
                  cands: Sequence[Candidate], key_rows: Sequence[dict[str, Any]], now, *,
                  replay_id: uuid.UUID | None = None) -> tuple[Placement, NodePlan | None]:
    """`apply_decision`, also returning the node's plan (None for a duplicate)."""
    org = write.org
    decision_id = uuid.uuid4()
    target_id = decision.target_id if decision.kind != "new_branch" else None

    if decision.kind == "duplicate":
        assert target_id is not None and any(c.id == target_id for c in cands)
        _log_decision(conn, org, decision_id, decision, write.id, target_id, target_id, now, replay_id, {})
        conn.execute(q("settle_write"), {"org": org, "id": write.id, "status": "duplicate",
                                         "memory_id": target_id, "decision_id": decision_id, "now": now})
        return _placement(write, decision, target_id, target_id, decision_id, False), None

    memory_id = uuid.uuid4()
    plan = plan_node(conn, write, embedding, decision, cands, key_rows, memory_id)
    assert plan is not None, "check_decision admits only targets among the candidates"
    _log_decision(conn, org, decision_id, decision, write.id, memory_id, target_id, now, replay_id, plan.details)
    conn.execute(q("insert_memory"), {
        "org": org, "id": memory_id, "write_id": write.id, "parent_id": plan.parent_id, "root_id": plan.root_id,
        "depth": plan.depth, "content": write.content, "subject": plan.subject, "relation": plan.relation,
        "value": plan.value, "source": write.source, "kind": write.kind, "durability": write.durability,
        "metadata": Jsonb(write.metadata or {}), "placement": decision.kind, "embedding": embedding, "now": now})
    conn.execute(q("insert_version"), {
        "org": org, "memory_id": memory_id, "valid_from": write.valid_from, "valid_to": plan.valid_to,
        "state": plan.state, "superseded_by": plan.superseded_by, "decision_id": decision_id, "now": now})
    write_revisions(conn, org, plan.revisions, decision_id, now)
    conn.execute(q("settle_write"), {"org": org, "id": write.id, "status": "placed", "memory_id": memory_id,
                                     "decision_id": decision_id, "now": now})
    return _placement(write, decision, memory_id, target_id, decision_id,
                      bool(plan.details.get("out_of_order"))), plan


def _log_decision(conn, org, decision_id, d: Decision, write_id, memory_id, target_id, now, replay_id,
                  details) -> None:
    ledger.log_decision(conn, org, decision_id, action="replay" if replay_id else "place", now=now,
                        reason=d.reason, decision=d, write_id=write_id, memory_id=memory_id, target_id=target_id,
                        replay_id=replay_id, details=details)


def _placement(write: IncomingWrite, d: Decision, memory_id, target_id, decision_id, out_of_order) -> Placement:
    return Placement(write_id=write.id, org=write.org, decision=d.kind, memory_id=memory_id, target_id=target_id,
                     decision_id=decision_id, reason=d.reason, confidence=d.confidence, validator=d.validator,
                     out_of_order=out_of_order)


def note_failure(conn: Conn, org: str, write_id: uuid.UUID, error: str, *, park: bool,
                 max_attempts: int) -> str | None:
    row = conn.execute(q("note_failure"), {"org": org, "id": write_id, "error": error[:2000], "park": park,
                                           "max_attempts": max_attempts}).fetchone()
    conn.commit()
    return row["status"] if row else None
