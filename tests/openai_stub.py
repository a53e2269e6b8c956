"""A real HTTP server on 127.0.0.1 that speaks OpenAI's chat-completions API and plays scripted answers.

The LLM validator talks to it through the real `openai` client, so every byte goes over a socket:
status codes, headers (Retry-After), JSON bodies with `usage`, and slow answers that make the
client time out. Every request is recorded (`stub.requests`).

A script is a list of steps, played one per request (then `default`, if set):
- a dict              -> an answer whose message content is that dict as JSON
- a str               -> an answer whose message content is that string verbatim (e.g. malformed JSON)
- Status(code, ...)   -> an HTTP error with an OpenAI-style error body and optional headers
- Slow(seconds, step) -> wait, then play `step` (longer than the client's timeout = a timeout)
- a callable(request) -> called with the request body (a dict); returns one of the above
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

import pytest


@dataclass
class Status:
    code: int
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Slow:
    seconds: float
    then: Any


class OpenAIStub:
    def __init__(self, model: str = "stub-model"):
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._script: deque[Any] = deque()
        self.default: Any = None
        self._lock = threading.Lock()
        self._closing = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") in ("/health", "/v1/models"):
                    self._send(200, {"status": "ok", "object": "list",
                                     "data": [{"id": stub.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
                    return
                with stub._lock:
                    stub.requests.append({"path": self.path, "body": body, "at": time.time(),
                                          "headers": {k.lower(): v for k, v in self.headers.items()}})
                    step = stub._script.popleft() if stub._script else stub.default
                stub._play(self, step, body)

            def _send(self, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._handler = Handler
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, name="openai-stub", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ scripting

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *steps: Any, default: Any = None) -> OpenAIStub:
        with self._lock:
            self._script = deque(steps)
            self.default = default
        return self

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.default = None
            self.requests.clear()

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _play(self, handler: Any, step: Any, body: dict[str, Any]) -> None:
        while callable(step):
            step = step(body)
        if isinstance(step, Slow):
            self._closing.wait(step.seconds)
            return self._play(handler, step.then, body)
        if step is None:
            return handler._send(500, {"error": {"message": "the stub's script is exhausted", "type": "server_error"}})
        if isinstance(step, Status):
            kind = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(step.code, "server_error")
            return handler._send(step.code, {"error": {"message": step.message, "type": kind, "code": kind}},
                                 step.headers)
        content = step if isinstance(step, str) else json.dumps(step)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        completion_tokens = max(1, len(content.split()))
        handler._send(200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "system_fingerprint": "stub",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": None}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    def close(self) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


# ---------------------------------------------------------------------- helpers for scripts

def answer(kind: str, target: str | None = "m1", *, subject: str | None = None, relation: str | None = None,
           value: str | None = None, target_value: str | None = None, reason: str = "scripted",
           confidence: float = 0.9) -> dict[str, Any]:
    """A well-formed placement answer (the validator's JSON schema)."""
    return {"subject": subject, "relation": relation, "value": value,
            "target": None if kind == "new_branch" else target, "target_value": target_value, "reason": reason,
            "kind": kind, "confidence": confidence}


def last_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def labels_in(body: dict[str, Any]) -> list[str]:
    """The candidate labels shown in the request's last user turn (m1, m2, ...)."""
    return re.findall(r"^\[(m\d+)\]", last_user(body), flags=re.M)


def label_of(body: dict[str, Any], needle: str) -> str | None:
    """The label of the candidate whose text contains `needle` in the request's last user turn."""
    for lab, text in re.findall(r"^\[(m\d+)\] (.*)$", last_user(body), flags=re.M):
        if needle in text:
            return lab
    return None


def by_content(rules: Iterable[tuple[str, Callable[[dict[str, Any]], Any] | Any]], fallback: Any = None):
    """A callable step: the first rule whose substring occurs in the NEW memory decides the answer."""
    rules = list(rules)

    def step(body: dict[str, Any]) -> Any:
        new = last_user(body).split("NEW memory:", 1)[-1]
        for needle, reply in rules:
            if needle in new:
                return reply(body) if callable(reply) else reply
        return fallback
    return step


@pytest.fixture
def openai_stub():
    stub = OpenAIStub()
    yield stub
    stub.close()
