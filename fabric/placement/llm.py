"""The production validator: an LLM behind any OpenAI-compatible endpoint, with JSON-schema output.

Retries live here, in one layer per failure type, up to ``settings.llm_max_attempts`` attempts:
- transport: a timeout, HTTP 429 (honouring a small ``Retry-After``), HTTP 5xx or a dropped
  connection is retried after a short backoff;
- content: output that is not valid JSON for the schema, or a target that is not one of the
  candidates, is re-asked (the bad answer and what was wrong with it are shown to the model).
When the attempts are spent it raises `ValidatorError` with the cause; the Placer then parks the
write with that error for an admin. RQ's own Retry is not used for LLM failures.

An invalidation the model is not sure of is not applied (Graphiti's users' top complaint is false
invalidations): a contradiction_fork becomes a new_branch when the model's confidence is below
``min_fork_confidence``, when the subject it names for the new memory is another name than the
target's (a name twin, a sister company), or when the value it names is already in the target
(the same value under another attribute is not a correction). A duplicate whose subject names are
not in the target is a new branch too: refusing it would lose a fact. Both stay live instead, and
the read-time safety net and an admin replay can still resolve them.

Other HTTP errors (401, 400, 404...) are not retried: asking again will not help."""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import openai
from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from ..errors import ConfigurationError, ValidatorError
from . import prompts
from .validator import Candidate, Decision, IncomingWrite, normalise, words

# Below this confidence a contradiction_fork is not applied. A starting point, not calibrated against
# the real model yet: calibrate it on the tune split only (fabric bench validators --llm --split tune).
MIN_FORK_CONFIDENCE = 0.6

log = logging.getLogger(__name__)


class LLMAnswer(BaseModel):
    """The structured answer the model must give (its JSON schema is sent as response_format)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["duplicate", "child_update", "contradiction_fork", "new_branch"]
    target: str | None
    subject: str | None
    relation: str | None
    value: str | None
    reason: str
    confidence: float


def response_format() -> dict[str, Any]:
    """OpenAI's strict json_schema response format for `LLMAnswer` (every field required)."""
    schema = LLMAnswer.model_json_schema()
    schema["required"] = list(LLMAnswer.model_fields)
    schema["additionalProperties"] = False
    return {"type": "json_schema", "json_schema": {"name": "placement_decision", "strict": True, "schema": schema}}


@dataclass
class LLMStats:
    """What the validator has cost so far. Thread-safe; read a consistent copy with `snapshot()`."""

    decisions: int = 0          # decide() calls that consulted the model
    calls: int = 0              # HTTP requests sent (a retried decision makes several)
    retries: int = 0            # requests beyond the first of a decision
    failures: int = 0           # decisions that ended in ValidatorError
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0     # wall time spent in decide(), retries and backoff included
    errors: dict[str, int] = field(default_factory=dict)  # failure type -> count (every failed attempt)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **kw: Any) -> None:
        with self._lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)

    def error(self, kind: str) -> None:
        with self._lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            d = {k: getattr(self, k) for k in ("decisions", "calls", "retries", "failures", "prompt_tokens",
                                                "completion_tokens", "latency_ms")}
            d["errors"] = dict(self.errors)
        d["latency_ms_per_decision"] = d["latency_ms"] / d["decisions"] if d["decisions"] else None
        return d


class _Retry(Exception):
    """One attempt failed in a way that is worth another attempt."""

    def __init__(self, kind: str, message: str, wait: float | None = None):
        super().__init__(message)
        self.kind, self.wait = kind, wait


class LLMValidator:
    """Decides placements with an LLM. `decide` raises `ValidatorError` when it cannot get a usable answer."""

    name = "llm"

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float = 30.0, max_attempts: int = 3,
                 backoff: float = 0.25, max_backoff: float = 2.0, max_retry_after: float = 5.0,
                 max_tokens: int = 256, client: openai.OpenAI | None = None,
                 min_fork_confidence: float = MIN_FORK_CONFIDENCE):
        if max_attempts < 1:
            raise ConfigurationError(f"llm_max_attempts must be at least 1, got {max_attempts}")
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.max_tokens = max_tokens
        self.min_fork_confidence = min_fork_confidence
        # max_retries=0: the client must not retry behind our back (one retry layer).
        self.client = client or openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
        self.stats = LLMStats()
        self._format = response_format()

    @classmethod
    def from_settings(cls, settings: Any) -> "LLMValidator":
        missing = [env for env, value in (("OPENAI_BASE_URL", settings.openai_base_url),
                                          ("FABRIC_LLM_MODEL", settings.llm_model),
                                          ("OPENAI_API_KEY", settings.openai_api_key)) if not value]
        if missing:
            raise ConfigurationError(
                f"the LLM validator needs {', '.join(missing)} (any non-empty OPENAI_API_KEY for a local "
                f"endpoint); or set FABRIC_VALIDATOR=rule")
        return cls(base_url=settings.openai_base_url, api_key=settings.openai_api_key, model=settings.llm_model,
                   timeout=settings.llm_timeout, max_attempts=settings.llm_max_attempts)

    # ------------------------------------------------------------------ deciding

    def decide(self, write: IncomingWrite, candidates: Sequence[Candidate]) -> Decision:
        cands = list(candidates)
        if not cands:
            return Decision("new_branch", None, "no candidates", 1.0, self.name, model=self.model)
        labels = {prompts.label(i): c for i, c in enumerate(cands)}
        shown = [(lab, c.content, _key_text(c.subject, c.relation, c.value)) for lab, c in labels.items()]
        user = prompts.render_user(write.content, shown, (write.subject, write.relation, write.value))
        messages = base = prompts.messages(user)
        started = time.perf_counter()
        prompt_tokens = completion_tokens = 0
        problems: list[str] = []
        self.stats.add(decisions=1)
        try:
            for attempt in range(1, self.max_attempts + 1):
                if attempt > 1:
                    self.stats.add(retries=1)
                try:
                    content, usage = self._call(messages)
                    prompt_tokens += usage[0]
                    completion_tokens += usage[1]
                    decision = self._interpret(write, content, labels)
                except _Retry as exc:
                    spent = getattr(exc, "tokens", None)
                    if spent:
                        prompt_tokens += spent[0]
                        completion_tokens += spent[1]
                    self.stats.error(exc.kind)
                    problems.append(f"attempt {attempt}: {exc}")
                    log.info("llm attempt failed", extra={"action": "llm_retry", "write_id": str(write.id),
                                                          "attempt": attempt, "error": str(exc)})
                    if attempt == self.max_attempts:
                        break
                    if exc.kind in ("malformed", "unknown_target"):
                        # Re-ask: show the model its answer and what was wrong with it.
                        messages = base + [
                            {"role": "assistant", "content": getattr(exc, "content", "") or ""},
                            {"role": "user", "content": prompts.REASK.format(
                                problem=str(exc), labels=", ".join(labels))}]
                    else:
                        time.sleep(exc.wait if exc.wait is not None else self._backoff(attempt))
                    continue
                latency = (time.perf_counter() - started) * 1000
                self.stats.add(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, latency_ms=latency)
                return decision.with_cost(latency_ms=latency, prompt_tokens=prompt_tokens,
                                          completion_tokens=completion_tokens)
        except ValidatorError:
            self._fail(started, prompt_tokens, completion_tokens)
            raise
        self._fail(started, prompt_tokens, completion_tokens)
        raise ValidatorError(f"LLM validator ({self.model} at {self.base_url}) gave no usable answer in "
                             f"{self.max_attempts} attempt(s): " + "; ".join(problems))

    def _fail(self, started: float, prompt_tokens: int, completion_tokens: int) -> None:
        self.stats.add(failures=1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                       latency_ms=(time.perf_counter() - started) * 1000)

    def _backoff(self, attempt: int) -> float:
        return min(self.max_backoff, self.backoff * 2 ** (attempt - 1))

    def _call(self, messages: list[dict[str, Any]]) -> tuple[str, tuple[int, int]]:
        """One request. Returns (content, (prompt_tokens, completion_tokens)); raises _Retry or ValidatorError."""
        self.stats.add(calls=1)
        try:
            resp = self.client.chat.completions.create(
                model=self.model, messages=messages, temperature=0, max_tokens=self.max_tokens,
                response_format=self._format)
        except openai.APITimeoutError as exc:
            raise _Retry("timeout", f"timed out after {self.timeout:g}s") from exc
        except openai.RateLimitError as exc:
            wait = _retry_after(exc.response)
            if wait is not None and wait > self.max_retry_after:
                wait = None  # too long to honour inside a job: use our own short backoff
            raise _Retry("rate_limited", f"HTTP 429 rate limited: {_brief(exc)}", wait) from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise _Retry("server_error", f"HTTP {exc.status_code}: {_brief(exc)}",
                             _small(_retry_after(exc.response), self.max_retry_after)) from exc
            raise ValidatorError(f"LLM endpoint refused the request: HTTP {exc.status_code}: {_brief(exc)}") from exc
        except openai.APIConnectionError as exc:
            raise _Retry("connection", f"connection failed: {exc}") from exc
        usage = getattr(resp, "usage", None)
        tokens = (int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))
        if not resp.choices:
            raise _content_retry("malformed", "the response has no choices", "", tokens)
        choice = resp.choices[0]
        content = choice.message.content or ""
        if getattr(choice.message, "refusal", None):
            raise _content_retry("malformed", f"the model refused: {choice.message.refusal}", content, tokens)
        if choice.finish_reason == "length":
            raise _content_retry("malformed", "the answer was cut off (finish_reason=length)", content, tokens)
        return content, tokens

    def _interpret(self, write: IncomingWrite, content: str, labels: dict[str, Candidate]) -> Decision:
        try:
            ans = LLMAnswer.model_validate_json(content)
        except PydanticValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "answer"
            raise _content_retry("malformed", f"malformed output ({where}: {first.get('msg')})", content) from None
        target: Candidate | None = None
        if ans.kind != "new_branch":
            target = _resolve(ans.target, labels)
            if target is None:
                raise _content_retry("unknown_target", f"target {ans.target!r} is not one of the candidates "
                                                       f"({', '.join(labels)}); refused", content)
        subject = relation = value = None
        if not write.keyed:
            subject, relation, value = _clean(ans.subject), _clean(ans.relation), _clean(ans.value)
            if subject is None or relation is None:
                subject = relation = value = None
        confidence = min(1.0, max(0.0, float(ans.confidence)))
        kind, reason = ans.kind, (ans.reason or "").strip()[:500] or "(no reason given)"
        # a keyed write is about its own key; a text-only one about what the model read in it
        said = (write.subject, write.value) if write.keyed else (_clean(ans.subject), _clean(ans.value))
        doubt = self._doubt(kind, confidence, *said, target)
        if doubt:
            log.info("llm decision not applied", extra={"action": "llm_unsure", "write_id": str(write.id),
                                                        "decision": kind, "doubt": doubt})
            kind, target, reason = "new_branch", None, f"{kind} not applied: {doubt} (model said: {reason})"[:500]
        return Decision(kind=kind, target_id=target.id if target else None, reason=reason,
                        confidence=confidence, validator=self.name,
                        subject=subject, relation=relation, value=value, model=self.model, called=True)

    def _doubt(self, kind: str, confidence: float, subject: str | None, value: str | None,
               target: Candidate | None) -> str | None:
        """Why a destructive decision (an invalidation, or refusing the write) should not be applied."""
        if target is None or kind not in ("contradiction_fork", "duplicate"):
            return None
        target_words = set(words(target.content + " " + (target.subject or "")))
        missing = [n for n in _names(subject) if n not in target_words]
        if missing:
            return f"the new memory is about {subject!r}, and {', '.join(missing)!r} is not in the target"
        if kind != "contradiction_fork":
            return None
        if confidence < self.min_fork_confidence:
            return f"confidence {confidence:.2f} below {self.min_fork_confidence:.2f}"
        if value and re.search(rf"\b{re.escape(normalise(value))}\b", normalise(target.content)):
            return f"the value {value!r} is already in the target: not a changed value"
        return None


_NAME = re.compile(r"\b[A-Z][\w'&.-]*")


def _names(subject: str | None) -> list[str]:
    """The capitalised words of a subject ("Tomasz Reyes", "Halden Energy Services"), normalised;
    common words such as "The" are skipped. Lower-case subjects ("the minimum password length") have none."""
    if not subject:
        return []
    out = []
    for m in _NAME.finditer(subject):
        for w in words(m.group(0)):
            if w not in _COMMON and w != "s":
                out.append(w)
    return out


_COMMON = frozenset("the a an our their his her its my your this that of and in at on for to by with "
                    "ceo cfo cto coo vp chief executive officer head".split())


def _content_retry(kind: str, message: str, content: str, tokens: tuple[int, int] | None = None) -> _Retry:
    exc = _Retry(kind, message)
    exc.content = content  # type: ignore[attr-defined]
    exc.tokens = tokens  # type: ignore[attr-defined]
    return exc


def _resolve(target: str | None, labels: dict[str, Candidate]) -> Candidate | None:
    """A candidate by its label (m1, [m1], M1) or by its full id; None if it is not one of them."""
    if not target:
        return None
    t = target.strip().strip("[]()\"'").strip()
    if t.lower() in labels:
        return labels[t.lower()]
    try:
        tid = uuid.UUID(t)
    except ValueError:
        return None
    return next((c for c in labels.values() if c.id == tid), None)


def _clean(s: str | None) -> str | None:
    if s is None:
        return None
    s = s.strip()
    return s[:500] if s and s.lower() not in ("null", "none", "n/a") else None


def _key_text(subject: str | None, relation: str | None, value: str | None) -> str | None:
    return f"{subject} / {relation} = {value}" if subject and relation else None


def _retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) * scale)
        except ValueError:
            continue  # an HTTP date: too far to honour here anyway
    return None


def _small(wait: float | None, limit: float) -> float | None:
    return wait if wait is not None and wait <= limit else None


def _brief(exc: openai.APIStatusError) -> str:
    msg = getattr(exc, "message", None) or str(exc)
    return msg[:300]
