"""The write policy (seed 004): not everything deserves a memory.

Kinds that a system of record answers (plan tier, invoice status, entitlements, ...) are refused
at the gate: the agent should ask that system, not remember a copy that goes stale."""

from __future__ import annotations

from .config import Settings
from .errors import PolicyRefused
from .types import WriteRequest


def check_write(req: WriteRequest, settings: Settings) -> None:
    if req.kind is not None and req.kind in settings.refused_kinds:
        raise PolicyRefused("kind", f"{req.kind!r} is answered by a system of record; ask it instead of "
                                    f"storing a copy (refused kinds: {', '.join(sorted(settings.refused_kinds))})")
