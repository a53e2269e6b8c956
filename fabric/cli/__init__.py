"""The `fabric` command. Each area registers its commands from its own module."""

from __future__ import annotations

import importlib

from .app import app  # noqa: F401
from . import core, bench  # noqa: F401,E402  (register commands)

# Areas that register commands of their own (a module missing here is an area not built yet).
for _area in ("admin", "indexes", "roles", "bench_temporal", "bench_scale", "bench_retrieval", "bench_validators",
              "bench_pipeline", "bench_mcp", "bench_chains", "bench_stream", "transfer", "mcp"):
    try:
        importlib.import_module(f"{__name__}.{_area}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{_area}":
            raise
