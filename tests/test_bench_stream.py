"""`fabric bench stream` (issue 10): the hand-written stream loads and checks itself, and a run of its
first turns plus a known correction on the real services counts every turn once."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fabric.bench import stream as bs
from fabric.cli import app
from fabric.errors import ValidationError

pytestmark = pytest.mark.timeout(600)

# Two turns fabric must collapse: the second corrects the first, in one template.
CONTROL = [bs.Turn("control-1", "Ada Moreau works at Northwind."), bs.Turn("control-2", "Ada Moreau works at Contoso.")]


def test_the_stream_loads_with_unique_ids_and_texts():
    turns = bs.load_stream()
    assert len(turns) >= 120
    assert len({t.id for t in turns}) == len({t.text for t in turns}) == len(turns)


@pytest.mark.parametrize("lines, field", [
    ([{"id": "a", "text": "X lives in York."}, {"id": "a", "text": "Y lives in York."}], "stream.id"),
    ([{"id": "a", "text": "X lives in York."}, {"id": "b", "text": "X lives in York."}], "stream.text"),
    ([{"id": "a", "text": " "}], "stream line 1.text"),
    ([{"text": "X lives in York."}], "stream line 1.id"),
    ([["a", "X lives in York."]], "stream line 1"),
])
def test_a_bad_stream_is_refused_naming_the_field(tmp_path, lines, field):
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(ValidationError) as err:
        bs.load_stream(p)
    assert err.value.field == field


def test_cli_refuses_a_bad_stream_before_connecting(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a"}) + "\n")
    res = CliRunner().invoke(app, ["bench", "stream", "--stream", str(bad)])
    assert res.exit_code != 0 and "stream line 1.text" in res.output


def test_a_short_run_counts_every_turn_once(fab):
    turns = bs.load_stream()[:15] + CONTROL
    res = bs.run(fab, turns)
    assert res["turns"] == len(turns)
    assert sum(res["decisions"].values()) + res["parked"] == len(turns)
    assert res["collapsed"] == res["duplicates"] + res["superseded"] == len(res["collapsed_turns"])
    assert res["collapsed_share"] == pytest.approx(res["collapsed"] / len(turns))
    ids = {t.id for t in turns}
    assert all(c["id"] in ids and c["other_id"] in ids | {None} for c in res["collapsed_turns"])
    # The harness sees a collapse: the corrected control turn is superseded by its correction.
    assert {"id": "control-1", "how": "superseded by", "other_id": "control-2"}.items() <= \
        next(c for c in res["collapsed_turns"] if c["id"] == "control-1").items()
    text = bs.markdown(res, "fabric bench stream --limit 15")
    assert "| turns | collapsed as duplicate | superseded | parked |" in text
    assert "control-1 superseded by control-2" in text


def test_the_cli_runs_a_stream_and_writes_its_results(database_url, redis_url, tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    path = tmp_path / "control.jsonl"
    path.write_text("".join(json.dumps({"id": t.id, "text": t.text}) + "\n" for t in CONTROL))
    res = CliRunner().invoke(app, ["bench", "stream", "--stream", str(path), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "control-1 superseded by control-2" in res.output
    data = json.loads((tmp_path / "stream.json").read_text())
    assert data["turns"] == 2 and data["superseded"] == 1 and (tmp_path / "stream.md").is_file()
