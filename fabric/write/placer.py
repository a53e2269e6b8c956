"""The placement runtime a worker holds: a pool, the embedder, the validator."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Sequence

from psycopg_pool import ConnectionPool

from .. import metrics
from ..config import Settings
from ..db import is_connection_loss
from ..embed import Embedder, make_embedder
from ..errors import FabricError, ValidatorError
from ..placement.validator import Validator
from .apply import PlaceStats, load_pending, note_failure, place_locked, place_one

log = logging.getLogger(__name__)


def make_validator(settings: Settings, kind: str | None = None, *, rules_first: bool = True) -> Validator:
    """The validator placement uses. `rules_first` (LLM only): the rules settle what they read for
    sure and the model sees the rest; a replay turns it off to have the model judge every write."""
    kind = kind or ("llm" if settings.use_llm else "rule")
    if kind == "rule":
        from ..placement.rules import RuleValidator

        return RuleValidator(near_similarity=settings.near_similarity,
                             duplicate_similarity=settings.duplicate_similarity,
                             second_opinion=settings.learned_second_opinion)
    if kind == "llm":
        from ..placement.llm import LLMValidator

        return LLMValidator.from_settings(settings, rules_first=rules_first)
    raise FabricError(f"unknown validator {kind!r}: use 'rule' or 'llm'")


class Placer:
    def __init__(self, settings: Settings, pool: ConnectionPool, *, embedder: Embedder | None = None,
                 validator: Validator | None = None):
        self.settings = settings
        self.pool = pool
        self.embedder = embedder or make_embedder(settings)
        self.validator = validator or make_validator(settings)

    def place(self, org: str, write_ids: Sequence[str | uuid.UUID]) -> PlaceStats:
        """Place the pending writes among `write_ids`; safe to call twice with the same ids.

        One write that fails does not hold up the others: a write that cannot be read back or that
        the validator gives up on is parked at once; any other failure counts an attempt (parked when
        they run out) and, once the rest are placed, the job raises so RQ's Retry runs it again.
        Connection loss is nobody's fault: it counts no attempt, and RQ's Retry runs the job again."""
        ids = [uuid.UUID(str(i)) for i in write_ids]
        stats = PlaceStats()
        failed: list[str] = []
        with self.pool.connection() as conn:
            writes, unreadable = load_pending(conn, org, ids)
            for write_id, error in unreadable.items():
                self._park(conn, org, write_id, error, stats)
            if not writes:
                stats.skipped = len(ids) - len(unreadable)
                return stats
            started = time.perf_counter()
            vectors = self.embedder.embed([w.content for w in writes])  # one batch for the whole job
            metrics.embedded(len(writes), time.perf_counter() - started)
            tuning: dict[str, Any] = dict(k=self.settings.neighbours_k, ef_search=self.settings.ef_search,
                                          near_similarity=self.settings.near_similarity, stats=stats)
            errors: dict[uuid.UUID, Exception]
            if self.validator.model is None:
                # No model to wait for (the rules decide in microseconds): decide under the org lock, in chunks.
                errors = place_locked(conn, writes, vectors, self.validator, **tuning)
            else:
                # A model call may take seconds: decide each write outside the lock (optimistic).
                errors = {}
                for write, vec in zip(writes, vectors):
                    started = time.perf_counter()
                    try:
                        placed = place_one(conn, write, vec, self.validator, **tuning)
                    except Exception as exc:
                        if is_connection_loss(exc):
                            raise
                        conn.rollback()
                        errors[write.id] = exc
                        continue
                    if placed is not None:
                        metrics.placement_done(placed.decision, placed.validator, time.perf_counter() - started)
            for write_id, failure in errors.items():
                if isinstance(failure, ValidatorError):
                    # The validator's own retries are spent: park the write for an admin, with the error.
                    self._park(conn, org, write_id, f"validator: {failure}", stats, validator=self.validator.name)
                    continue
                status = note_failure(conn, org, write_id, f"{type(failure).__name__}: {failure}", park=False,
                                      max_attempts=self.settings.job_retries + 2)
                if status == "parked":
                    stats.parked += 1
                    metrics.write_parked(None)
                else:
                    failed.append(f"{write_id}: {type(failure).__name__}: {failure}")
        if failed:
            raise FabricError(f"{len(failed)} write(s) of org {org!r} failed and stay pending for a retry: "
                              + "; ".join(failed[:3]))
        return stats

    @staticmethod
    def _park(conn, org: str, write_id: uuid.UUID, error: str, stats: PlaceStats, *,
              validator: str | None = None) -> None:
        note_failure(conn, org, write_id, error, park=True, max_attempts=1)
        stats.parked += 1
        metrics.write_parked(validator)
        log.warning("write parked", extra={"action": "park", "write_id": str(write_id), "error": error})
