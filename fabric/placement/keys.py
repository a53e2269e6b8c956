"""One key per fact: when two stored keys name the same subject and the same attribute.

Writers and readers spell keys differently ("PELLUCID SYSTEMS" / "Pellucid Systems", "I" / "User",
"works_for" / "employer", "chief executive" / "ceo"). Two uses:
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


def same_attribute(a: str, b: str) -> bool:
    """Do two relation names mean one attribute of one value at a time (`attribute_of`: "works_for" /
    "employer", "chief executive" / "ceo")? Names outside the lexicon only by name: a qualifier may make
    another attribute ("office_number" beside "phone", "personal_email" beside "email")."""
    found = attribute_of(a)
    return found is not None and found == attribute_of(b)


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


# ----------------------------------------------------------------------------------------- keys of notes

_NAME = r"[A-Z][\w&.-]*(?:\s+(?:[A-Z][\w&.-]*|&|of|de|la|van|von|du))*(?<!\s(?:of|de|la|du))"
_LOWER_NAME = r"[a-z][\w&.-]*(?:\s+[a-z][\w&.-]*){0,3}"
_ACRONYM = r"[A-Z]{2,5}"
_LABEL = rf"(?:{_ACRONYM}|[A-Za-z][a-z-]*)(?:\s+[a-z][a-z-]*){{0,2}}"      # may open the sentence
_INNER_LABEL = rf"(?:{_ACRONYM}|[a-z][a-z-]*)(?:\s+[a-z][a-z-]*){{0,2}}"  # after a name: lower case or an acronym
_COPULA = r"(?:\s+(?:is|are)\s+(?:now\s+)?|\s*[:=]\s+|\s+(?:->|→)\s+)"  # (align.note reads most notes as "is")
_VALUE = r"(?P<value>.+?)"
_VALUE_END = r"(?:\s*(?:\(|,\s|;|\s[-—–]\s|\s(?:since|after|from|as of|until|starting|effective)\s).*)?[.!]?$"
# "Oriel Hotels room count is 2.4k" (notes are read as "X is Y": align.note), "Marrowby's mayor is ..."
_SUBJECT_LABEL = re.compile(rf"^(?P<subject>{_NAME})(?P<owner>['’]s?)?\s+(?P<label>{_INNER_LABEL}){_COPULA}{_VALUE}"
                            + _VALUE_END)
# "Mayor of Marrowby is ...", "Beds at Riverwick Hospital: 495"
_LABEL_OF = re.compile(rf"^(?:The\s+)?(?P<label>{_LABEL})\s+(?:of|at|for|on)\s+(?:the\s+)?(?P<subject>{_NAME})"
                       rf"{_COPULA}{_VALUE}" + _VALUE_END)
# "odalys fennimore - employer: Harrowgate Bank", "Tollbridge Academy — principal: Dr Nkemdirim"
_DASHED = re.compile(rf"^(?P<subject>{_NAME}|{_LOWER_NAME})\s+[-—–]\s+(?P<label>{_LABEL})\s*[:=]\s+{_VALUE}"
                     + _VALUE_END)
# all in lower case: "celandine tech cto is Yevgenia Roth" (the label is the lexicon's, see `_split`)
_LOWER = re.compile(rf"^(?P<head>{_LOWER_NAME}\s+[a-z][a-z-]*(?:\s+[a-z][a-z-]*)?){_COPULA}{_VALUE}" + _VALUE_END)
# words a label is never made of: it names a thing, it does not tell a statement
_NOT_LABEL = frozenset("""is are was were has have had will would can the a an and or to in on at with not no now also
    new old current just still only really""".split())
_LEXICON = frozenset(r.name for r in RELATIONS)
_LIST = re.compile(r",\s+[A-Z]")  # a name after a comma: more values, or more of an address


def _split(head: str) -> tuple[str, str] | None:
    """A lower-case "<subject> <label>": the label is the last one or two words, and a lexicon group."""
    words = head.split()
    for n in (2, 1):
        if len(words) > n and attribute_of(" ".join(words[-n:])) in _LEXICON:
            return " ".join(words[:-n]), " ".join(words[-n:])
    return None


def _label_word(subject: str) -> bool:
    """Is a one-word subject a word of labels ("Phone", "Budget", "Home"), not a name?"""
    from .align import _HOLDER_WORDS
    from .attributes import ATTRIBUTES

    word = subject.casefold()
    return " " not in word and (word in _HOLDER_WORDS or word in _LEXICON or any(a.name == word for a in ATTRIBUTES)
                                or attribute_of(word) in _LEXICON)


def _parts(t: str) -> tuple[str, str, str] | None:
    """(subject, label, value) of a labelled note, or None. Not a value that a name follows after a comma
    (a list, or an address cut short: "Fenella Orr, Ewan Dyce and ...", "Unit 9, Millbay Park")."""
    found: tuple[str, str, str] | None = None
    m = None
    for pattern in (_DASHED, _LABEL_OF, _SUBJECT_LABEL):
        m = pattern.match(t)
        if m is not None and not (pattern is _SUBJECT_LABEL and t.startswith("The ") and not m.group("owner")):
            found = m.group("subject"), m.group("label"), m.group("value")  # ("The Lisbon office": a modifier)
            break
    else:
        m = _LOWER.match(t)
        split = _split(m.group("head")) if m else None
        found = (*split, m.group("value")) if m and split else None
    if found is None or m is None or _LIST.match(t, m.end("value")):
        return None
    return found



def note_key(text: str) -> tuple[str, str, str] | None:
    """The (subject, attribute, value) of a note that labels a value ("Oriel Hotels room count: 2.4k",
    "Mayor of Marrowby: Yusra Pemberton", "odalys fennimore - employer: Harrowgate Bank (since May)"):
    the label names the attribute, by the lexicon's group when it is one ("chief executive" -> ceo),
    else in its own words. The value is a name, a number or an address; not for attributes of many
    values, nor a label that reads as a statement."""
    from .align import _CHANGE, canonical

    parts = _parts(canonical(text))
    if parts is None:
        return None
    subject, label, value = parts[0].strip(), parts[1].lower(), parts[2].strip(" .!")
    if _label_word(subject):
        return None  # "Phone network: Kinsale Telecom": a capitalised label, no subject
    if set(label.split()) & (_NOT_LABEL | _CHANGE) or len(value.split()) > 6:
        return None
    if not re.match(r"[A-Z0-9$€£+]|\S*@", value):
        return None  # a state in words ("is red", "is closed"), not a name, a number or an address
    relation = attribute_of(counted(label))
    return (subject, relation, value) if relation else None


# "Solenne Abiodun is solenne@abiodun.test" (notes are read as "X is Y"): an address or a number says its attribute
_CONTACT = re.compile(rf"^(?P<subject>{_NAME})(?:\s+is|\s*:)\s+(?:now\s+)?"
                      r"(?P<value>\S+@[\w-]+(?:\.[\w-]+)+|\+?\d[\d-]{6,}\d)[.!]?$")
# "Riverwick Hospital has 420 beds", "With the new wing, Riverwick Hospital is up to 560 beds": a count of a thing
_COUNT = re.compile(rf"^(?:[^,]{{1,40}},\s+)?(?:The\s+)?(?P<subject>{_NAME})\s+(?:now\s+|still\s+)?"
                    r"(?:has|have|is up to|is down to)\s+(?:(?:about|around|roughly|nearly|almost|over|some)\s+)?"
                    r"(?P<value>\d[\d,.]*k?)\s+(?P<noun>[a-z]{3,}s)\b")
# "room count", "number of rooms": the things counted
_COUNTED = re.compile(r"^(?:number of (?P<of>[a-z]+s)|(?P<noun>[a-z]+) count)$")


def counted(label: str) -> str:
    """A label of a count, as the things counted ("room count" -> "rooms"), else the label."""
    m = _COUNTED.match(label)
    return (m.group("of") or m.group("noun") + "s") if m else label


def plain_key(text: str) -> tuple[str, str, str] | None:
    """The key of a sentence that names a contact address or number, or counts a thing, where the lexicon
    reads none: (subject, "email" / "phone", value), or (subject, the things counted, the count)."""
    from .align import canonical

    t = canonical(text)
    m = _CONTACT.match(t)
    if m and not _label_word(m.group("subject")):
        return m.group("subject"), "email" if "@" in m.group("value") else "phone", m.group("value")
    m = _COUNT.match(t)
    if m and not _label_word(m.group("subject")) and attribute_of(m.group("noun")) == m.group("noun"):
        return m.group("subject"), m.group("noun"), m.group("value")
    return None


# "Tavish Rowe is a junior analyst", "User is now ward manager - started in May": a job title, no employer named
_HELD_TITLE = re.compile(rf"^(?P<subject>{_NAME})\s+(?:is|has become|became)\s+(?:now\s+)?(?:(?:a|an|the)\s+)?"
                         r"(?P<title>(?:[a-z][a-z-]*\s+){0,3}[a-z][a-z-]*)" + _VALUE_END)


_RANKED = frozenset("best worst only first last youngest oldest favourite favorite".split())


def title_key(text: str) -> tuple[str, str, str] | None:
    """(subject, "job_title", title) of a sentence that gives its subject a title in lower-case words ending
    in a job noun (states._TITLE_HEADS: analyst, manager, nurse ...), at no named employer. For the key
    only: it decides no placement."""
    from .align import canonical
    from .states import _NOT_NOW, _TITLE_HEADS

    t = canonical(text)
    m = _HELD_TITLE.match(t)
    if m is None or _NOT_NOW.search(t) or _label_word(m.group("subject")):
        return None
    title = m.group("title")
    last = title.split()[-1]
    if not _TITLE_HEADS.fullmatch(last) or set(title.split()) & (_NOT_LABEL | _RANKED):
        return None  # ("the best analyst", "the only nurse": praise, not a title)
    return m.group("subject"), "job_title", title
