"""The rule validator's phrase-vector cache (fabric/placement/align.py) is a sized LRU: a worker placing
for hours keeps at most `maxsize` phrases, evicts the least recently used, and an evicted row frees its
memory (it is a copy, not a view keeping its embedding batch alive). Issue 15."""

from __future__ import annotations

import numpy as np

from fabric.placement import align
from fabric.placement.align import PhraseVectors


def test_bounded_and_least_recently_used_goes_first() -> None:
    cache = PhraseVectors(3)
    batch = np.arange(12, dtype=np.float32).reshape(4, 3)
    rows = cache.put(["a", "b", "c"], batch[:3])
    assert set(rows) == {"a", "b", "c"} and len(cache) == 3
    cache.get("a")  # "a" used again: "b" is now the oldest
    cache.put(["d"], batch[3:])
    assert len(cache) == 3
    assert "b" not in cache and all(p in cache for p in "acd")
    np.testing.assert_array_equal(cache.get("d"), batch[3])


def test_rows_are_copies_of_their_batch() -> None:
    batch = np.ones((2, 4), dtype=np.float32)
    rows = PhraseVectors(8).put(["x", "y"], batch)
    assert rows["x"].base is None and not np.shares_memory(rows["x"], batch)


def test_process_cache_is_bounded() -> None:
    assert isinstance(align._vectors, PhraseVectors) and align._vectors.maxsize == 16384
