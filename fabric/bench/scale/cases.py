"""The search cases the reads are timed on, with their exact answers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import DIM
from .corpus import Corpus

# --------------------------------------------------------------------------------------------------
# reads


@dataclass
class SearchCase:
    org: int
    vec: np.ndarray
    valid_us: int
    known_us: int
    text: str
    current: bool = False   # no valid_at / known_at asked: the library's current-state read


def _search_cases(c: Corpus, rng: np.random.Generator, org: int, mode: str, count: int) -> list[SearchCase]:
    now = c.now_us
    t0 = int(c.org_t0[org])
    cases: list[SearchCase] = []
    tries = 0
    while len(cases) < count and tries < count * 20:
        tries += 1
        t = int(t0 + (0.15 + 0.83 * rng.random()) * (now - t0))
        valid, known = {"now": (now, now), "valid_at": (t, now), "known_at": (now, t)}[mode]
        pool = c.qualifying(org, valid, known)
        if len(pool) == 0:
            continue
        seed = int(pool[rng.integers(len(pool))])
        v = c.vectors[seed] + rng.standard_normal(DIM).astype(np.float32) * (0.6 / DIM ** 0.5)
        cases.append(SearchCase(org, (v / np.linalg.norm(v)).astype(np.float32), valid, known, _question(c, seed),
                                current=mode == "now"))
    return cases


def _question(c: Corpus, i: int) -> str:
    """A short question about memory i, as an agent would ask it."""
    if c.subject[i]:
        return f"What is the {c.relation[i]} of {c.subject[i]}?"
    return "What about " + " ".join(c.content[i].split()[:6]) + "?"
