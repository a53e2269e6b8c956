"""The analyst surface (schema `fabric_api`, docs/sql.md): the current definition of each view and
function, one `CREATE OR REPLACE` statement per file, named after the object.

Migrations created these objects; a migration that changes one loads its file
(`op.execute(surface.definition("walk"))`) after editing it, so the file stays the one place to read
the current body. `tests/test_sql_surface.py` checks that the migrated database matches the files."""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).parent


def names() -> list[str]:
    """Every object of the surface that has a file, sorted."""
    return sorted(p.stem for p in FOLDER.glob("*.sql"))


def definition(name: str) -> str:
    return (FOLDER / f"{name}.sql").read_text()
