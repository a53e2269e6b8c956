"""States told in lower-case words: a closed list of values per attribute ("vegetarian" / "vegan",
"on hold" / "in active development"). The lexicon in facts.py reads values that are names or
figures; these values are ordinary words, so each attribute lists the words that can hold it.
A subject holds one state of an attribute at a time, so another state of the same subject is a
correction; a state of someone or something else ("her sister is vegan", "sells vegan cakes")
is another fact."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .align import note

# attribute -> (value, the words that state it). One value per subject at a time.
_STATES: dict[str, tuple[tuple[str, str], ...]] = {
    "diet": (
        ("vegan", r"vegan"),
        ("vegetarian", r"vegetarian|veggie"),
        ("pescatarian", r"pesc[ae]tarian"),
        ("omnivore", r"omnivore|omnivorous"),
    ),
    "status": (
        ("on hold", r"on hold|paused|on ice|shelved|frozen|suspended|stalled"),
        ("active", r"(?:in|under) (?:active )?development|actively developed|active|resumed|restarted|unpaused"
                   r"|underway|under way|in progress|back on track"),
        ("cancelled", r"cancell?ed|scrapped|killed|abandoned|discontinued"),
        ("done", r"completed|finished|shipped|wrapped up|(?<=is )done|(?<=now )done"),  # ("Orion migration: done")
        ("maintenance", r"in maintenance(?: mode)?|maintenance mode|deprecated|sunset|sunsetted|end of life"),
    ),
    # only as a preference: "likes tea" beside "likes coffee" is two likes, "prefers" picks one
    "drink": (("tea", r"tea"), ("coffee", r"coffee"), ("hot chocolate", r"hot chocolate")),
}
_ONLY_WITH = {"drink": re.compile(r"\bprefer(?:s|red)?\b|\brather\b")}
# Of two states a sentence names, the one it says holds: "is now in maintenance", "switched to coffee",
# "prefers tea over coffee" (not "would rather not have tea").
_CHOSEN = re.compile(r"(?:\bnow|\b(?:switched|moved|changed|went) to|\bprefer(?:s|red)?|\brather)"
                     r"\s+(?:(?!not\b|no\b)\w+\s+)?$")
_SCOPED = re.compile(r"\b(?:in|at|on|during|after|before|for|with|when|while)\b")
_PATTERN_WORD = re.compile("|".join(w for values in _STATES.values() for _, w in values))
_PATTERNS = {attr: [(value, re.compile(r"\b(?:" + words + r")\b")) for value, words in values]
             for attr, values in _STATES.items()}

# Words between the subject and its state that say nothing of who holds it: "Nikhil Rao went fully
# vegan", "Project Wren has been put on hold", "the user is on a vegetarian diet".
_FILLER = frozenset("""the a an is are am was were be been being has have had become became becomes went gone go
goes turned turns turn got gets get now fully completely entirely strictly back put officially finally again still
currently actually since on to switched switches moved mostly eats eat follows follow keeps keep stays stay
remains remain prefers prefer preferred""".split())
# What may follow the state: the end, a time, or the attribute's own noun ("a vegan diet").
_AFTER = frozenset("""now again in since last this until till for from after as these at anymore today recently
diet lately""".split())
# Time words that qualify nothing: what else follows the state is a qualifier ("tea in the morning").
_NOW = frozenset("now again these days anymore any more lately today recently instead nowadays actually diet".split())
# A state held once, or asked about, is not the subject's state now.
_THEN = re.compile(r"\b(?:used to|formerly|previously|once|until(?! further notice)|till|back then|years ago"
                   r"|growing up|in (?:college|school)|at university|as an? (?:kid|child|teen|teenager|student)"
                   r"|when (?:he|she|they|i|we) (?:was|were))\b|\?")
_NEGATED = re.compile(r"\b(?:not|never|no longer)\b|n['’]t\b")
_ATTR_NOUNS = re.compile(r"(?:['’]s)?\s+\b(?:diet|status)\b")


@dataclass(frozen=True, slots=True)
class State:
    attribute: str
    value: str
    subject: str          # the words before the state, fillers dropped ("nikhil rao", "project kite")
    read: bool            # of the subject alone, as of now (no noun after it, no other verb, no 'used to')
    qualifier: str = ""   # the words after it ("in the morning"), time words of now dropped
    lower_case: bool = True  # an open value (a town) the lexicon cannot read: written in lower case
    chosen: bool = False     # one of two states the sentence names (what it says of the other, "not", is not its)


# A home town written in lower case ("i moved to leeds"): the lexicon (facts.py) reads a place only
# by its capital, so a chat typed in lower case is read here, by the verb, one word after it.
_HOME = re.compile(r"\b(?:live|lives|living|based|settled|relocated|moved)\s+(?:in|to)\s+([\w-]+)")
_NOT_PLACE = frozenset("""the a an my his her their our your this that new another same different other town city
country house flat apartment home area suburbs countryside village abroad there here with
sales marketing engineering support finance legal ops operations product design research management remote nights
days mornings evenings weekends python rust go java vim emacs linux mac windows android iphone it hr""".split())


# "Project Kite" / "Kite": a generic noun before a name is no part of the subject (facts.name_key drops it too)
_GENERIC = frozenset("project projects programme program initiative operation".split())


# First person and "the user" are one holder in a chat memory ("btw i'm vegan now" / "the user is vegetarian");
# "we" is another, the team (align.canonical writes them "User" and "Team" for the lexicon).
_DISCOURSE = frozenset("btw fyi oh ok okay so also update heads up well anyway hey honestly just note".split())
_HOLDERS = {"i": "user", "me": "user", "user": "user", "we": "team", "our team": "team", "my team": "team"}


def _holder(words: list[str]) -> str:
    """The subject's words, the first person and "user" written "user", a chat's opening word ("btw") dropped."""
    while len(words) > 1 and words[0] in _DISCOURSE:
        words = words[1:]
    said = " ".join(words)
    return _HOLDERS.get(said, said)


def _subject(before: list[str], said: str) -> str:
    """The state's holder: the words before it, fillers dropped; in "X shipped and is now in maintenance",
    the words before the first verb of the clause."""
    words = [w for w in before if w not in _FILLER]
    first = [w for w in re.findall(r"[\w'’-]+", said.split(" and ")[0]) if w not in _FILLER]
    if " and " in said and len(first) > 1 and _PATTERN_WORD.fullmatch(first[-1]):
        words = first[:-1]  # (not "Omar and Lea are vegan": two holders)
    while len(words) > 1 and words[0] in _GENERIC:
        words = words[1:]
    return _holder(words)


@lru_cache(maxsize=16384)
def state(text: str) -> State | None:
    """The one state the sentence tells, if it tells a state of one attribute; None if none, or two."""
    text = note(text)  # "Orion migration: done ✅" -> "Orion migration is done"
    text = re.sub(r"\b([iI])['’]m ", r"\1 am ", text)
    text = re.sub(r"\b([wW]e)['’]re ", r"\1 are ", text)
    homes = list(_HOME.finditer(text))
    if len(homes) == 1 and homes[0].group(1).lower() not in _NOT_PLACE:
        m, low = homes[0], text.lower()
        before = re.findall(r"[\w'’-]+", low[:m.start()])
        subject = _holder([w for w in before if w not in _FILLER])
        after = re.findall(r"[\w'’-]+", low[m.end():])
        read = bool(subject) and (not after or after[0] in _AFTER) and not _THEN.search(low) \
            and not _NEGATED.search(low)
        return State("home", m.group(1).lower(), subject, read, " ".join(w for w in after if w not in _NOW),
                     lower_case=m.group(1).islower())
    low = _ATTR_NOUNS.sub("", text.lower())
    for attr, patterns in _PATTERNS.items():
        found = [(value, m) for value, p in patterns for m in p.finditer(low)]
        if not found or (attr in _ONLY_WITH and not _ONLY_WITH[attr].search(low)):
            continue
        two = len({value for value, _ in found}) > 1
        if two:
            # "shipped and is now in maintenance mode": the one said to hold now; else which is the subject's?
            found = [(value, m) for value, m in found if _CHOSEN.search(low[:m.start()])]
            if len({value for value, _ in found}) != 1:
                return None  # "paused for the holidays, but … active"
            spans = sorted(m.span() for p in patterns for m in p[1].finditer(low))
            if _SCOPED.search(low[spans[0][1]:spans[-1][0]]):
                return None  # "tea in the morning and coffee after lunch": each holds at its time
        value, m = min(found, key=lambda f: f[1].start())
        before = re.findall(r"[\w'’-]+", low[:m.start()])
        subject = _subject(before, low[:m.start()])
        after = [] if two else re.findall(r"[\w'’-]+", low[m.end():])  # (what follows: the other state)
        read = bool(subject) and (not after or after[0] in _AFTER) and not _THEN.search(low)
        return State(attr, value, subject, read, " ".join(w for w in after if w not in _NOW), chosen=two)
    return None


# ------------------------------------------------------------------------------------------- a job title

# A job title is an open value, often in lower-case words ("head of data", "senior backend engineer"): the
# lexicon reads names, so a title is read here by the frames that state one. "X is a <title> at Y" also
# says where X works; it is read as a title only when the title ends in a noun of this class.
_TITLE_HEADS = re.compile(r"\b(?:engineer|developer|manager|director|head|lead|vp|president|officer|analyst"
                          r"|designer|scientist|architect|consultant|specialist|coordinator|administrator|chief"
                          r"|associate|intern|editor|producer|strategist|researcher|accountant|counsel"
                          r"|controller|principal|partner|recruiter|marketer|owner|technician|nurse|teacher|professor|lecturer"
                          r"|chef|barista|clerk|representative|agent)s?\b", re.IGNORECASE)
_NAME = r"[A-Z][\w'’.&-]*(?:\s+[A-Z][\w'’.&-]*)*"
_ROLE = r"(?P<role>(?:[\w-]+\s+){0,4}?[\w-]+)"
_DET = r"(?:(?:a|an|the|its|their|his|her)\s+)?"
_END = r"\s*(?:now|these days|today)?\s*[.!]?\s*$"
_ROLE_FRAMES = tuple(re.compile(p) for p in (
    # "X is (now) a backend engineer at Y", "X works as the head of data for Y"
    rf"^(?P<s>{_NAME})\s+(?:is|works as|serves as|became|has become)\s+(?:now\s+)?{_DET}{_ROLE}\s+"
    rf"(?:at|of|for|with)\s+(?P<o>{_NAME}){_END}",
    # "Y made X its VP of Analytics", "Y promoted X to senior engineer", "Y named X head of sales"
    rf"^(?P<o>{_NAME})\s+(?:made|named|appointed|promoted)\s+(?P<s>{_NAME})\s+(?:to\s+|as\s+)?{_DET}{_ROLE}{_END}",
    # "X's title is now Staff Engineer", "X's job title at Y is ..."
    rf"^(?P<s>{_NAME})['’]s?\s+(?:job\s+)?(?:title|role|position)(?:\s+at\s+(?P<o>{_NAME}))?\s+is\s+(?:now\s+)?"
    rf"{_DET}{_ROLE}{_END}",
    # "X was promoted to senior engineer (at Y)", "X got promoted to ..."
    rf"^(?P<s>{_NAME})\s+(?:was|has been|got|is now)\s+(?:promoted|appointed|named)\s+(?:to\s+|as\s+)?{_DET}{_ROLE}"
    rf"(?:\s+(?:at|of)\s+(?P<o>{_NAME}))?{_END}",
))
_NOT_NOW = re.compile(r"\b(?:former|formerly|previously|used to|not|no longer|never|also|too|interim|acting)\b"
                      r"|n['’]t\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Title:
    subject: str   # the person, compared form
    title: str     # lower-case words
    org: str       # where, compared form ("" when the sentence does not say)
    written: str   # the subject as written


@lru_cache(maxsize=16384)
def title(text: str) -> Title | None:
    """The job title one sentence gives a person now, if it gives one in a frame of `_ROLE_FRAMES`."""
    if _NOT_NOW.search(text):
        return None
    for n, frame in enumerate(_ROLE_FRAMES):
        m = frame.match(text.strip())
        if m is None:
            continue
        role = m.group("role")
        if n == 0 and not _TITLE_HEADS.search(role):
            return None  # "X is a regular at Y": no job
        org = m.group("o") or ""
        return Title(_key(m.group("s")), " ".join(role.lower().split()), _key(org), m.group("s"))
    return None


def _key(name: str) -> str:
    return " ".join(name.casefold().replace("’", "'").removesuffix("'s").rstrip(".").split())
