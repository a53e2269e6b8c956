"""The SQL files themselves, without a database: every named query is used, every surface file is one
definition of the object it is named after."""

from __future__ import annotations

import re
from pathlib import Path

from fabric.sql import queries, surface

ROOT = Path(__file__).resolve().parent.parent


def python_sources() -> str:
    return "\n".join(p.read_text() for folder in ("fabric", "workers") for p in (ROOT / folder).rglob("*.py"))


def test_every_named_query_is_used_by_name():
    code = python_sources()
    unused = [name for name in queries() if not re.search(rf"""["']{name}["']""", code)]
    assert unused == []


def test_each_surface_file_defines_the_object_it_is_named_after():
    names = surface.names()
    assert {"holds", "walk", "belief_state", "current_value", "history", "live_memories"} <= set(names)
    for name in names:
        text = surface.definition(name)
        created = re.findall(r"^CREATE OR REPLACE (?:VIEW|FUNCTION) fabric_api\.(\w+)", text, re.MULTILINE)
        assert created == [name], name
        assert not re.search(r"^\s*(DROP|ALTER|GRANT|COMMENT)\b", text, re.MULTILINE), name


def test_every_fragment_is_included_and_every_include_is_expanded():
    from fabric.sql import _sections

    named, frags = _sections()
    bodies = "\n".join(list(named.values()) + list(frags.values()))
    assert frags, "search.sql writes its shared pieces as fragments"
    assert [f for f in frags if "{{" + f + "}}" not in bodies] == []
    assert [n for n, text in queries().items() if "{{" in text] == []
