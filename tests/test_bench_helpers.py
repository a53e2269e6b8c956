"""The helpers the benchmarks share (fabric/bench/measure.py, labelled.py): no database."""

from __future__ import annotations

import math

import pytest

from fabric.bench.labelled import records
from fabric.bench.measure import percentile
from fabric.errors import ValidationError


def test_percentile_is_nearest_rank_and_nan_when_empty():
    xs = [float(x) for x in (7, 1, 3, 9, 5)]
    assert (percentile(xs, 0), percentile(xs, 50), percentile(xs, 100)) == (1.0, 5.0, 9.0)
    assert percentile(xs, 99) == 9.0 and percentile([4.0], 95) == 4.0
    assert math.isnan(percentile([], 50))


def test_records_name_the_line_that_is_not_json(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": 1}\n\n{"id": 2}\n{oops\n')
    got = []
    with pytest.raises(ValidationError) as err:
        for where, rec in records(path, "pairs", "labelled set"):
            got.append((where, rec))
    assert got == [("pairs line 1", {"id": 1}), ("pairs line 3", {"id": 2})]
    assert err.value.field == "pairs line 4" and "not JSON" in str(err.value)


def test_records_say_which_option_names_a_missing_file(tmp_path):
    with pytest.raises(ValidationError) as err:
        list(records(tmp_path / "absent.jsonl", "chains", "chain set"))
    assert err.value.field == "chains" and "--chains PATH" in str(err.value)
