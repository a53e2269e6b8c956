"""Placement fixtures: the real embedding model and the rule validator, and a helper that places one
sentence beside existing memories with real cosine similarities (no database)."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from fabric.config import Settings
from fabric.embed import make_embedder
from fabric.placement.rules import RuleValidator
from fabric.placement.validator import Candidate, IncomingWrite, pregate

T0 = datetime(2020, 1, 1, tzinfo=timezone.utc)
T1 = datetime(2022, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="session")
def embedder():
    return make_embedder(Settings())


@pytest.fixture(scope="session")
def rules() -> RuleValidator:
    s = Settings()
    return RuleValidator(near_similarity=s.near_similarity, duplicate_similarity=s.duplicate_similarity)


def decide(rules, embedder, existing: str | list[str], new: str, *, key=None, old_key=None, old_from=T0,
           new_from=T1, pregated: bool = False):
    """Place `new` beside `existing` memories, with real cosine similarities; with `pregated`, through the
    pre-gates first as the worker does. Returns the decision and its target's text."""
    olds = [existing] if isinstance(existing, str) else existing
    vecs = embedder.embed([new, *olds])
    cands = []
    for text, vec in zip(olds, vecs[1:]):
        cid = uuid.uuid4()
        s, r, v = old_key or (None, None, None)
        cands.append(Candidate(id=cid, content=text, similarity=float(vecs[0] @ vec), valid_from=old_from,
                               valid_to=None, parent_id=None, root_id=cid, depth=0, version=1, subject=s,
                               relation=r, value=v, key_match=bool(key and old_key and key[:2] == old_key[:2])))
    s, r, v = key or (None, None, None)
    write = IncomingWrite(id=uuid.uuid4(), org="t", content=new, valid_from=new_from, subject=s, relation=r, value=v)
    cands.sort(key=lambda c: -c.similarity)
    d = (pregated and pregate(write, cands, near_similarity=rules.near_similarity)) or rules.decide(write, cands)
    return d, {c.id: c.content for c in cands}.get(d.target_id)
