"""The local, deterministic validator: keys first, then sentence frames, then similarity.

A heuristic, stated plainly: it knows nothing of meaning. It reads the structured key when the
write has one; without keys it compares word sequences ("frames") of close neighbours:
- the same words                                  -> duplicate
- the old words, in order, plus more              -> child update (added detail)
- the same frame with one span swapped near the end -> contradiction (a changed value)
- the same names and numbers, high similarity     -> duplicate (a paraphrase)
otherwise a new branch. The LLM validator is the one that understands language."""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Sequence

from .validator import Candidate, Decision, IncomingWrite, normalise, words

_TOKEN = re.compile(r"\w+", re.UNICODE)
_STOP_CAPS = {"the", "a", "an", "it", "this", "that", "these", "those", "there", "our", "their", "his", "her"}


def entities(text: str) -> set[str]:
    """Names and numbers: capitalised words (a sentence-initial article excluded) and digits."""
    out = set()
    for i, tok in enumerate(_TOKEN.findall(text)):
        if tok[0].isdigit() or (tok[0].isupper() and not (i == 0 and tok.lower() in _STOP_CAPS)):
            out.add(tok.casefold())
    return out


def is_extension(old: list[str], new: list[str]) -> bool:
    """True when the new words contain all the old words in order, and more."""
    if len(new) <= len(old):
        return False
    it = iter(new)
    return all(w in it for w in old)


def single_substitution(old: list[str], new: list[str]) -> tuple[int, int, int, int] | None:
    """If `new` is `old` with exactly one span replaced, return (old_start, old_end, new_start, new_end)."""
    ops = [op for op in SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    shared = len(old) - (i2 - i1)
    if shared * 2 < len(old) or (i2 - i1) > 5 or (j2 - j1) > 5:
        return None
    return i1, i2, j1, j2


class RuleValidator:
    name = "rule"
    model = None

    def __init__(self, *, near_similarity: float = 0.55, duplicate_similarity: float = 0.92):
        self.near_similarity = near_similarity
        self.duplicate_similarity = duplicate_similarity

    def decide(self, write: IncomingWrite, candidates: Sequence[Candidate]) -> Decision:
        new_words = words(write.content)
        keyed = [c for c in candidates if c.key_match]
        if write.keyed and keyed and write.value is not None:
            decision = self._by_key(write, new_words, keyed)
            if decision:
                return decision
        near = sorted((c for c in candidates if c.similarity >= self.near_similarity or c.key_match),
                      key=lambda c: -c.similarity)
        for c in near:
            decision = self._by_frame(write, new_words, c)
            if decision:
                return decision
        best = near[0].similarity if near else 0.0
        return Decision("new_branch", None, f"no frame match among {len(near)} near memories "
                        f"(best similarity {best:.2f})", 0.6, self.name)

    def _by_key(self, write: IncomingWrite, new_words: list[str], keyed: Sequence[Candidate]) -> Decision | None:
        differing = [c for c in keyed if c.value is not None and normalise(c.value) != normalise(write.value or "")]
        if differing:
            target = max(differing, key=lambda c: (c.valid_from, c.similarity))
            return Decision("contradiction_fork", target.id,
                            f"same key ({write.subject}, {write.relation}) with a different value: "
                            f"{target.value!r} -> {write.value!r}", 0.95, self.name)
        for c in sorted(keyed, key=lambda c: -c.similarity):
            if is_extension(words(c.content), new_words):
                return Decision("child_update", c.id, "same key and value; the text adds detail", 0.85, self.name)
        target = max(keyed, key=lambda c: c.similarity)
        return Decision("duplicate", target.id,
                        f"same key ({write.subject}, {write.relation}) and value {write.value!r}", 0.9, self.name)

    def _by_frame(self, write: IncomingWrite, new_words: list[str], c: Candidate) -> Decision | None:
        old_words = words(c.content)
        if old_words == new_words:
            return Decision("duplicate", c.id, "same words", 1.0, self.name)
        if c.subject and normalise(c.subject) not in normalise(write.content):
            return None  # a keyed neighbour about another subject is not this write's business
        if is_extension(old_words, new_words):
            return Decision("child_update", c.id, "extends the existing memory with more detail", 0.8, self.name)
        sub = single_substitution(old_words, new_words)
        other_key = (write.keyed and c.subject is not None
                     and (normalise(c.subject), c.relation) != (normalise(write.subject or ""), write.relation))
        if sub is not None and not other_key:  # a different structured key is another fact, not a correction
            i1, i2, j1, j2 = sub
            if i1 * 2 > len(old_words) or i2 == len(old_words):
                value = _span(write.content, j1, j2)
                return Decision(
                    "contradiction_fork", c.id,
                    f"same frame, value changed: {' '.join(old_words[i1:i2])!r} -> {' '.join(new_words[j1:j2])!r}",
                    0.8, self.name,
                    subject=c.subject if c.subject else None,
                    relation=c.relation if c.subject else None,
                    value=value if c.subject else None)
            return None  # the swapped span is at the front: a different subject, not a correction
        if c.similarity >= self.duplicate_similarity and entities(write.content) == entities(c.content):
            return Decision("duplicate", c.id, f"paraphrase (similarity {c.similarity:.2f}, same names and numbers)",
                            0.7, self.name)
        return None


def _span(text: str, start: int, end: int) -> str:
    """The original-case words [start:end) of text, as tokenised by `words`."""
    toks = normalise(text).split()
    lowered = " ".join(toks[start:end])
    # Recover original casing by matching the normalised span inside the original tokens.
    original = _TOKEN.findall(text)
    norm = [normalise(t) for t in original]
    n = end - start
    for i in range(len(norm) - n + 1):
        if " ".join(norm[i:i + n]) == lowered:
            return " ".join(original[i:i + n])
    return lowered
