"""RQ job functions. They take ids only and re-read state from Postgres, so running one twice
(a crash after commit, a retry) places each write once."""

from __future__ import annotations

import threading
from dataclasses import asdict

from fabric.config import Settings
from fabric.db import make_pool
from fabric.write.placer import Placer

_placer: Placer | None = None
_lock = threading.Lock()


def install(placer: Placer) -> None:
    """The worker entry point installs its runtime; jobs run by a plain `rq worker` build one from the env."""
    global _placer
    _placer = placer


def _runtime() -> Placer:
    global _placer
    with _lock:
        if _placer is None:
            settings = Settings.from_env()
            if not settings.database_url:
                raise RuntimeError("DATABASE_URL must be set for a worker started outside `fabric worker`")
            _placer = Placer(settings, make_pool(settings.database_url, max_size=2))
        return _placer


def place_writes(org: str, write_ids: list[str]) -> dict:
    """Place the writes of one job (a batch from one org); returns counts for RQ's result."""
    return asdict(_runtime().place(org, write_ids))
