"""Figures the benchmarks compute alike: one percentile for all of them (scale/ keeps numpy's
interpolated `_percentiles` for its own tables)."""

from __future__ import annotations

from typing import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank p-th percentile (p in 0..100) of `values`; NaN when there are none."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))]
