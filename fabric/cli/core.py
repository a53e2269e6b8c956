"""Everyday commands: migrate, worker, reconcile, write, search, walk, history, belief, current, demo."""

from __future__ import annotations

from typing import Optional

import typer

from .app import (
    EXIT_OK, EXIT_TIMEOUT, JsonOpt, OrgOpt, app, connected, console, err_console, full_id, handle_errors, memory_table,
    parse_time, print_json,
)

embedded_app = typer.Typer(help="The embedded PostgreSQL and Redis in FABRIC_DATA_DIR.", no_args_is_help=True)
app.add_typer(embedded_app, name="embedded")


@app.command()
def migrate(
    downgrade: Optional[str] = typer.Option(None, "--downgrade", help="Downgrade to this revision (e.g. base)."),
) -> None:
    """Upgrade the schema to head (or downgrade).

    Example: fabric migrate            |  fabric migrate --downgrade base
    """
    from .. import db, servers
    from ..config import Settings

    with handle_errors():
        s = Settings.from_env()
        url = s.database_url or servers.postgres_url(s.data_dir)
        db.migrate(url, revision=downgrade or "head", embedding_dim=s.embedding_dim, downgrade=bool(downgrade))
        console.print(f"schema at revision [bold]{db.schema_revision(url) or 'base'}[/]")


@app.command()
def worker(
    burst: bool = typer.Option(False, "--burst", help="Exit once the queue is empty."),
    name: Optional[str] = typer.Option(None, "--name", help="Worker name."),
    metrics_port: Optional[int] = typer.Option(None, "--metrics-port",
                                               help="Serve Prometheus metrics on this port (/metrics)."),
) -> None:
    """Run a placement worker on fabric's queue (several may run at once).

    Example: REDIS_URL=redis://localhost:6379/0 DATABASE_URL=postgresql://... fabric worker --metrics-port 9464
    """
    from workers.run import configure_logging, run

    from ..config import Settings

    configure_logging()  # FABRIC_LOG_LEVEL, as docker-compose.yml sets it (the command ignored it)
    with handle_errors():
        raise typer.Exit(run(Settings.from_env(metrics_port=metrics_port), burst=burst, name=name))


@app.command()
def reconcile(
    grace: float = typer.Option(0.0, "--grace", help="Leave writes younger than this many seconds alone."),
    as_json: bool = JsonOpt,
) -> None:
    """Queue again every pending write whose placement job was lost.

    Example: fabric reconcile
    """
    with connected(run_worker=False) as fab:
        n = fab.reconcile(grace=grace)
    print_json({"requeued": n}) if as_json else console.print(f"re-queued {n} pending write(s)")


@app.command()
def write(
    content: str = typer.Argument(..., help="The memory's text."),
    org: str = OrgOpt,
    subject: Optional[str] = typer.Option(None, help="Structured key: subject."),
    relation: Optional[str] = typer.Option(None, help="Structured key: relation."),
    value: Optional[str] = typer.Option(None, help="Structured key: value."),
    valid_from: Optional[str] = typer.Option(None, help="ISO time the fact became true (default: now)."),
    valid_to: Optional[str] = typer.Option(None, help="ISO time the fact stopped being true."),
    source: Optional[str] = typer.Option(None, help="Provenance: the system it came from."),
    kind: Optional[str] = typer.Option(None, help="Kind (e.g. fact, preference, episodic)."),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="Wait for placement."),
    timeout: float = typer.Option(30.0, help="Seconds to wait for placement."),
    as_json: bool = JsonOpt,
) -> None:
    """Write one memory (and wait for its placement).

    Example: fabric write "Alice works at Acme." --subject Alice --relation employer --value Acme
    """
    with connected() as fab:
        receipt = fab.write(content, org=org, subject=subject, relation=relation, value=value,
                            valid_from=parse_time("valid_from", valid_from),
                            valid_to=parse_time("valid_to", valid_to), source=source, kind=kind)
        # Not queued (Redis unreachable): no worker can place it until the reconciler queues it, so
        # waiting would only run out the timeout.
        placement = fab.wait(receipt, timeout=timeout) if wait and receipt.enqueued else None
    if as_json:
        print_json({"receipt": receipt, "placement": placement})
    if wait and not receipt.enqueued:
        err_console.print(f"[red]not queued:[/] write {receipt.id} is kept in Postgres, but Redis is unreachable; "
                          "a worker's reconciler queues it once Redis is back")
        raise typer.Exit(EXIT_TIMEOUT)
    if as_json:
        return
    if placement:
        console.print(f"{placement.decision} → memory {placement.memory_id}"
                      + (f" (target {placement.target_id})" if placement.target_id else "")
                      + f": {placement.reason}")
    else:
        console.print(f"accepted write {receipt.id}")


@app.command()
def search(
    query: str = typer.Argument(..., help="What to look for."),
    org: str = OrgOpt,
    k: int = typer.Option(10, "-k", help="How many results."),
    valid_at: Optional[str] = typer.Option(None, help="ISO time: what was true then."),
    known_at: Optional[str] = typer.Option(None, help="ISO time: as the store knew it then."),
    include_superseded: bool = typer.Option(False, "--include-superseded"),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid (default), vector or lexical."),
    context: int = typer.Option(0, "--context", help="With each hit, up to N live neighbours on its branch."),
    explain: bool = typer.Option(False, "--explain", help="Show each leg's rank (in --json)."),
    as_json: bool = JsonOpt,
) -> None:
    """Search memories (full text and meaning fused), with time filters.

    Example: fabric search "Where does Alice work?" --valid-at 2021-06-01T00:00:00Z --context 2
    """
    with connected(run_worker=False) as fab:
        found = fab.search(query, org=org, k=k, valid_at=parse_time("valid_at", valid_at),
                           known_at=parse_time("known_at", known_at), include_superseded=include_superseded,
                           mode=mode, context=context, explain=explain)
        if not found:
            fab.require_org(org)  # a mistyped org is an error, not "nothing found"
    print_json(found) if as_json else console.print(memory_table(found, f"search: {query}", score=True))


@app.command()
def current(
    subject: str = typer.Argument(...), relation: str = typer.Argument(...), org: str = OrgOpt,
    valid_at: Optional[str] = typer.Option(None), known_at: Optional[str] = typer.Option(None),
    as_json: bool = JsonOpt,
) -> None:
    """The value of SUBJECT RELATION (exact lookup, no embeddings). Exit code 3 when none.

    Example: fabric current Alice employer --valid-at 2021-01-01T00:00:00Z
    """
    with connected(run_worker=False) as fab:
        m = fab.current_value(subject, relation, org=org, valid_at=parse_time("valid_at", valid_at),
                              known_at=parse_time("known_at", known_at))
        if m is None:
            fab.require_org(org)
    if as_json:
        print_json(m)
    elif m is None:
        err_console.print(f"no value for ({subject}, {relation}) in org {org!r}")
    else:
        console.print(memory_table([m]))
    raise typer.Exit(EXIT_OK if m is not None else 3)


@app.command()
def walk(
    root: str = typer.Argument(..., help="Root memory id (or its first characters)."), org: str = OrgOpt,
    max_depth: Optional[int] = typer.Option(None), include_superseded: bool = typer.Option(False, "--include-superseded"),
    valid_at: Optional[str] = typer.Option(None), known_at: Optional[str] = typer.Option(None),
    as_json: bool = JsonOpt,
) -> None:
    """Walk a branch (through superseded nodes).

    Example: fabric walk 0b6f0d3e --include-superseded   (an id, or its first characters as tables print them)
    """
    with connected(run_worker=False) as fab:
        root = full_id(fab, "memory", root, org=org, field="root_id")
        found = fab.walk(root, org=org, max_depth=max_depth, include_superseded=include_superseded,
                         valid_at=parse_time("valid_at", valid_at), known_at=parse_time("known_at", known_at))
    print_json(found) if as_json else console.print(memory_table(found, f"branch {root}"))


@app.command()
def history(memory_id: str = typer.Argument(..., help="A memory id (or its first characters)."), org: str = OrgOpt, as_json: bool = JsonOpt) -> None:
    """The supersession chain through a memory, oldest first.

    Example: fabric history 0b6f0d3e   (an id, or its first characters as tables print them)
    """
    with connected(run_worker=False) as fab:
        memory_id = full_id(fab, "memory", memory_id, org=org, field="memory_id")
        found = fab.history(memory_id, org=org)
    print_json(found) if as_json else console.print(memory_table(found, f"history of {memory_id}"))


@app.command()
def belief(
    org: str = OrgOpt, valid_at: Optional[str] = typer.Option(None), known_at: Optional[str] = typer.Option(None),
    as_json: bool = JsonOpt,
) -> None:
    """Everything the store held as valid at --valid-at, as known at --known-at.

    Example: fabric belief --valid-at 2022-01-01T00:00:00Z --known-at 2026-11-01T00:00:00Z
    """
    with connected(run_worker=False) as fab:
        found = fab.belief_state(org=org, valid_at=parse_time("valid_at", valid_at),
                                 known_at=parse_time("known_at", known_at))
        if not found:
            fab.require_org(org)
    print_json(found) if as_json else console.print(memory_table(found, f"belief state of {org}"))


@app.command()
def demo() -> None:
    """A short story on the embedded default: a fact, a refinement, a duplicate, a contradiction,
    and a late-arriving older fact; then the tree, the current answer, an as-of answer, and what
    the store believed earlier.

    Example: fabric demo
    """
    from ..demo import run_demo

    with handle_errors():
        run_demo(console)


@embedded_app.command("status")
def embedded_status() -> None:
    """Show the data folder and whether its servers run.

    Example: FABRIC_DATA_DIR=/srv/fabric fabric embedded status
    """
    from ..config import Settings

    with handle_errors():
        s = Settings.from_env()
    pid = s.data_dir / "pg" / "postmaster.pid"
    console.print(f"data folder: {s.data_dir}")
    from ..servers import folder_major

    major = folder_major(s.data_dir / "pg")
    console.print(f"postgres: {'running' if pid.exists() else 'stopped'}"
                  + (f" (data folder of PostgreSQL {major})" if major else ""))
    console.print(f"redis: {'running' if (s.data_dir / 'redis.sock').exists() else 'stopped'}")


@embedded_app.command("stop")
def embedded_stop() -> None:
    """Stop the embedded PostgreSQL and Redis of FABRIC_DATA_DIR.

    Example: fabric embedded stop
    """
    from .. import servers
    from ..config import Settings

    with handle_errors():
        s = Settings.from_env()
    pg = servers.stop_postgres(s.data_dir)
    rd = servers.stop_redis(s.data_dir)
    console.print(f"postgres: {'stopped' if pg else 'was not running'}; redis: {'stopped' if rd else 'was not running'}")


@embedded_app.command("upgrade")
def embedded_upgrade() -> None:
    """Move the embedded PostgreSQL data folder of FABRIC_DATA_DIR to PostgreSQL 18 (pg_upgrade).

    A folder made by the old `pgserver` package (PostgreSQL 16) keeps working as it is; this moves it to
    the current major. The old folder is kept beside it as `pg.old` until you delete it.
    Example: fabric embedded upgrade
    """
    from .. import servers
    from ..config import Settings

    with handle_errors():
        s = Settings.from_env()
        before, after = servers.upgrade_postgres(s.data_dir)
    if before is None:
        console.print(f"no PostgreSQL data folder in {s.data_dir}: nothing to upgrade")
    elif before == after:
        console.print(f"the data folder already runs PostgreSQL {after}")
    else:
        console.print(f"upgraded {s.data_dir / 'pg'} from PostgreSQL {before} to {after}; "
                      f"the old folder is {s.data_dir / 'pg.old'}")
