"""Settings: every knob in one place, read from the environment only by entry points."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import AliasChoices, Field
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
        return cls(**values)
