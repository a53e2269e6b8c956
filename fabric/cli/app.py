"""The typer application and the helpers every command shares: connect, print, exit codes."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import uuid
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import typer
from rich.console import Console
from rich.table import Table

from ..errors import FabricError, NotFound, ValidationError
from ..types import parse_time  # noqa: F401  (the commands' time parser)

if TYPE_CHECKING:
    from rich.progress import Progress

app = typer.Typer(
    name="fabric",
    help="fabric: a bi-temporal tree memory store for AI agents on PostgreSQL + pgvector.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True, soft_wrap=True)  # an error stays one line, whatever the width

# Exit codes that mean something to scripts.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_TIMEOUT = 0, 1, 2, 3, 4

JsonOpt = typer.Option(False, "--json", help="Print JSON instead of a table.")
OrgOpt = typer.Option("default", "--org", "-o", help="Tenant (org).")


@contextmanager
def connected(**settings: Any) -> Iterator[Any]:
    """Open a Fabric for one command, turning fabric's errors into messages and exit codes."""
    from ..api import Fabric

    with handle_errors():
        with Fabric.connect(**settings) as fab:
            yield fab


@contextmanager
def handle_errors() -> Iterator[None]:
    from ..errors import PlacementTimeout

    try:
        yield
    except FabricError as exc:
        if isinstance(exc, ValidationError):  # its text starts with the field, already in the label
            label, text, code = f"invalid {exc.field}", str(exc).split(": ", 1)[-1], EXIT_USAGE
        elif isinstance(exc, NotFound):
            label, text, code = "not found", str(exc), EXIT_NOT_FOUND
        elif isinstance(exc, PlacementTimeout):
            label, text, code = "timeout", str(exc), EXIT_TIMEOUT
        else:
            label, text, code = "error", str(exc), EXIT_ERROR
        err_console.print(f"[red]{label}:[/] {text}")
        raise typer.Exit(code) from None


_SHORT_ID = re.compile(r"[0-9a-f]{4,31}")
_IDS_FROM = {"memory": "memory_ids_from", "decision": "decision_ids_from"}  # the named queries


def full_id(fab: Any, what: str, text: str, *, org: str | None, field: str) -> str:
    """The id that a short form (the first characters, as the tables print them) stands for in `org`
    (None: any org, for decisions); a whole id, or text that is no id, is returned as it is (the call
    checks it)."""
    from ..sql import q

    hexed = text.strip().lower().replace("-", "")
    if not _SHORT_ID.fullmatch(hexed):
        return text
    lo, hi = (str(uuid.UUID(hexed.ljust(32, pad))) for pad in "0f")
    with fab._conn(org) as conn:
        rows = conn.execute(q(_IDS_FROM[what]), {"org": org, "lo": lo, "hi": hi}).fetchall()
    if not rows:
        raise NotFound(what, text, org)
    if len(rows) > 1:
        raise ValidationError(field, f"{text!r} starts more than one {what} id; give more of it")
    return str(rows[0]["id"])


def to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(obj.to_dict() if hasattr(obj, "to_dict") else dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {k: to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, (uuid.UUID,)):
        return str(obj)
    if isinstance(obj, datetime):
        return obj.isoformat()
    return obj


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2, default=str) + "\n")


def progress_bars(description: str = "{task.description}", **options: Any) -> Progress:
    """Bars with a count and the elapsed time. rich.progress loads here, not when the CLI starts."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn(description), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), **options)


def fmt_time(dt: datetime | None) -> str:
    return "∞" if dt is None else dt.isoformat(timespec="seconds")


def titled_table(title: str, columns: Sequence[str]) -> Table:
    """An empty table with these column headers, for a command's rows."""
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    return table


def memory_table(memories: Sequence[Any], title: str | None = None, *, score: bool = False) -> Table:
    table = Table(title=title, show_lines=False)
    table.add_column("id", style="dim", no_wrap=True)
    if score:
        table.add_column("score", justify="right")
    table.add_column("content")
    table.add_column("key")
    table.add_column("valid", no_wrap=True)
    table.add_column("recorded", no_wrap=True)
    table.add_column("state")
    for m in memories:
        key = f"{m.subject}.{m.relation}={m.value}" if m.subject else ""
        state = m.state + (f" by {str(m.superseded_by)[:8]}" if m.superseded_by else "")
        if getattr(m, "conflict_with", None):  # search's safety net: a later value of the same fact
            state += f", conflicts with {str(m.conflict_with)[:8]}"
        row = [str(m.id)[:8]]
        if score:
            row.append(f"{m.score:.3f}" if m.score is not None else "")
        row += [m.content, key, f"[{fmt_time(m.valid_from)}, {fmt_time(m.valid_to)})",
                fmt_time(m.recorded_at), state]
        table.add_row(*row)
    return table
