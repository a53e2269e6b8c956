"""The `fabric` command. Each area registers its commands from its own module."""

from __future__ import annotations

from .app import app  # noqa: F401
from . import core  # noqa: F401,E402  (registers commands)

for _optional in ("admin", "bench"):
    try:
        __import__(f"{__name__}.{_optional}")
    except ModuleNotFoundError as exc:  # an area not built yet
        if exc.name != f"{__name__}.{_optional}":
            raise
