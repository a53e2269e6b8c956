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
(the same value under another attribute is not a correction), when the old value it names is not in
the target or is the new value (a small model "corrects" a value the target never stated), or when the
new sentence says outright that it adds a value ("also", "another"), or when the old value it names is
the subject ("X mentors Y" read as a correction of "Y mentors X"). A duplicate whose subject names are
not in the target is a new branch too: refusing it would lose a fact. A correction or a repeat is also
refused when the two sentences, read by the model's own subject and values, state other attributes
(their masked relation phrases are far apart: "X's birthday dinner is booked at Y" / "X is learning
to play the Y"), and, rules first, when it names a neighbour the rules read for sure as a separate
fact. Both stay live instead, and the read-time safety net and an admin replay can still resolve them.

Other HTTP errors (401, 400, 404...) are not retried: asking again will not help.

Rules first (`rules`, set by `from_settings`): the local rule validator is asked before the model,
and its decision stands, with no request, when it rests on something it reads for sure: the write's
structured key, or the statements of both sentences (read by the lexicon or aligned,
`RuleValidator.verdict`) comparing as the decided kind ("separate" for a new branch). Only the
writes the rules cannot read go to the model: one request at most per write, and none for what the
rules settle. A "separate" reading that is only the alignment's similarity threshold on a reworded
relation (same subject, one value swapped: `borderline`) is not sure either: the model is asked.

Canonical keys: a text-only write the model placed gets the key the rules read in its sentence when
they read one (the lexicon's relation name, or the name a neighbour already uses for it); a
correction of a keyed memory takes that memory's subject and relation; otherwise the model's relation
is mapped onto a lexicon name when its words are one of the lexicon's wordings ("chief_executive" ->
"ceo"), or onto a neighbour's relation of the same spelling, and kept in snake_case."""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Sequence

import openai
from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from ..errors import ConfigurationError, ValidatorError
from . import prompts
from .align import _CHANGE, _STOP, canonical, compare_aligned, read, relation_similarity
from .facts import RELATIONS, compare, extract
from .rules import RuleValidator, with_text_keys
from .validator import Candidate, Decision, IncomingWrite, normalise, words

# Below this confidence a contradiction_fork is not applied. A starting point, not calibrated against
# the real model yet: calibrate it on the tune split only (fabric bench validators --llm --split tune).
MIN_FORK_CONFIDENCE = 0.6
# A change the model names (a correction, a repeat) must be between sentences that state one attribute:
# with the subject and the two values it names masked, the two relation phrases' embeddings at least
# this close. "X's birthday dinner is booked at Y" / "X is learning to play the Y": 0.30; "X drives Y" /
# "X keeps Y at home": 0.46; "X lives in Y" / "home for X is Y": 0.57; "Y is the chief executive of X" /
# "X is led by CEO Y": 0.74 (all-MiniLM-L6-v2; from the few-shot examples and the stream's misses).
MIN_RELATION_SIMILARITY = 0.5

log = logging.getLogger(__name__)


class LLMAnswer(BaseModel):
    """The structured answer the model must give (its JSON schema is sent as response_format).

    The fields are in the order the model writes them (the server's grammar follows the schema):
    it reads the new memory's key, finds the memory about the same attribute of the same subject and
    the value that one states, and explains, before it names the kind."""

    model_config = ConfigDict(extra="forbid")

    subject: str | None
    relation: str | None
    value: str | None
    target: str | None
    target_value: str | None
    reason: str
    kind: Literal["duplicate", "child_update", "contradiction_fork", "new_branch"]
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
    ruled: int = 0              # decide() calls the rules settled (no request)
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
            d = {k: getattr(self, k) for k in ("decisions", "ruled", "calls", "retries", "failures", "prompt_tokens",
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
                 min_fork_confidence: float = MIN_FORK_CONFIDENCE, rules: RuleValidator | None = None,
                 near_similarity: float = 0.55, min_relation_similarity: float = MIN_RELATION_SIMILARITY):
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
        self.min_relation_similarity = min_relation_similarity
        self.rules = rules  # asked first; None: the model decides every write
        self.near_similarity = near_similarity
        # max_retries=0: the client must not retry behind our back (one retry layer).
        self.client = client or openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
        self.stats = LLMStats()
        self._format = response_format()
        # The rules' learned second opinion on what the pre-gate or the rules leave a new branch; from_settings.
        self.learned_opinion: RuleValidator | None = None

    @classmethod
    def from_settings(cls, settings: Any, *, rules_first: bool = True) -> LLMValidator:
        missing = [env for env, value in (("OPENAI_BASE_URL", settings.openai_base_url),
                                          ("FABRIC_LLM_MODEL", settings.llm_model),
                                          ("OPENAI_API_KEY", settings.openai_api_key)) if not value]
        if missing:
            raise ConfigurationError(
                f"the LLM validator needs {', '.join(missing)} (any non-empty OPENAI_API_KEY for a local "
                f"endpoint); or set FABRIC_VALIDATOR=rule")
        rules = None
        if rules_first:
            rules = RuleValidator(near_similarity=settings.near_similarity,
                                  duplicate_similarity=settings.duplicate_similarity)
        validator = cls(base_url=settings.openai_base_url, api_key=settings.openai_api_key, model=settings.llm_model,
                        timeout=settings.llm_timeout, max_attempts=settings.llm_max_attempts, rules=rules,
                        near_similarity=settings.near_similarity)
        if settings.learned_second_opinion:
            validator.learned_opinion = RuleValidator(near_similarity=settings.near_similarity,
                                                      duplicate_similarity=settings.duplicate_similarity,
                                                      second_opinion=True)
        return validator

    def reconsider(self, write: IncomingWrite, decision: Decision, candidates: Sequence[Candidate]) -> Decision:
        """A new branch of the pre-gate ("nothing near" by similarity) or of the rules asked first gets the rules'
        learned second opinion, as with the rule validator, with no request; what the model decided stands."""
        if self.learned_opinion is None or decision.validator not in ("pregate", "rule"):
            return decision
        return self.learned_opinion.reconsider(write, decision, candidates)

    # ------------------------------------------------------------------ deciding

    def decide(self, write: IncomingWrite, candidates: Sequence[Candidate]) -> Decision:
        cands = list(candidates)
        if not cands:
            return Decision("new_branch", None, "no candidates", 1.0, self.name, model=self.model)
        if self.rules is not None:
            ruled = self.rules.decide(write, cands)
            if rules_are_sure(self.rules, write, cands, ruled, near_similarity=self.near_similarity):
                self.stats.add(ruled=1)
                return ruled
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
        if ans.kind != "new_branch" and _clean(ans.target) is None:
            # No memory named: the model found none about the same attribute (it writes the target
            # before the kind). Not sure what to supersede or refine: keep both live.
            unsure = Decision("new_branch", None,
                              f"{ans.kind} not applied: no target named (model said: {ans.reason})"[:500],
                              min(1.0, max(0.0, float(ans.confidence))), self.name, model=self.model, called=True)
            return text_key(write, unsure, list(labels.values()), _clean(ans.subject), _clean(ans.relation),
                            _clean(ans.value))
        if ans.kind != "new_branch":
            target = _resolve(ans.target, labels)
            if target is None:
                raise _content_retry("unknown_target", f"target {ans.target!r} is not one of the candidates "
                                                       f"({', '.join(labels)}); refused", content)
        confidence = min(1.0, max(0.0, float(ans.confidence)))
        kind, reason = ans.kind, (ans.reason or "").strip()[:500] or "(no reason given)"
        # a keyed write is about its own key; a text-only one about what the model read in it
        said = (write.subject, write.value) if write.keyed else (_clean(ans.subject), _answer_value(ans.value))
        doubt = self._doubt(kind, confidence, *said, target, write.content, _answer_value(ans.target_value),
                            write.keyed) or self._separate(write, kind, target) or self._other_attribute(
            write, kind, target, _clean(ans.subject), _answer_value(ans.value), _answer_value(ans.target_value))
        if doubt:
            log.info("llm decision not applied", extra={"action": "llm_unsure", "write_id": str(write.id),
                                                        "decision": kind, "doubt": doubt})
            kind, target, reason = "new_branch", None, f"{kind} not applied: {doubt} (model said: {reason})"[:500]
        decision = Decision(kind=kind, target_id=target.id if target else None, reason=reason,
                            confidence=confidence, validator=self.name, model=self.model, called=True)
        if write.keyed:
            return decision
        return text_key(write, decision, list(labels.values()), _clean(ans.subject), _clean(ans.relation),
                        _clean(ans.value))

    def _doubt(self, kind: str, confidence: float, subject: str | None, value: str | None,
               target: Candidate | None, content: str = "", target_value: str | None = None,
               write_keyed: bool = False) -> str | None:
        """Why a destructive decision (an invalidation, or refusing the write) should not be applied.

        A correction must be one the model can point at: the old value it names is in the target and
        differs from the new one (a small model "corrects" a guitar the target never mentioned), and the
        new sentence does not say outright that it adds a value ("also", "another"). A repeat must state
        nothing the target lacks: no name or number of its own, and the value the model read in it is
        in the target ("thanked Ravi Iyer for the help with Harrow" repeats no "is mentoring")."""
        if target is None or kind not in ("contradiction_fork", "duplicate"):
            return None
        target_words = set(words(target.content + " " + (target.subject or "")))
        missing = [n for n in _names(subject) if n not in target_words]
        if missing:
            return f"the new memory is about {subject!r}, and {', '.join(missing)!r} is not in the target"
        if kind == "duplicate":
            # Refusing a write loses its content: a repeat states nothing the target lacks.
            extra = _new_names(content, target.content + " " + (target.subject or ""))
            if extra:
                return f"the new sentence names {', '.join(extra)!r}, which the target does not: not a repeat"
            if value and not write_keyed and not _all_stated(value, target.content + " " + (target.value or "")):
                return f"the value {value!r} is not in the target: not a repeat"
            return None
        if kind != "contradiction_fork":
            return None
        if confidence < self.min_fork_confidence:
            return f"confidence {confidence:.2f} below {self.min_fork_confidence:.2f}"
        if value and re.search(rf"\b{re.escape(normalise(value))}\b", normalise(target.content)):
            return f"the value {value!r} is already in the target: not a changed value"
        if target_value is None:
            return "no old value named"
        if value and normalise(value) == normalise(target_value):
            return f"the old value it names is the new one ({value!r}): not a changed value"
        if subject and normalise(subject) == normalise(target_value):
            return f"the old value it names is the subject ({subject!r}): the roles, not a value, changed"
        if not _stated_in(target_value, target.content, most=True):
            return f"the old value it names ({target_value!r}) is not in the target"
        if read(content).also and not read(target.content).also:
            return "the new memory adds a value outright (also / another): it replaces none"
        return None

    def _other_attribute(self, write: IncomingWrite, kind: str, target: Candidate | None, subject: str | None,
                         value: str | None, target_value: str | None) -> str | None:
        """Why a correction or a repeat the model names is not applied: the two sentences, read by the
        model's own subject and values, state other attributes (the model "corrects" where a person's
        birthday dinner is booked with the instrument they are learning). Without the model's values in
        the sentences there is no reading to check (a keyed write is about its own key)."""
        if target is None or kind not in ("contradiction_fork", "duplicate") or write.keyed:
            return None
        if kind == "duplicate":
            target_value = target_value or value
        if not (subject and value and target_value):
            return None
        old, new = relation_phrase(target.content, subject, target_value), relation_phrase(write.content, subject,
                                                                                            value)
        if old is None or new is None:
            return None
        similarity = relation_similarity(old, new)
        if similarity < self.min_relation_similarity:
            return (f"another attribute: {old!r} / {new!r} (relation similarity {similarity:.2f} < "
                    f"{self.min_relation_similarity:.2f})")
        return None

    def _separate(self, write: IncomingWrite, kind: str, target: Candidate | None) -> str | None:
        """Why a change the model names between the write and its target is not applied: the rules read
        the two sentences as separate facts (another attribute or another subject, by the lexicon or the
        names), which the model does not overrule. A "separate" that is only the alignment's threshold on a
        reworded relation (`borderline`) is the model's to settle. A keyed write is about its own key."""
        if self.rules is None or target is None or kind == "new_branch" or write.keyed:
            return None  # (the model alone decides every pair: nothing read by the rules to hold it to)
        if self.rules.verdict(write, target) == "separate" and not borderline(write, target):
            return "the rules read the two sentences as separate facts (another attribute or subject)"
        return None


def rules_are_sure(rules: RuleValidator, write: IncomingWrite, candidates: Sequence[Candidate],
                   decision: Decision, *, near_similarity: float) -> bool:
    """Does the rule validator's decision rest on what it reads for sure: the write's structured key
    matching a candidate's, or the two statements (read by the lexicon or aligned) comparing as the
    decided kind? A new branch is sure when every near candidate states another fact ("separate");
    one the rules cannot read ("unknown") is not."""
    if write.keyed and any(c.key_match for c in candidates):
        return True
    if decision.kind == "new_branch":
        near = [c for c in candidates if c.similarity >= near_similarity or c.key_match]
        return bool(near) and all(rules.verdict(write, c) == "separate" and not borderline(write, c) for c in near)
    target = next((c for c in candidates if c.id == decision.target_id), None)
    if target is None:
        return False
    verdict = rules.verdict(write, target)
    # in_time: a repeat valid from before the memory it repeats is kept as that fact's history
    history = verdict == "duplicate" and decision.kind == "contradiction_fork" and write.valid_from < target.valid_from
    return verdict == decision.kind or history


def borderline(write: IncomingWrite, c: Candidate) -> bool:
    """Is a "separate" reading only a threshold call? The alignment found the same subject with one value
    swapped and the relation in other words, and calls it another attribute because the two masked
    phrases' embeddings fall under its similarity bar ("ships for" / "shipping fee"): the rules cannot
    tell a rewording from another attribute there, so the model is asked. A separate reading the
    lexicon made itself, or one resting on names (a twin, a relative, another subject), stays sure."""
    if write.keyed:
        return False
    new, old = extract(write.content, c.content), extract(c.content, write.content)
    if new is not None and old is not None and compare(old, new) == "separate":
        return False
    aligned = compare_aligned(c.content, write.content, relation_similarity, c.similarity)
    return aligned.verdict == "separate" and not aligned.veto and aligned.why.startswith("another relation")


def text_key(write: IncomingWrite, decision: Decision, candidates: Sequence[Candidate], subject: str | None,
             relation: str | None, value: str | None) -> Decision:
    """The key a text-only write placed by the model carries: the rules' reading of its sentence when
    they have one; the corrected memory's subject and relation for a correction; else the model's, its
    relation mapped to the org's name for that attribute. A refinement or a duplicate carries none: the
    memory it refines holds the key."""
    if decision.kind in ("duplicate", "child_update"):
        return decision
    ruled = with_text_keys(write, decision, candidates)
    if ruled.subject is not None:
        return ruled
    target = next((c for c in candidates if c.id == decision.target_id), None)
    if target is not None and target.subject and target.relation and value:
        return replace(decision, subject=target.subject, relation=target.relation, value=value)
    if subject is None or relation is None:
        return decision
    return replace(decision, subject=subject, relation=canonical_relation(relation, candidates), value=value)


def canonical_relation(relation: str, candidates: Sequence[Candidate] = ()) -> str:
    """One name per attribute: a relation a neighbour already uses in the same spelling, else a lexicon
    group whose name it is or whose wording it is as a whole ("chief executive" -> "ceo", "residence" ->
    "home_city", not "head of sales" -> "ceo"), else the model's words in snake_case."""
    snake = "_".join(words(relation.replace("_", " ")))
    for c in candidates:
        if c.relation and "_".join(words(c.relation.replace("_", " "))) == snake:
            return c.relation
    spaced = snake.replace("_", " ")
    for r in RELATIONS:
        if r.name == snake or r.words.fullmatch(spaced):
            return r.name
    return snake[:200] or relation


def relation_phrase(text: str, subject: str, value: str) -> str | None:
    """The sentence's relation in its content words, with the subject as X and the value as Y ("X
    birthday dinner booked Y"); None when the value or the subject is not in it (a value the model
    worked out, "an hour later": nothing to read). Numbers and times compare as written by `canonical`."""
    text = f" {normalise(canonical(text))} "
    for part, mark in ((value, "Y"), (subject, "X")):
        whole = normalise(canonical(part))
        if whole and f" {whole} " in text:
            text = text.replace(f" {whole} ", f" {mark} ")
            continue
        telling = [w for w in whole.split() if w not in _STOP and len(w) > 1]
        if not telling or not all(f" {w} " in text for w in telling):
            return None
        for w in telling:
            text = text.replace(f" {w} ", f" {mark} ")
    return " ".join(w for w in text.split() if w not in _STOP and w not in _CHANGE)


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


def _new_names(content: str, target: str) -> list[str]:
    """The names (capitalised words after the first) and numbers of a sentence that the target does not
    state, give or take inflection and how a number is written ("6pm" / "6 in the evening", "€72k" /
    "72,000 euros", "8 am" / "8:00")."""
    out = []
    for tok in content.split()[1:]:
        if _NAME.match(tok):
            out += [w for w in words(tok) if w not in _COMMON and w != "s" and not _stated_in(w, target)
                    and w not in out]
    have = _numbers(target)
    out += [f"{n:g}" for n in sorted(_numbers(content) - have - {0})]
    return out


_NUMBER = re.compile(r"(\d+(?:,\d{3})*(?:\.\d+)?)(k\b)?", re.I)


def _numbers(text: str) -> set[float]:
    return {float(m.group(1).replace(",", "")) * (1000 if m.group(2) else 1)
            for m in _NUMBER.finditer(canonical(text))}


def _all_stated(value: str, text: str) -> bool:
    """Every telling word of the value is in the text ("search module" is not in "the billing module");
    "first Monday of each quarter" is in "first Monday of the quarter"."""
    plain = [w for w in words(canonical(value)) if w not in _FUNCTION and not any(ch.isdigit() for ch in w)]
    return all(_stated_in(w, text) for w in plain) and _numbers(value) - {0} <= _numbers(text)


_FUNCTION = frozenset("each every per all any some this these those from into onto over under about than "
                      "then now also one".split())


def _stem(w: str) -> str:
    return w[:5] if w.isalpha() else w


def _stated_in(value: str, text: str, *, most: bool = False) -> bool:
    """Does the text state the value, give or take inflection ("Tuesday" / "Tuesdays") and the way a
    number or time is written ("nine" / "9", "10am" / "10:00")? At least one of its telling words, or
    with `most` all but one in three of them (an old value the model took from another memory can share
    one word with the target: "Atlas reporting module" beside "the help with Atlas")."""
    have = {_stem(w) for w in words(canonical(text))}
    telling = [w for w in words(canonical(value)) if w not in _COMMON and len(w) > 1 or w.isdigit()]
    if not telling:
        return True
    found = sum(_stem(w) in have for w in telling)
    return found >= len(telling) - len(telling) // 3 if most else found > 0


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


def _answer_value(s: str | None) -> str | None:
    """A value as the model gave it, without the key it may copy from the prompt's "(key: S / rel = V)"
    hint ("birthday_dinner_booked = Casa Lume"): the guards read the value in the sentence, not the key."""
    s = _clean(s)
    return _clean(s.rsplit(" = ", 1)[1]) if s and " = " in s else s


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
