"""Every runtime query, in .sql files under `-- name: NAME` headers, loaded into one dict.

Keep SQL here, readable by an analyst; Python only binds named parameters."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

_HEADER = re.compile(r"^--\s*name:\s*([a-z_0-9]+)\s*$", re.MULTILINE)


@cache
def queries() -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(Path(__file__).parent.glob("*.sql")):
        text = path.read_text()
        parts = _HEADER.split(text)
        for name, body in zip(parts[1::2], parts[2::2]):
            if name in out:
                raise RuntimeError(f"duplicate query name {name} in {path.name}")
            out[name] = body.strip().rstrip(";")
    return out


def q(name: str) -> str:
    return queries()[name]
