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


# Every service fixture reaches PostgreSQL, Redis or a loopback HTTP server through one of these
# (a test's fixture closure is transitive, so `fab`, `pg`, `afab`, ... count).
SERVICE_FIXTURES = frozenset({"data_dir", "database_url", "redis_url", "openai_stub"})
# Tests that start a server of their own, or run a benchmark over a labelled set, without a fixture
# that says so, in files edited elsewhere this session: an `integration` marker in the file should
# replace the entry.
NOT_UNIT = frozenset({
    "tests/test_readpath.py::test_a_postgres_16_folder_keeps_working",
    "tests/test_llm_validator.py::test_bench_command_runs",
    "tests/test_llm_validator.py::test_rule_validator_accuracy_is_measured",
    "tests/test_llm_validator.py::test_the_rephrased_set_is_scored_per_split_with_wrong_invalidations",
})


def _needs_services(item: pytest.Item) -> bool:
    return bool(SERVICE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
                or item.get_closest_marker("integration") or item.get_closest_marker("llm")
                or item.nodeid in NOT_UNIT)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.integration if _needs_services(item) else pytest.mark.unit)
