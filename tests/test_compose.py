"""docker-compose.yml read against the code (Docker itself does not run in CI): the services it names,
the variables it sets, the server it pins and the commands it runs."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import typer.main

from fabric.cli import app
from fabric.config import Settings
from fabric.servers import NEW_FOLDER_MAJOR

yaml = pytest.importorskip("yaml")
COMPOSE = yaml.safe_load((Path(__file__).resolve().parents[1] / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
# Read outside Settings (by the worker and the MCP server's HTTP transport).
READ_DIRECTLY = {"FABRIC_LOG_LEVEL"}


def settings_variables() -> set[str]:
    names = set()
    for name, field in Settings.model_fields.items():
        aliases = getattr(field.validation_alias, "choices", None) or []
        names |= {a for a in aliases if a.isupper()} or {f"FABRIC_{name.upper()}"}
    return names


def test_every_variable_it_sets_is_one_fabric_reads():
    for service in ("migrate", "worker"):
        env = SERVICES[service]["environment"]
        unread = set(env) - settings_variables() - READ_DIRECTLY
        assert not unread, f"{service} sets {sorted(unread)}, which fabric never reads"


def test_the_urls_name_its_services():
    env = SERVICES["worker"]["environment"]
    assert urlsplit(env["DATABASE_URL"]).hostname in SERVICES
    assert urlsplit(env["REDIS_URL"]).hostname in SERVICES
    db = urlsplit(env["DATABASE_URL"])
    pg_env = SERVICES[db.hostname]["environment"]
    assert (db.username, db.password, db.path.lstrip("/")) == (
        pg_env["POSTGRES_USER"], pg_env["POSTGRES_PASSWORD"], pg_env["POSTGRES_DB"])


def test_postgres_is_the_embedded_major_with_pgvector_0_8():
    image = SERVICES["postgres"]["image"]
    match = re.fullmatch(r"pgvector/pgvector:(\d+)\.(\d+)\.\d+-pg(\d+)", image)
    assert match, image
    assert (int(match[1]), int(match[2])) >= (0, 8)  # iterative index scans
    assert int(match[3]) == NEW_FOLDER_MAJOR
    # From PostgreSQL 18 the images keep their data in a versioned folder under /var/lib/postgresql.
    assert any(v.endswith(":/var/lib/postgresql") for v in SERVICES["postgres"]["volumes"])


def test_it_runs_fabric_commands_that_exist_from_a_non_editable_install():
    commands = set(typer.main.get_command(app).commands)
    migrate = " ".join(SERVICES["migrate"]["command"])
    assert "pip install" in migrate and " -e " not in migrate and "--editable" not in migrate
    assert re.search(r"/venv/bin/fabric migrate\b", migrate) and "migrate" in commands
    worker = SERVICES["worker"]["command"]
    assert worker[:2] == ["/venv/bin/fabric", "worker"] and "worker" in commands
    # The checkout is mounted read-only and nothing runs inside it: the installed package is what runs.
    for service in ("migrate", "worker"):
        assert ".:/src:ro" in SERVICES[service]["volumes"]
        assert not SERVICES[service]["working_dir"].startswith("/src")
    assert SERVICES["worker"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
