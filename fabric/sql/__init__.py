"""Every runtime query, in .sql files under `-- name: NAME` headers, loaded into one dict.

Keep SQL here, readable by an analyst; Python only binds named parameters.

A piece of SQL that several queries share (a predicate, a scan) is written once, under a
`-- fragment: NAME` header, and a query includes it as `{{NAME}}` (the text is pasted in as it is;
a fragment may include another). The statements the server receives are the same as if each query
spelled it out."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

_HEADER = re.compile(r"^--\s*(name|fragment):\s*([a-z_0-9]+)\s*$", re.MULTILINE)
_INCLUDE = re.compile(r"\{\{([a-z_0-9]+)\}\}")


def _sections() -> tuple[dict[str, str], dict[str, str]]:
    named: dict[str, str] = {}
    fragments: dict[str, str] = {}
    for path in sorted(Path(__file__).parent.glob("*.sql")):
        parts = _HEADER.split(path.read_text())
        for kind, name, body in zip(parts[1::3], parts[2::3], parts[3::3]):
            into = named if kind == "name" else fragments
            if name in named or name in fragments:
                raise RuntimeError(f"duplicate query name {name} in {path.name}")
            body = body.strip().rstrip(";")
            if kind == "fragment":   # its comment is for the reader of the file, not pasted everywhere
                body = re.sub(r"\A(?:--[^\n]*\n)+", "", body)
            into[name] = body
    return named, fragments


def _expand(text: str, fragments: dict[str, str], seen: tuple[str, ...] = ()) -> str:
    def paste(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in fragments:
            raise RuntimeError(f"unknown SQL fragment {{{{{name}}}}}")
        if name in seen:
            raise RuntimeError(f"SQL fragment {name} includes itself")
        return _expand(fragments[name], fragments, seen + (name,))

    return _INCLUDE.sub(paste, text)


@cache
def queries() -> dict[str, str]:
    named, fragments = _sections()
    return {name: _expand(body, fragments) for name, body in named.items()}


@cache
def fragments() -> dict[str, str]:
    """The shared pieces, expanded (for tests)."""
    _, frags = _sections()
    return {name: _expand(body, frags) for name, body in frags.items()}


def q(name: str) -> str:
    return queries()[name]
