"""Shared fixtures. Real services only: the embedded PostgreSQL + pgvector (or DATABASE_URL),
the embedded Redis (or REDIS_URL), a real RQ worker process, the real embedding model.

Isolation is by tenant: every test gets its own org, so tests share one migrated database."""

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
