"""Settings: every knob in one place, read from the environment only by entry points."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import AliasChoices, Field, field_validator
from pydantic import ValidationError as PydanticError
from pydantic_settings import BaseSettings, SettingsConfigDict


# The longest a placement job may run, whatever its writes and the model's timeouts.
MAX_JOB_TIMEOUT = 24 * 3600


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("fabric"))


class Settings(BaseSettings):
    """fabric's configuration. Environment variables are named in each field's alias."""

    model_config = SettingsConfigDict(env_prefix="FABRIC_", extra="forbid", populate_by_name=True)

    # Services. None means: start the embedded server in `data_dir`.
    database_url: str | None = Field(None, validation_alias=AliasChoices("database_url", "DATABASE_URL"))
    redis_url: str | None = Field(None, validation_alias=AliasChoices("redis_url", "REDIS_URL"))
    data_dir: Path = Field(default_factory=_default_data_dir)

    # Embeddings.
    embedder: Literal["local", "openai"] = "local"
    embedding_dim: int = Field(384, ge=1, le=16000)
    embedding_model: str = "text-embedding-3-small"
    embed_batch_size: int = Field(64, ge=1)
    # The local model's files, for installs without the packaged ones (air-gapped); sha256-checked.
    embedding_model_path: Path | None = None
    tokenizer_path: Path | None = None

    # Validator. "auto" = the LLM when an endpoint and a model are configured, else the rules.
    validator: Literal["auto", "rule", "llm"] = "auto"
    llm_model: str | None = None
    llm_timeout: float = 30.0
    llm_max_attempts: int = 3
    openai_base_url: str | None = Field(None, validation_alias=AliasChoices("openai_base_url", "OPENAI_BASE_URL"))
    openai_api_key: str | None = Field(None, validation_alias=AliasChoices("openai_api_key", "OPENAI_API_KEY"))

    # Placement.
    queue_name: str = "fabric"
    neighbours_k: int = Field(8, ge=1, le=100)
    # Below this cosine similarity a neighbour is "nothing near": new branch, no validator call.
    near_similarity: float = 0.55
    # At or above this similarity with no differing words of substance, a paraphrase is a duplicate.
    duplicate_similarity: float = 0.92
    # Where the rules (or the pre-gate) leave a text-only write a new branch, a small learned model
    # (fabric/placement/learned.py) may still read it as a version of a neighbour: blind v7 pairs 82 -> 100 of
    # 150 with no more wrong invalidations (docs/bench/learned_second_opinion.md). Off: the rules alone.
    learned_second_opinion: bool = True
    # Seconds a placement job may run before RQ kills and retries it; with the LLM validator more (job_timeout_for).
    job_timeout: int = Field(300, ge=1)
    job_retries: int = 3
    # Run a placement worker subprocess for this Fabric. None = only when Redis is embedded.
    run_worker: bool | None = None
    reconcile_interval: int = Field(30, ge=1)
    # A pending write younger than this is left alone by the reconciler (its job is on its way).
    reconcile_grace: float = 5.0

    # Reads.
    ef_search: int = Field(100, ge=1, le=1000)

    # Write policy (seed 004).
    max_content_chars: int = Field(8000, ge=1)
    refused_kinds: set[str] = Field(default_factory=lambda: {"plan_tier", "invoice_status", "entitlement"})
    episodic_ttl_days: float = 30.0

    # Metrics (fabric/metrics.py): a worker serves Prometheus metrics on this port when set; the org
    # label (one series per org) only when turned on.
    metrics_port: int | None = Field(None, ge=1, le=65535)
    metrics_org_label: bool = False

    # Connection pool.
    pool_min_size: int = 1
    pool_max_size: int = 8

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, url: str | None) -> str | None:
        if url:  # parsed only, not connected: a typo is reported before any connection is tried
            import psycopg
            from psycopg.conninfo import conninfo_to_dict

            try:
                conninfo_to_dict(url)
            except psycopg.ProgrammingError as exc:
                raise ValueError(f"not a PostgreSQL URL or connection string ({str(exc).strip()}): {url!r}") from None
        return url

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, url: str | None) -> str | None:
        if url and url.split("://", 1)[0] not in ("redis", "rediss", "unix"):
            raise ValueError(f"not a Redis URL (redis://, rediss:// or unix://): {url!r}")
        return url

    @property
    def use_llm(self) -> bool:
        if self.validator == "llm":
            return True
        return self.validator == "auto" and bool(self.openai_base_url and self.llm_model)

    def job_timeout_for(self, writes: int) -> int:
        """Seconds a placement job of `writes` writes may run: `job_timeout`, and with the LLM validator
        also the most the model can take, one decision per write of up to llm_max_attempts requests of
        llm_timeout each (at ~1 min per call a job of 64 writes outran a flat 300 s and was retried,
        placing its writes again); at most MAX_JOB_TIMEOUT."""
        if not self.use_llm:
            return self.job_timeout
        model = math.ceil(writes * self.llm_timeout * self.llm_max_attempts)
        return min(self.job_timeout + model, max(self.job_timeout, MAX_JOB_TIMEOUT))

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Read the environment, then apply explicit overrides (None overrides are ignored)."""
        values: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
        try:
            return cls(**values)
        except PydanticError as exc:
            raise _setting_error(exc, values) from None


# Settings read from a variable of their own name rather than FABRIC_<NAME>.
_PLAIN_ENV = {"database_url": "DATABASE_URL", "redis_url": "REDIS_URL", "openai_base_url": "OPENAI_BASE_URL",
              "openai_api_key": "OPENAI_API_KEY"}


def _setting_error(exc: PydanticError, keywords: dict[str, Any]) -> Exception:
    """Pydantic's report as fabric's ValidationError, naming what the user set: the keyword given to
    `connect`, else the environment variable."""
    from .errors import ValidationError

    err = exc.errors()[0]
    name = str(err["loc"][0]).lower() if err["loc"] else "settings"
    field = name if name in keywords else _PLAIN_ENV.get(name, f"FABRIC_{name.upper()}")
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "not a setting (see fabric.config.Settings)"
    elif err["type"] != "value_error" and isinstance(err.get("input"), str):
        message += f": {err['input']!r}"
    return ValidationError(field, message)
