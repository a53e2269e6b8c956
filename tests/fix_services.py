"""Service fixtures: one embedded data folder per test session (unless URLs are given)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest

from fabric import Fabric, servers
from fabric.db import migrate


@pytest.fixture(scope="session")
def data_dir() -> Path:
    # Short path: unix socket paths are limited to ~100 characters.
    path = Path(tempfile.mkdtemp(prefix="fabric-test-"))
    yield path
    if not os.environ.get("DATABASE_URL"):
        servers.stop_postgres(path)
    if not os.environ.get("REDIS_URL"):
        servers.stop_redis(path)


@pytest.fixture(scope="session")
def database_url(data_dir: Path) -> str:
    url = os.environ.get("DATABASE_URL") or servers.postgres_url(data_dir)
    migrate(url)
    return url


@pytest.fixture(scope="session")
def redis_url(data_dir: Path) -> str:
    return os.environ.get("REDIS_URL") or servers.redis_url(data_dir)


@pytest.fixture(scope="session")
def fab(database_url: str, redis_url: str, data_dir: Path) -> Fabric:
    """A Fabric with its own worker subprocess on a session queue."""
    f = Fabric.connect(database_url, redis_url, data_dir=data_dir, run_worker=True,
                       queue_name=f"fabric-test-{uuid.uuid4().hex[:8]}", reconcile_interval=2)
    yield f
    f.close()


@pytest.fixture
def queue_name() -> str:
    return f"fabric-t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def bare(database_url: str, redis_url: str, queue_name: str) -> Fabric:
    """A Fabric on a queue of its own with no worker: the test starts the workers."""
    f = Fabric.connect(database_url, redis_url, run_worker=False, queue_name=queue_name, auto_migrate=False)
    yield f
    f.close()


@pytest.fixture
def pg(database_url: str):
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def scratch_db(database_url: str):
    """A fresh, empty database on the same server (for migration tests)."""
    name = f"scratch_{uuid.uuid4().hex[:10]}"
    admin = psycopg.conninfo.make_conninfo(database_url, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield psycopg.conninfo.make_conninfo(database_url, dbname=name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def start_worker(database_url: str, redis_url: str, queue_name: str, *extra: str, env: dict | None = None
                 ) -> subprocess.Popen:
    """A real `fabric worker` process (as a user would run it)."""
    e = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=redis_url, FABRIC_QUEUE_NAME=queue_name,
             FABRIC_RECONCILE_INTERVAL="2", FABRIC_RECONCILE_GRACE="0.5", **(env or {}))
    log = Path(tempfile.gettempdir()) / f"fabric-test-worker-{queue_name}.log"
    with open(log, "ab") as out:  # keep worker chatter (e.g. after a deliberate kill) out of the test output
        return subprocess.Popen([sys.executable, "-m", "workers.run", *extra], env=e, stdout=out, stderr=out)


def free_port() -> int:
    """A loopback TCP port nobody listens on now (for servers a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
