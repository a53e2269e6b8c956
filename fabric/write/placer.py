"""The placement runtime a worker holds: a pool, the embedder, the validator."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Sequence

from psycopg_pool import ConnectionPool

from .. import metrics
from ..config import Settings
from ..embed import Embedder, make_embedder
from ..errors import FabricError, ValidatorError
from ..placement.validator import Validator
from .apply import PlaceStats, load_pending, note_failure, place_one

log = logging.getLogger(__name__)


def make_validator(settings: Settings, kind: str | None = None) -> Validator:
    kind = kind or ("llm" if settings.use_llm else "rule")
    if kind == "rule":
        from ..placement.rules import RuleValidator

        return RuleValidator(near_similarity=settings.near_similarity,
                             duplicate_similarity=settings.duplicate_similarity)
    if kind == "llm":
        from ..placement.llm import LLMValidator

        return LLMValidator.from_settings(settings)
    raise FabricError(f"unknown validator {kind!r}: use 'rule' or 'llm'")


class Placer:
    def __init__(self, settings: Settings, pool: ConnectionPool, *, embedder: Embedder | None = None,
                 validator: Validator | None = None):
        self.settings = settings
        self.pool = pool
        self.embedder = embedder or make_embedder(settings)
        self.validator = validator or make_validator(settings)

    def place(self, org: str, write_ids: Sequence[str | uuid.UUID]) -> PlaceStats:
        """Place the pending writes among `write_ids`; safe to call twice with the same ids."""
        ids = [uuid.UUID(str(i)) for i in write_ids]
        stats = PlaceStats()
        with self.pool.connection() as conn:
            writes = load_pending(conn, org, ids)
            if not writes:
                stats.skipped = len(ids)
                return stats
            started = time.perf_counter()
            vectors = self.embedder.embed([w.content for w in writes])  # one batch for the whole job
            metrics.embedded(len(writes), time.perf_counter() - started)
            for write, vec in zip(writes, vectors):
                started = time.perf_counter()
                try:
                    placed = place_one(conn, write, vec, self.validator, k=self.settings.neighbours_k,
                                       near_similarity=self.settings.near_similarity,
                                       ef_search=self.settings.ef_search, stats=stats)
                    if placed is not None:
                        metrics.placement_done(placed.decision, placed.validator, time.perf_counter() - started)
                except ValidatorError as exc:
                    # The validator's own retries are spent: park the write for an admin, with the error.
                    conn.rollback()
                    note_failure(conn, org, write.id, f"validator: {exc}", park=True, max_attempts=1)
                    stats.parked += 1
                    metrics.write_parked(self.validator.name)
                    log.warning("write parked", extra={"action": "park", "write_id": str(write.id),
                                                       "error": str(exc)})
                except Exception as exc:
                    conn.rollback()
                    status = note_failure(conn, org, write.id, f"{type(exc).__name__}: {exc}", park=False,
                                          max_attempts=self.settings.job_retries + 2)
                    if status == "parked":
                        stats.parked += 1
                        metrics.write_parked(None)
                        continue
                    raise  # RQ's Retry takes it from here
        return stats
