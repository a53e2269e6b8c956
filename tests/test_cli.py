"""The admin CLI, run as a user runs it: the real `fabric` command in subprocesses (issue 5)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid

import pytest

from fabric.cli.admin import EXIT_BAD_LINES

EXIT_USAGE, EXIT_NOT_FOUND = 2, 3


@pytest.fixture
def cli(fab, database_url, redis_url, data_dir):
    """Run `fabric ARGS...` against the test services; the session worker places what it writes."""
    env = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=redis_url, FABRIC_DATA_DIR=str(data_dir),
               FABRIC_QUEUE_NAME=fab.settings.queue_name, COLUMNS="200")
    env.pop("FABRIC_RUN_WORKER", None)

    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["fabric", *args], env=env, input=input, capture_output=True, text=True,
                              timeout=300)

    return run


def test_ingest_reports_bad_lines_by_number_and_keeps_the_good_ones(cli, fab, org, tmp_path, pg):
    lines = [
        {"content": "Ada Moreau works at Northwind.", "subject": "Ada Moreau", "relation": "employer",
         "value": "Northwind", "valid_from": "2021-03-01T00:00:00Z", "source": "hr"},
        "{this is not json",
        {"content": "Ada Moreau lives in Lyon.", "subject": "Ada Moreau", "relation": "city", "value": "Lyon"},
        "",
        {"content": "   "},
        {"content": "Ada is on the Pro plan.", "kind": "plan_tier"},
        {"content": "Ada joined in 2021.", "valid_from": "2021-01-01"},
        ["a", "list"],
        {"content": "Ada Moreau works at Northwind.", "subject": "Ada Moreau", "relation": "employer",
         "value": "Northwind", "valid_from": "2021-03-01T00:00:00Z", "source": "hr"},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")

    res = cli("ingest", str(path), "--org", org, "--json")
    assert res.returncode == EXIT_BAD_LINES, res.stderr
    out = json.loads(res.stdout)
    assert [(b["line"], b["field"]) for b in out["bad_lines"]] == [
        (2, "json"), (5, "content"), (6, "kind"), (7, "valid_from"), (8, "json")]
    assert out["lines_ok"] == 3 and out["lines_bad"] == 5
    # Waited for placement: two facts and one exact duplicate.
    assert out["status"] == {"placed": 2, "duplicate": 1}
    assert out["decisions"] == {"new_branch": 2, "duplicate": 1}
    assert pg.execute("SELECT count(*) FROM fabric.writes WHERE org = %s", (org,)).fetchone()[0] == 3
    assert fab.current_value("Ada Moreau", "city", org=org).value == "Lyon"

    # The table form says the same to a person, with the line numbers on stderr.
    res = cli("ingest", str(path), "--org", org)
    assert res.returncode == EXIT_BAD_LINES
    assert "line 2:" in res.stderr and "line 7: invalid valid_from" in res.stderr
    assert "decision duplicate" in res.stdout


def test_ingest_of_a_clean_file_exits_0_and_a_missing_file_is_usage(cli, org, tmp_path):
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps({"content": "The Lyon office opens at 9am."}) + "\n")
    res = cli("ingest", str(path), "--org", org, "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["status"] == {"placed": 1}
    res = cli("ingest", str(tmp_path / "missing.jsonl"), "--org", org)
    assert res.returncode == EXIT_USAGE and "no such file" in res.stderr


def test_admin_commands_speak_json_and_exit_codes(cli, fab, org):
    a = fab.wait(fab.write("The Lyon office opens at 9am.", org=org, source="facilities"), 60)
    c = fab.wait(fab.write("The Lyon office opens at 10am.", org=org, source="facilities"), 60)
    assert c.decision == "contradiction_fork"

    res = cli("replay", "--org", org, "--root", str(a.memory_id), "--dry-run", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["applied"] is False and rep["writes"] == 2 and rep["changed"] == 0

    res = cli("decisions", "--org", org, "--kind", "contradiction_fork", "--sample", "5", "--json")
    assert res.returncode == 0, res.stderr
    assert [d["id"] for d in json.loads(res.stdout)] == [str(c.decision_id)]

    res = cli("revert", str(c.decision_id), "--reason", "false contradiction", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["reverted"] == str(c.decision_id)
    assert fab.get(a.memory_id, org=org).state == "live"
    res = cli("revert", str(c.decision_id))  # twice: refused, an error, not a crash
    assert res.returncode == 1 and "already reverted" in res.stderr

    res = cli("invalidate-source", "facilities", "--org", org, "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["invalidated"] == 1

    res = cli("stats", "--org", org, "--json")
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout)[org]
    assert s["writes"] == {"placed": 2}
    assert s["decisions"]["revert"] == 1 and s["decisions"]["invalidate_source"] == 1
    assert s["memories"] == {"live": 1, "retracted": 1}


def test_unknown_org_and_ids_are_clear_errors(cli, fab, org):
    a = fab.wait(fab.write("The Lyon office opens at 9am.", org=org), 60)
    nobody = f"nobody-{uuid.uuid4().hex[:6]}"
    res = cli("decisions", "--org", nobody)
    assert res.returncode == EXIT_NOT_FOUND and f"no org '{nobody}'" in res.stderr
    res = cli("stats", "--org", nobody, "--json")
    assert res.returncode == EXIT_NOT_FOUND
    res = cli("replay", "--org", org, "--root", str(uuid.uuid4()))
    assert res.returncode == EXIT_NOT_FOUND and "no memory" in res.stderr
    res = cli("revert", str(uuid.uuid4()))
    assert res.returncode == EXIT_NOT_FOUND and "no decision" in res.stderr
    res = cli("revert", "not-an-id")
    assert res.returncode == EXIT_USAGE and "decision_id" in res.stderr
    res = cli("replay", "--org", org, "--root", str(a.memory_id), "--dry-run", "--apply")
    assert res.returncode == EXIT_USAGE
    res = cli("decisions", "--org", org, "--kind", "guess")
    assert res.returncode == EXIT_USAGE and "--kind" in res.stderr


def command_paths(group):
    """Every command under a click group, as the words that run it (`bench replay`, `roles grant`, ...)."""
    for name, cmd in group.commands.items():
        if getattr(cmd, "commands", None):
            yield from ((name, *rest) for rest in command_paths(cmd))
        else:
            yield (name,)


def test_every_command_has_an_example_in_its_help():
    """The README promises an example in every command's --help (`embedded status` and `index list`
    had none)."""
    import typer.main
    from typer.testing import CliRunner

    from fabric.cli import app

    runner = CliRunner()
    paths = list(command_paths(typer.main.get_command(app)))
    assert len(paths) > 30 and ("bench", "replay") in paths and ("embedded", "status") in paths
    for cmd in paths:
        res = runner.invoke(app, [*cmd, "--help"], env={"COLUMNS": "200"})
        assert res.exit_code == 0, cmd
        assert "Example:" in res.output, cmd


@pytest.mark.parametrize("folder", ["empty", "already 18"])
def test_embedded_upgrade_of_a_folder_with_nothing_to_move(tmp_path, folder):
    """`fabric embedded upgrade` on a data folder without an old PostgreSQL says so and changes nothing."""
    from typer.testing import CliRunner

    from fabric.cli import app

    if folder == "already 18":
        (tmp_path / "pg").mkdir()
        (tmp_path / "pg" / "PG_VERSION").write_text("18\n")
    res = CliRunner().invoke(app, ["embedded", "upgrade"], env={"FABRIC_DATA_DIR": str(tmp_path)})
    assert res.exit_code == 0, res.output
    expected = "nothing to upgrade" if folder == "empty" else "already runs PostgreSQL 18"
    assert expected in " ".join(res.output.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if folder == "empty" else ["pg"])


def test_reads_of_an_org_nothing_was_written_to_say_so(cli, fab, org):
    """A mistyped --org is an error naming it, not an empty answer (search and belief exited 0 with an
    empty table, current said "no value")."""
    fab.wait(fab.write("The Lyon office opens at 9am.", org=org), 60)
    nobody = f"nobody-{uuid.uuid4().hex[:6]}"
    for args in (["search", "office hours"], ["belief"], ["current", "Lyon office", "opening_time"]):
        res = cli(*args, "--org", nobody)
        assert res.returncode == EXIT_NOT_FOUND, args
        assert res.stderr == f"not found: no org '{nobody}': nothing was ever written to it\n", args
    # An org that exists: an empty answer stays an answer.
    res = cli("current", "Nobody", "employer", "--org", org)
    assert res.returncode == EXIT_NOT_FOUND and res.stderr.startswith("no value for (Nobody, employer)")
    res = cli("search", "office", "--org", org, "--json")
    assert res.returncode == 0 and json.loads(res.stdout)
    res = cli("revert", str(uuid.uuid4()))
    assert res.returncode == EXIT_NOT_FOUND and res.stderr.rstrip().endswith("in any org")


def fabric_cmd(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["fabric", *args], env={**os.environ, "COLUMNS": "200", **env}, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.integration  # a process start per case: out of the seconds-long unit tier
@pytest.mark.parametrize("variable, value", [
    ("DATABASE_URL", "notaurl"), ("REDIS_URL", "localhost:6379"), ("FABRIC_NEIGHBOURS_K", "abc"),
    ("FABRIC_VALIDATOR", "gpt"),
])
def test_a_bad_setting_is_one_line_naming_the_variable(variable, value, tmp_path):
    """Settings are checked before anything connects; pydantic's and psycopg's tracebacks were printed."""
    # Every entry point that reads settings (each is a process start: the unit tier pays for them).
    commands = [["current", "Ada", "employer"]] + ([["migrate"], ["worker", "--burst"]]
                                                  if variable == "DATABASE_URL" else [])
    for args in commands:
        # A narrow terminal must not fold the line either.
        res = fabric_cmd(*args, env={variable: value, "FABRIC_DATA_DIR": str(tmp_path), "COLUMNS": "40"})
        assert res.returncode == EXIT_USAGE, (args, res.stderr)
        assert res.stderr.startswith(f"invalid {variable}: ") and res.stderr.count("\n") == 1, res.stderr
        assert value in res.stderr
    assert not list(tmp_path.iterdir()), "nothing was started"


@pytest.mark.integration  # a process start
def test_an_unreachable_database_is_one_line(tmp_path):
    """libpq's reason carries a tab-indented hint on a second line, which the CLI printed as it was."""
    # A Redis URL too: without one the command starts an embedded Redis in the data folder (it outlives
    # the command by design), which a test's temporary folder would leak.
    res = fabric_cmd("current", "Ada", "employer", env={
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "REDIS_URL": "redis://127.0.0.1:1/0",
        "FABRIC_DATA_DIR": str(tmp_path)})
    assert res.returncode == 1
    assert res.stderr.startswith("error: cannot connect to PostgreSQL: ") and res.stderr.count("\n") == 1, res.stderr
    assert not list(tmp_path.iterdir()), "nothing was started"


def test_redis_down_is_one_line_for_the_commands_that_need_it(database_url, data_dir, org):
    """`fabric reconcile` and `fabric worker --burst` with Redis unreachable printed redis-py's traceback."""
    from fabric import Fabric

    down = "redis://127.0.0.1:1/0"
    with Fabric.connect(database_url, down, run_worker=False) as fab:
        receipt = fab.write("Ines Rocha lives in Porto.", org=org)
    assert not receipt.enqueued  # pending in Postgres: the reconciler must ask Redis about it
    env = {"DATABASE_URL": database_url, "REDIS_URL": down, "FABRIC_DATA_DIR": str(data_dir)}
    for args, said in ((["reconcile"], "cannot reach Redis to check placement jobs"),
                       (["worker", "--burst"], "cannot reach Redis")):
        res = fabric_cmd(*args, env=env)
        assert res.returncode == 1, (args, res.stderr)
        assert res.stderr.startswith(f"error: {said}: ") and res.stderr.count("\n") == 1, res.stderr
    # `fabric write` waited out its 30 s for a write no worker could see, then said so.
    started = time.monotonic()
    res = fabric_cmd("write", "Ines Rocha lives in Braga.", "--org", org, env=env)
    assert res.returncode == 4 and time.monotonic() - started < 20
    assert "not queued: write " in res.stderr and "Redis is unreachable" in res.stderr
    assert "Traceback" not in res.stderr


def test_fabric_worker_logs_at_FABRIC_LOG_LEVEL(database_url, redis_url, data_dir, org):
    """docker-compose.yml sets FABRIC_LOG_LEVEL=INFO for `fabric worker`; the command configured RQ's
    logger only, so fabric's own lines (here the reconciler's) were dropped."""
    from fabric import Fabric

    with Fabric.connect(database_url, "redis://127.0.0.1:1/0", run_worker=False) as fab:
        receipt = fab.write("Ines Rocha works at Lusotec.", org=org)
    env = {"DATABASE_URL": database_url, "REDIS_URL": redis_url, "FABRIC_DATA_DIR": str(data_dir),
           "FABRIC_QUEUE_NAME": f"log-test-{uuid.uuid4().hex[:6]}", "FABRIC_RECONCILE_GRACE": "0",
           "FABRIC_LOG_LEVEL": "info"}
    res = fabric_cmd("worker", "--burst", env=env)
    assert res.returncode == 0, res.stderr
    assert "INFO fabric.write.reconcile reconciled" in res.stderr
    with Fabric.connect(database_url, redis_url, run_worker=False) as fab:
        assert fab.wait(receipt, 30).decision == "new_branch"


def test_ids_may_be_given_as_the_tables_print_them(cli, fab, org):
    """The tables print the first 8 characters of an id; walk, history, replay and revert refused them
    ("not a valid id"), so a reader had to rerun with --json to copy a whole one."""
    from datetime import datetime, timezone

    old = fab.wait(fab.write("Zed Hale lives in Oslo.", org=org, subject="Zed Hale", relation="home_city",
                             value="Oslo", valid_from=datetime(2020, 1, 1, tzinfo=timezone.utc)), 60)
    new = fab.wait(fab.write("Zed Hale lives in Bergen.", org=org, subject="Zed Hale", relation="home_city",
                             value="Bergen", valid_from=datetime(2023, 1, 1, tzinfo=timezone.utc)), 60)
    assert new.decision == "contradiction_fork"
    short = str(old.memory_id)[:8]
    res = cli("walk", short, "--org", org, "--include-superseded", "--json")
    assert res.returncode == 0, res.stderr
    assert [m["id"] for m in json.loads(res.stdout)] == [str(old.memory_id)]
    res = cli("history", short, "--org", org, "--json")
    assert res.returncode == 0 and [m["value"] for m in json.loads(res.stdout)] == ["Oslo", "Bergen"]
    res = cli("replay", "--org", org, "--root", short, "--json")
    assert res.returncode == 0, res.stderr
    res = cli("revert", str(new.decision_id)[:8], "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["reverted"] == str(new.decision_id)
    assert fab.current_value("Zed Hale", "home_city", org=org).value == "Oslo"
    res = cli("walk", "0000", "--org", org)  # no such id starts so: not found, not "invalid"
    assert res.returncode == EXIT_NOT_FOUND and "no memory 0000" in res.stderr


def test_migrate_to_an_unknown_revision_is_bad_input(cli):
    """Alembic's CommandError came out as a traceback."""
    res = cli("migrate", "--downgrade", "nope")
    assert res.returncode == EXIT_USAGE
    assert res.stderr == "invalid revision: Can't locate revision identified by 'nope'\n"
