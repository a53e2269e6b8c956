"""Labelled sets the benchmarks read: one JSON record a line (tests/data/*.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from ..errors import ValidationError


def records(path: Path, name: str, what: str) -> Iterator[tuple[str, Any]]:
    """Each record of the set at `path`, with where it stands ("<name> line N") for the errors it may cause.
    `name` is also the command's option (--<name> PATH); `what` says what the file should hold."""
    if not path.is_file():
        raise ValidationError(name, f"no {what} at {path} (pass --{name} PATH)")
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name} line {n}"
        try:
            yield where, json.loads(line)
        except ValueError as exc:
            raise ValidationError(where, f"not JSON: {exc}") from None
