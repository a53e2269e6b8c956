"""fabric: a bi-temporal tree memory store for AI agents on PostgreSQL + pgvector."""

from .aio import AsyncFabric
from .api import Fabric
from .config import Settings
from .errors import FabricError
from .types import DecisionRecord, Memory, Placement, WriteReceipt, WriteRequest

__all__ = ["Fabric", "AsyncFabric", "Settings", "FabricError", "Memory", "Placement", "WriteReceipt", "WriteRequest",
           "DecisionRecord"]
__version__ = "0.1.0"
