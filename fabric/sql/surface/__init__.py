"""The analyst surface (schema `fabric_api`, docs/sql.md): the current definition of each view and
function, one `CREATE OR REPLACE` statement per file, named after the object.

These files are the only copy of each body: migrations load them (`op.execute(surface.sql("walk"))`),
and a migration that changes an object edits its file and loads it again. The files are found with
importlib.resources, so an installed wheel migrates as the source tree does. docs/sql.md ("How the
surface is defined") says which revision loads which file; `tests/test_sql_surface.py` checks that the
migrated database matches the files."""

from __future__ import annotations

from importlib.resources import files


def names() -> list[str]:
    """Every object of the surface that has a file, sorted."""
    return sorted(p.name[:-4] for p in files(__name__).iterdir() if p.name.endswith(".sql"))


def definition(name: str) -> str:
    path = files(__name__).joinpath(f"{name}.sql")
    if not path.is_file():
        raise FileNotFoundError(f"no surface file {name}.sql in {__name__} (known: {', '.join(names())})")
    return path.read_text(encoding="utf-8")


def sql(*names: str) -> str:
    """The definitions of `names`, in that order (a later object may use an earlier one), as one script."""
    return "\n".join(definition(name) for name in names)
