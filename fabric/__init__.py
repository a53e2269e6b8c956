"""fabric: a bi-temporal tree memory store for AI agents on PostgreSQL + pgvector."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__all__ = ["Fabric", "AsyncFabric", "Settings", "FabricError", "Memory", "Placement", "WriteReceipt", "WriteRequest",
           "DecisionRecord"]
__version__ = "0.1.0"

# The public names load on first use, so `import fabric` (and the CLI's start) does not pay for
# psycopg, redis, rq, pydantic ... until something needs them.
_HOMES = {"Fabric": ".api", "AsyncFabric": ".aio", "Settings": ".config", "FabricError": ".errors",
          "Memory": ".types", "Placement": ".types", "WriteReceipt": ".types", "WriteRequest": ".types",
          "DecisionRecord": ".types"}

if TYPE_CHECKING:
    from .aio import AsyncFabric
    from .api import Fabric
    from .config import Settings
    from .errors import FabricError
    from .types import DecisionRecord, Memory, Placement, WriteReceipt, WriteRequest


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module 'fabric' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
