"""`fabric bench chains` (issue 10): the blind chain set loads and checks itself, and a run of three
chains (two of the set, one control in a single template) on the real services scores them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fabric.bench import chains as bc
from fabric.bench.validators import load_pairs
from fabric.cli import app
from fabric.errors import ValidationError

pytestmark = pytest.mark.timeout(600)

# A chain fabric must get right: both versions in one template (the README demo's shape).
CONTROL = {"id": "control-ada", "subject": "Ada Moreau", "relation": "employer",
           "question": "Which company does Ada Moreau work for?",
           "versions": [{"text": "Ada Moreau works at Northwind.", "valid_from": "2021-03-01", "value": "Northwind"},
                        {"text": "Ada Moreau works at Contoso.", "valid_from": "2024-06-01", "value": "Contoso"}],
           "current": "Contoso", "as_of": {"date": "2022-06-01", "value": "Northwind"},
           "distractors": ["Bruno Castell works at Fabrikam.", "Ada Moreau lives in Lyon."]}


def test_the_blind_sets_load_and_are_held_out():
    chains = bc.load_chains()
    assert len(chains) >= 40 and all(c.split == "holdout" for c in chains)
    assert len({c.relation for c in chains}) >= 20
    pairs = load_pairs(bc.DEFAULT_CHAINS.parent / "placement_pairs_v3.jsonl")
    assert len(pairs) >= 150 and all(p.id.startswith("v3-") for p in pairs)
    # Written blind; after the first measurement its odd-numbered half became a tune split and the
    # even-numbered half stays held out (docs/bench/chains.md).
    assert all(p.split == ("tune" if int(p.id.split("-")[1]) % 2 else "holdout") for p in pairs)
    assert {p.label for p in pairs} == {"duplicate", "child_update", "contradiction_fork", "new_branch"}


@pytest.mark.parametrize("change, field", [
    (lambda r: r["as_of"].update(value="Contoso"), "c.as_of.value"),        # not what the versions say
    (lambda r: r.update(current="Northwind"), "c.current"),
    (lambda r: r["versions"].reverse(), "c.versions"),                      # not oldest first
    (lambda r: r["versions"][1].update(valid_from="June 2024"), "c.versions[1].valid_from"),
    (lambda r: r["versions"][0].pop("value"), "c.versions[0].value"),
    (lambda r: r.update(versions=r["versions"][:1]), "c.versions"),
    (lambda r: r["distractors"].append("Ada Moreau works at Contoso."), "c.distractors"),
    (lambda r: r.update(id="a chain id with spaces"), "c.id"),
])
def test_a_bad_chain_is_refused_naming_the_field(change, field):
    rec = json.loads(json.dumps(CONTROL))
    change(rec)
    with pytest.raises(ValidationError) as err:
        bc.parse_chain(rec, "c")
    assert err.value.field == field


def test_write_orders():
    three = bc.parse_chain({**CONTROL, "versions": CONTROL["versions"] + [
        {"text": "Ada Moreau is employed by Initech.", "valid_from": "2025-01-01", "value": "Initech"}],
        "current": "Initech"}, "c")
    assert bc.write_order(three, "in_order") == [0, 1, 2]
    assert bc.write_order(three, "out_of_order") == [2, 0, 1]
    case = bc.to_case(three, "out_of_order")
    assert [case.facts[f].value for f in case.write_order() if case.facts[f].role == "version"] == \
        ["Initech", "Northwind", "Contoso"]


def test_cli_refuses_a_bad_set_before_connecting(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**CONTROL, "current": "Fabrikam"}) + "\n")
    res = CliRunner().invoke(app, ["bench", "chains", "--chains", str(bad)])
    assert res.exit_code != 0 and "chains line 1.current" in res.output


@pytest.fixture(scope="module")
def three_chains(fab):
    chains = bc.load_chains()[:2] + [bc.parse_chain(CONTROL, "control")]
    return chains, bc.run(fab, chains)


def test_every_question_is_scored_for_both_backends(three_chains):
    chains, res = three_chains
    qs = res["queries"]
    for backend, per_case in (("fabric-text", 4), ("pgvector", 2)):   # fabric also answers by key
        mine = [r for r in qs if r["backend"] == backend]
        assert len(mine) == len(chains) * len(bc.ORDERS) * per_case
        rows = [r for r in res["rows"] if r["backend"] == backend]
        assert sum(r["total"] for r in rows) == len(mine)
        assert sum(r["right"] for r in rows) == sum(r["correct"] for r in mine)
    fabric = res["by_backend"]["fabric-text"]
    assert fabric["keyed_chains"] <= len(chains) * len(bc.ORDERS)
    assert len(res["written"]) == len(chains) * len(bc.ORDERS)
    # a right top-1 answer is also in the top k
    assert all(r["in_top_k"] for r in qs if r["correct"] and not r["question"].startswith("key"))
    text = bc.markdown(res, "fabric bench chains")
    assert "stale returned as current" in text and "| out of order | as_of |" in text


def test_fabric_answers_the_control_chain_in_both_orders(three_chains):
    """The harness can see a right answer: the single-template chain is right on every question,
    by search and by the extracted key, whichever order the versions arrived in."""
    _, res = three_chains
    control = [r for r in res["queries"] if r["backend"] == "fabric-text" and r["case"].startswith("control-ada")]
    assert len(control) == 8
    wrong = [(r["case"], r["question"], r["got"]) for r in control if not r["correct"]]
    assert not wrong
    ends = [w for w in res["written"] if w["case"].startswith("control-ada")]
    assert [w["live_versions"] for w in ends] == [1, 1]      # the older version was superseded


def test_the_flat_baseline_ignores_time(three_chains):
    """pgvector answers the as-of question with the same memory as the current one (no time)."""
    _, res = three_chains
    flat = [r for r in res["queries"] if r["backend"] == "pgvector"]
    by_case: dict[str, set] = {}
    for r in flat:
        by_case.setdefault(r["case"], set()).add(r["top_fid"])
    assert len(by_case) == 6 and all(len(tops) == 1 for tops in by_case.values())
    stale = sum(bool(r["stale"]) for r in flat if r["asked"] == "now")
    assert res["by_backend"]["pgvector"]["stale_returned"] == stale
