"""`fabric demo` prints what the README shows (the README is what a newcomer runs first)."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from fabric.demo import run_demo

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_demo_block() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("`fabric demo` tells a small story")
    body = text[text.index("```\n", start) + 4:]
    return body[:body.index("```")].splitlines()


def normalised(lines: list[str]) -> list[str]:
    """Lines without trailing blanks, the run's org name (its time) masked."""
    return [re.sub(r"demo-\d+", "demo-<time>", line.rstrip()) for line in lines]


def test_demo_prints_the_readme_story_with_the_tree_in_valid_time_order(fab):
    console = Console(record=True, width=100, color_system=None, force_terminal=False)
    result = run_demo(console, fab)
    printed = console.export_text().splitlines()

    assert [p.decision for p in result["placements"]] == [
        "new_branch", "child_update", "duplicate", "contradiction_fork", "contradiction_fork"]
    assert result["current"] == "Contoso"
    # The roots print in valid-time order (they were sorted by random ids before, so the README's
    # tree matched one run in six).
    tree = [line for line in printed if line.startswith("Ada Moreau works at")]
    assert [re.search(r"at (\w+)", line).group(1) for line in tree] == ["Fabrikam", "Northwind", "Contoso"]
    assert normalised(printed) == normalised(readme_demo_block())
