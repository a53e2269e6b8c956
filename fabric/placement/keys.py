"""One key per fact: when two stored keys name the same subject and the same attribute.

Writers and readers spell keys differently ("PELLUCID SYSTEMS" / "Pellucid Systems", "I" / "User",
"mobile" / "phone" / "number", "elected_mayor" / "mayor"). Two uses:
- the read-time safety net (fabric/read/search.py, `flag_conflicts`) groups live results by
  (`subject_key`, `attribute_of`): one group is one fact, and its later version is the answer;
- a text-only write's key takes the spelling its org already uses for that subject and attribute
  (`borrow_key`), so `current_value` finds every version of a fact under one key.

Never across other subjects (twins, sister companies: only case, spacing, "the" and the first person
are forgiven) nor for attributes of many values (languages, sites, investors, ...)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

from .facts import RELATIONS
from .validator import Candidate, normalise

_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "user", "the user"})
_MULTI = frozenset(r.name for r in RELATIONS if r.multi)


def subject_key(subject: str) -> str:
    """A subject as compared: case, accents, punctuation, a leading "the" and a possessive aside; the
    first person is the user ("I", "my", "the user", "User" are one subject)."""
    s = normalise(re.sub(r"['’]s?$", "", subject.strip()))
    s = re.sub(r"^the ", "", s)
    return "user" if s in _FIRST_PERSON else s


def _snake(relation: str) -> str:
    return "_".join(normalise(relation.replace("_", " ")).split())


@lru_cache(maxsize=4096)
def attribute_of(relation: str) -> str | None:
    """The attribute a stored relation name means: a lexicon group when it is one by name or by its
    words as a whole ("chief executive" -> ceo), else a classifier attribute by name, else the name in
    snake_case. None for an attribute of many values (a subject holds several at once: no conflict)."""
    from .attributes import ATTRIBUTES

    snake = _snake(relation)
    spaced = snake.replace("_", " ")
    for r in RELATIONS:
        if r.name == snake or r.words.fullmatch(spaced):
            return None if r.multi else r.name
    for a in ATTRIBUTES:
        if a.name == snake:
            return None if a.multi else a.name
    return snake or None


_PHONE = re.compile(r"\+?\d[\d\s().-]{5,}\d")
_DATE = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|\d{4}-\d\d-\d\d", re.IGNORECASE)


def value_kind(value: str) -> str:
    """The sort of a stored value, as the attribute classifier sorts them (align._kind)."""
    v = value.strip()
    if "@" in v:
        return "email"
    if _PHONE.fullmatch(v) and len(re.sub(r"\D", "", v)) >= 7:
        return "phone"
    if _DATE.search(v):
        return "date"
    return "number" if re.match(r"[$€£]?\d", v) else "name"


@lru_cache(maxsize=4096)
def meant_attribute(relation: str, kind: str = "name") -> str | None:
    """`attribute_of`, and for a name it leaves as it is, the attribute the classifier reads in
    "X's <relation> is Y" for a value of sort `kind` ("mobile", a phone number -> phone), when it is
    sure; None for many values."""
    from .attributes import classify_frame

    name = attribute_of(relation)
    if name is None or name != _snake(relation):
        return name
    found = classify_frame(f"X's {name.replace('_', ' ')} is Y", kind).attribute
    if found is None:
        return name
    return None if found.multi else found.name


def _head(relation: str) -> tuple[str, frozenset[str]]:
    words = _snake(relation).split("_")
    return words[-1], frozenset(words)


def same_attribute(a: str, b: str, kind: str = "name") -> bool:
    """Do two relation names, with values of sort `kind`, mean one attribute (of one value at a time)?
    By name or lexicon group, by the classifier, or, for names neither knows, one name's words holding
    the other's and both ending on the same noun ("elected_mayor" / "mayor", "after_rename_ticker" /
    "ticker")."""
    ma, mb = meant_attribute(a, kind), meant_attribute(b, kind)
    if ma is None or mb is None:
        return False
    if ma == mb:
        return True
    known = {r.name for r in RELATIONS}
    if ma in known or mb in known or ma != _snake(a) or mb != _snake(b):
        return False  # one of them is a known attribute, and the other is not it
    (ha, wa), (hb, wb) = _head(a), _head(b)
    return ha == hb and (wa <= wb or wb <= wa)


def borrow_key(subject: str, relation: str, candidates: Sequence[Candidate]) -> tuple[str, str]:
    """The key a text-only write's fact is stored under: as a neighbour already spells this subject, and
    under the neighbour's relation name when it means the same attribute (the nearest such neighbour)."""
    mine = subject_key(subject)
    same = [c for c in candidates if c.subject and c.relation and subject_key(c.subject) == mine]
    for c in sorted(same, key=lambda c: -c.similarity):
        assert c.subject is not None and c.relation is not None
        if c.relation == relation or same_attribute(c.relation, relation):
            return c.subject, c.relation
    if same:
        return max(same, key=lambda c: c.similarity).subject or subject, relation
    return subject, relation
