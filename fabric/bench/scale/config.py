"""Sizes, the benchmark's settings and the constants every phase shares."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np

from ...errors import ValidationError

log = logging.getLogger(__name__)


DIM = 384
K = 10
EF_SEARCH = 100
QUICK_SIZE = 5_000
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
US_PER_DAY = 86_400 * 1_000_000
NEVER = np.int64(2**62)  # "NULL" (open) end of an interval, in microseconds

LARGE_ORG = "scale-large"
MEDIUM_ORG_INDEX = 1  # scale-medium-0
BELIEF_ORG = "scale-belief-1000"
SUBTREE_SIZE = 1_000
BELIEF_SIZE = 1_000

EMBEDDINGS_NOTE = ("synthetic: seeded random unit vectors clustered around topic centres "
                   "(versions of a fact ~0.9 cosine apart, topic mates ~0.5, others ~0); "
                   "the ingest measures embed real text with the local MiniLM model")

Progress = Callable[[str], None]

# --------------------------------------------------------------------------------------------------
# sizes


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_sizes(text: str) -> list[int]:
    """'10k,100k,1m' -> [10000, 100000, 1000000] (sorted, unique)."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("sizes", "empty; give e.g. 10k,100k,1m")
    out = set()
    for part in text.split(","):
        m = _SIZE.match(part)
        if not m:
            raise ValidationError("sizes", f"{part.strip()!r} is not a size (e.g. 10k, 100k, 1m, 25000)")
        n = int(float(m.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()])
        if n < QUICK_SIZE:
            raise ValidationError("sizes", f"{part.strip()!r}: the smallest size is {QUICK_SIZE} "
                                           f"(the corpus holds a 1,000-memory org and a 1,000-node subtree)")
        if n > 5_000_000:
            raise ValidationError("sizes", f"{part.strip()!r}: more than 5m is not supported")
        out.add(n)
    return sorted(out)


def size_label(n: int) -> str:
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    if n % 1_000 == 0:
        return f"{n // 1_000}k"
    return str(n)


@dataclass
class ScaleConfig:
    sizes: list[int]
    out: Path = Path("bench-results")
    keep: bool = False
    seed: int = 7
    chroma: bool = True
    queries: int | None = None         # timed queries per search measure (default by size)
    budget_s: float | None = None      # time budget per measure (default by size)
    ingest_writes: int | None = None   # writes per placement run (default by size)
    quick: bool = False
    reuse: str | None = None           # a kept bench database's URL: its reads only (no load, no ingest)


def _defaults(cfg: ScaleConfig, n: int) -> tuple[int, float, int, int]:
    """(search queries, seconds per measure, placement writes, accepted writes) for a size."""
    if cfg.quick or n <= QUICK_SIZE:
        q, b, w, a = 40, 6.0, 120, 60
    else:
        q, b, w, a = 200, 40.0, 600, 300
    return (cfg.queries or q, cfg.budget_s or b, cfg.ingest_writes or w, a)
