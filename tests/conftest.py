"""Shared fixtures. Real services only: the embedded PostgreSQL + pgvector (or DATABASE_URL),
the embedded Redis (or REDIS_URL), a real RQ worker process, the real embedding model.

Isolation is by tenant: every test gets its own org, so tests share one migrated database."""

from __future__ import annotations

import uuid

import pytest

pytest_plugins = ["tests.fix_services", "tests.fix_placement"]


@pytest.fixture
def org() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"
