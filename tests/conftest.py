"""Shared fixtures. Real services only: the embedded PostgreSQL + pgvector (or DATABASE_URL),
the embedded Redis (or REDIS_URL), a real RQ worker process, the real embedding model.

Isolation is by tenant: every test gets its own org, so tests share one migrated database.

Tiers: a test that asks for none of the service fixtures (and is not marked `integration`, as a test
that starts its own servers or subprocesses is) is marked `unit` here, so `pytest -m unit` runs the
pure tier (placement rules, intervals, parsing, SQL builders, the embedding model in-process) in
seconds, and `pytest -m "not unit"` the rest."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

pytest_plugins = ["tests.fix_services", "tests.fix_async", "tests.fix_placement"]

# Subprocesses run the `fabric` command of the interpreter running the tests (a venv need not be
# activated, and a `fabric` of another install on PATH must not answer instead).
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture
def org() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


# Every service fixture reaches PostgreSQL or Redis through one of these (fixtures' closures are transitive).
SERVICE_FIXTURES = frozenset({"data_dir", "database_url", "redis_url"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        uses_services = SERVICE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if not uses_services and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.unit)
        elif item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)
