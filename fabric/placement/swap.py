"""A value in lower-case words swapped for another: "sings alto" / "sings soprano", "is in beta" / "has been
generally available since 1 April", "dairy milk" / "switched to oat milk", "rehearses on Mondays" /
"rehearsals: Thursdays, 7pm".

The lexicon and the alignment read values that are names or figures; here the two sentences share their
subject and every other name, and differ in one span of ordinary words (or one day of the week):

1. Tokens: the sentence's content words in order, the subject as X and its other names as themselves; grammar,
   words of change and chat fillers ("btw") dropped. A date after "since" / "as of" in the new sentence says
   when the new value began, not what it is; a clock time beside a day is the day's detail ("Thursdays, 7pm").
2. One span differs (SequenceMatcher over stems). The old verb a verb of change took the place of is dropped
   ("takes dairy milk" / "has switched to oat milk"). A span right after the subject with more words after it
   is the verb ("rehearses" / "practises", "is written in"): a rewording, not a value; so is a span right before
   a name ("is named Biscuit" / "called Biscuit"). "X is ..." beside "X <verb> ..." is another construction
   (maybe the roles reversed: "a subsidiary of Y" / "Y owns X"), read only for two values of one scale.
3. A value, not a synonym: the two spans are apart by the embedding model ("big" / "large" are near).
4. Then: a change said (samefact's words of change) is a correction, unless the attribute holds many values
   (hobbies, pets, languages) and only an adverb ("now") says it; with no change said, only a value of a scale
   that holds one at a time (a voice part, a level, a release stage, a shift, a meeting day) in a frame
   otherwise the same word for word. Any other swapped value is `APART`: never a duplicate, never a fork.

The guards of attributes.compare apply first (a negation, a relative, "also", the past, a hypothetical), and a
new sentence in the past tense the old one is not in ("was a senior designer") is no correction.

`breakup` reads a couple told apart: "A's partner is B" / "A and B broke up; A is with C now"."""

from __future__ import annotations

import re
from dataclasses import replace
from difflib import SequenceMatcher
from functools import lru_cache

from .align import _CHANGE, _STOP, Anchor, Reading, _phrase_vectors, read, stem
from .attributes import _HYPOTHETICAL, Same, _dated, _guarded, classify_frame, frame
from .samefact import _CHANGE_CUE, _spelled, _subject, day

APART = "separate"

# Spans closer than this by the embedding model are one value in other words ("big" / "large": 0.81, "car" /
# "automobile": 0.86); values of one kind sit lower ("red" / "blue": 0.73, "alto" / "soprano": 0.39).
SYNONYM = 0.78
# The same sentence with one span for the other: synonyms stay at 0.95 and above ("near" / "close to": 0.99,
# "tiny" / "small": 0.96); another value falls below ("on Mondays" / "on Thursdays": 0.92, "beagle" / "spaniel": 0.80).
SAME_SENTENCE = 0.95

# Chat fillers that say nothing of the fact.
_FILLER = frozenset("btw fyi ps ok okay so update heads-up note correction actually well oh just".split())
# Scales whose values a subject holds one at a time: a swap of two of them is a correction with no word of change.
_SCALES = [
    {"soprano", "mezzo", "mezzo-soprano", "alto", "contralto", "countertenor", "tenor", "baritone", "bass"},
    {"beginner", "novice", "intermediate", "advanced", "expert", "elementary", "fluent", "native", "basic",
     "conversational", "junior", "mid-level", "senior", "lead", "principal"},
    {"alpha", "beta", "preview", "private preview", "public preview", "early access", "generally available", "ga",
     "stable", "release candidate", "deprecated", "sunset", "end of life", "retired", "live", "general availability"},
    {"nights", "night", "days", "day", "mornings", "evenings", "afternoons", "earlies", "lates", "night shifts",
     "day shifts", "night shift", "day shift", "early shifts", "late shifts", "early shift", "late shift",
     "weekends", "weekdays"},
    {"single", "married", "engaged", "divorced", "widowed", "separated"},
    {"ordered", "dispatched", "shipped", "in transit", "transit", "out for delivery", "delivered", "returned", "lost"},
    {"daily", "weekly", "fortnightly", "monthly", "quarterly", "yearly", "annually", "every two weeks",
     "every other week", "twice weekly"},
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"},
]
_WORD = re.compile(r"[a-z][a-z'-]*|\d[\d:.,]*")
_STARTED = re.compile(r"\b(?:since|as of|from|starting|effective)\s+$")
# The old verb a verb of change stands in for: "X has switched to Y", "X moved to Y".
_CHANGE_VERB = re.compile(r"\b(?:switch(?:ed|es)?|chang(?:ed|es)|mov(?:ed|es)|went|gone|upgraded|downgraded"
                          r"|transferred)\b")


@lru_cache(maxsize=4096)
def compare(old_text: str, new_text: str) -> Same | str | None:
    """A correction (a `Same` with verdict contradiction_fork) when the two sentences differ in one value of
    ordinary words; `APART` when they do, but it may not be a correction; None when they do not."""
    old, new = _dated(read(old_text, new_text)), _dated(read(new_text, old_text))
    found = _subject(old, new)
    unnamed = found is None and not old.anchors and not new.anchors  # "our office dog is a beagle"
    if found is None and not unnamed or old.event or new.event:
        return None
    subject = found[0] | found[1] if found else set()
    was, now = _tokens(old, subject), _tokens(new, subject)
    if unnamed and not _named_by_words(was, now):
        return None
    copula = _copula(old, subject)
    reframed = copula != _copula(new, subject)  # "X works nights" / "X is on day shifts now"
    span = _one_span(was, now, _changed_verb(new) or reframed, copula)
    if span is None or reframed and not (_one_scale(*span[:2]) or _changed_verb(new)):
        return None  # "X is a subsidiary of Y" / "Y owns X": another construction, maybe the roles reversed
    a, b, same_frame = span
    if _synonyms(old, a, b) or _kept_apart(old, new, (old_text, new_text)) or _clause_apart(old, a) \
            or _clause_apart(new, b) \
            or _named_right_after(old, new, a, b, subject) \
            or bool(_PAST.search(new.text)) > bool(_PAST.search(old.text)):  # "X was a senior designer": then
        return None
    said = _says_change(old_text, new_text)
    many = not _one_scale(a, b) and _many(old, new, subject, a, b)
    if said and (not many or _changed_verb(new)):
        return _fork(new, subject, new_text, a, b, "a change said")
    if not said and same_frame and _one_scale(a, b):
        return _fork(new, subject, new_text, a, b, "two values of a scale held one at a time")
    return APART


# Verbs of things held many at a time: "has a dog" beside "has a cat", "plays tennis" beside "plays golf".
_MANY_VERB = re.compile(r"\b(?:has|have|owns?|got|keeps?|plays?|enjoys?|likes?|loves?|speaks?|collects?|visited"
                        r"|studies|learns?|learning|does|goes to)\s+$")


def _many(old: Reading, new: Reading, subject: set[str], a: list[str], b: list[str]) -> bool:
    """Does the value take many at once: a verb of many before it, or an attribute of many values read in both?"""
    for r, v in ((old, a), (new, b)):
        at = _at(r, v)
        if at and _MANY_VERB.search(r.text[:at[0]]):
            return True
    if not subject:
        return False
    was, now = classify_frame(_masked(old, subject, a)).attribute, classify_frame(_masked(new, subject, b)).attribute
    return was is not None and was is now and was.multi


def _at(r: Reading, value: list[str]) -> tuple[int, int] | None:
    m = re.search(r"\b" + r"\b.*?\b".join(map(re.escape, value)) + r"\b", r.text)
    return (m.start(), m.end()) if m else None


def _clause_apart(r: Reading, value: list[str]) -> bool:
    """Does the span run across a verb or a possessive ("app's new feature is in alpha": "feature ... alpha")?
    Then it holds a holder of its own, not one value."""
    at = _at(r, value)
    return at is not None and re.search(r"\b(?:is|are|was|were|has|have)\b|['’]s\b", r.text[at[0]:at[1]]) is not None


def _named_by_words(was: list[str], now: list[str]) -> bool:
    """With no name at all, the subject is the words both sentences open with: two or more before the one value
    that ends both ("office dog" in "our office dog is a beagle" / "... a spaniel now"; not "office" alone:
    "our office cat is a tabby")."""
    lead = 0
    while lead < min(len(was), len(now)) and _stem(was[lead]) == _stem(now[lead]):
        lead += 1
    return lead >= 2 and 0 < len(was) - lead <= 2 and 0 < len(now) - lead <= 2


def _fork(new: Reading, subject: set[str], new_text: str, a: list[str], b: list[str], why: str) -> Same:
    holder = next((x for x in new.anchors if x.key in subject), None)
    spelled = _spelled(new_text, holder) if holder else ""
    old_value, new_value = " ".join(a).replace("@", ""), " ".join(b).replace("@", "")
    return Same("contradiction_fork", spelled, "", old_value, new_value,
                f"one value in other words swapped: {old_value!r} -> {new_value!r} ({why})")


def _tokens(r: Reading, subject: set[str]) -> list[str]:
    """The content words in order, the subject as X and other anchors by their keys; a date the new value began
    ("since 1 April") and a clock time beside a day ("Thursdays, 7pm") left out."""
    out: list[str] = []
    at = 0
    for i, anchor in enumerate(r.anchors):
        out += _words(r.text[at:anchor.start])
        at = anchor.end
        if anchor.key in subject:
            out.append("X")
        elif not _when(r, anchor, i):
            out.append("@" + day(anchor.key))  # another name or figure: "@" marks it
    out += _words(r.text[at:])
    return out


def _when(r: Reading, anchor: Anchor, i: int) -> bool:
    if anchor.kind == "date" and _STARTED.search(r.text[:anchor.start]):
        return True
    before = r.anchors[i - 1] if i else None
    return anchor.kind == "time" and before is not None and before.kind == "date" \
        and not r.text[before.end:anchor.start].strip(" ,")


def _words(text: str) -> list[str]:
    words = (w.removesuffix("'s").removesuffix("'") for w in _WORD.findall(text.replace("’", "'")))
    return [w for w in words if w and w not in _STOP and w not in _CHANGE and w not in _FILLER]


def _one_span(was: list[str], now: list[str], change_verb: bool, copula: bool
              ) -> tuple[list[str], list[str], bool] | None:
    """The one span the two token lists differ in, as (old, new, nothing else differs), or None."""
    ops = [op for op in SequenceMatcher(a=[_stem(w) for w in was], b=[_stem(w) for w in now],
                                        autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    a, b = was[i1:i2], now[j1:j2]
    if change_verb and i1 > 0 and was[i1 - 1] == "X" and len(a) > 1:
        a, i1 = a[1:], i1 + 1  # "X takes dairy milk" / "X has switched to oat milk": the verb the change took
    elif i1 > 0 and was[i1 - 1] == "X" and not _one_scale(a, b) and not _one_root(" ".join(a), " ".join(b)) \
            and (not copula or any(_PARTICIPLE.search(w) for w in (a[0], b[0]))):
        return None  # right after the subject: the verb ("rehearses", "is written in", "commute by bus")
    if not a or not b or len(a) > 2 or len(b) > 2 or "X" in a + b or i1 == 0:
        return None
    if len(a) == len(b) == 2 and not _one_scale(a, b):
        return None  # two words for two: maybe another thing too ("the bus to work" / "the train to the gym")
    rest = was[:i1] + was[i2:] + now[:j1] + now[j2:]
    if any(not w[0].isalpha() for w in rest + a + b) and not (_one_scale(a, b) and len(a) == len(b) == 1):
        return None  # a name or a figure besides the subject: the lexicon's and the alignment's (a day: a scale's)
    return a, b, len(was) == len(now) - len(b) + len(a)


_PAST = re.compile(r"\b(?:was|were|used to|had been|formerly|previously)\b")
_PARTICIPLE = re.compile(r"(?:ed|en|ing)$")


def _copula(r: Reading, subject: set[str]) -> bool:
    """Is the subject followed by "is" ("Marta Ruiz is a beginner climber"): what follows is no verb."""
    return any(re.match(r"\s+(?:is|are|am|has been|have been)\b", r.text[a.end:])
               for a in r.anchors if a.key in subject)


def _stem(word: str) -> str:
    s = stem(word)
    return s[:6] if len(s) > 6 else s  # "rehearses" / "rehearsals": one relation


def _changed_verb(r: Reading) -> bool:
    return _CHANGE_VERB.search(r.text) is not None


def _synonyms(old: Reading, a: list[str], b: list[str]) -> bool:
    """One value in other words: the old sentence with the new span in the old one's place means the same by the
    embedding model ("is large" / "is big": 0.98; "sings alto" / "sings soprano": 0.88), or, when the span is
    not found as written, the two spans are near. Not one word told two ways ("left-handed" / "right-handed",
    "heated" / "unheated": the model puts such words near, but they say opposite things)."""
    if _one_scale(a, b) or _one_root(" ".join(a), " ".join(b)):
        return False
    at = _at(old, a)
    pair = (old.text, old.text[:at[0]] + " ".join(b) + old.text[at[1]:]) if at else (" ".join(a), " ".join(b))
    va, vb = _phrase_vectors(*pair)
    return float(va @ vb) >= (SAME_SENTENCE if at else SYNONYM)


def _kept_apart(old: Reading, new: Reading, texts: tuple[str, str]) -> bool:
    """attributes' guards but its verbs of many values, which `_many` weighs against a verb of change ("plays
    viola" / "switched to cello")."""
    return _guarded(replace(old, many=False), replace(new, many=False), texts)


def _one_root(x: str, y: str) -> bool:
    parts_x, parts_y = set(re.split(r"[-\s]", x)), set(re.split(r"[-\s]", y))
    if parts_x & parts_y:
        return True
    return any(x == p + y or y == p + x for p in ("un", "in", "im", "ir", "il", "non", "non-", "dis"))


# A habit said stopped: "I've stopped taking sugar", "she quit smoking", "gave up running".
_STOPPED = re.compile(r"\b(?:stopped|quit|gave up|given up|no longer)\s+\w+ing\b")


def stopped(old_text: str, new_text: str) -> bool:
    """Does the new sentence say the habit of the old one stopped? Then it repeats nothing: no duplicate."""
    return bool(_STOPPED.search(new_text.lower())) and not _STOPPED.search(old_text.lower())


def _named_right_after(old: Reading, new: Reading, a: list[str], b: list[str], subject: set[str]) -> bool:
    """Is a span said right before one of the subject's names ("is named Biscuit" / "called Biscuit")? Then the
    name is the value and the span the relation's words."""
    for r, v in ((old, a), (new, b)):
        at = _at(r, v)
        if at and any(x.key in subject and x.start >= at[1] and not r.text[at[1]:x.start].strip() for x in r.anchors):
            return True
    return False


def _one_scale(a: list[str], b: list[str]) -> bool:
    x, y = " ".join(a).lstrip("@"), " ".join(b).lstrip("@")
    return x != y and any(day(x) in scale and day(y) in scale or x in scale and y in scale for scale in _SCALES)


def _says_change(old_text: str, new_text: str) -> bool:
    said = {m.group().lower() for m in _CHANGE_CUE.finditer(new_text)}
    return bool(said - {m.group().lower() for m in _CHANGE_CUE.finditer(old_text)})


def _masked(r: Reading, subject: set[str], value: list[str]) -> str:
    """The new sentence as a frame for the attribute classifier: the subject X, the value Y."""
    key = next(x.key for x in r.anchors if x.key in subject)
    return frame(r, key, _at(r, value))


# A couple told apart: "A and B broke up", "A split from B", "A divorced B".
_PARTNER_WORDS = frozenset("partner wife husband spouse girlfriend boyfriend fiance fiancee fiancé fiancée".split())
_COUPLE = re.compile(r"\b(?:married to|engaged to|dating|seeing|going out with|together with|is with)\b")
_APART_VERB = r"(?:broke up|broken up|split up|split|separated|divorced)"


@lru_cache(maxsize=4096)
def breakup(old_text: str, new_text: str) -> Same | None:
    """The old sentence names a subject's partner; the new one says the two broke up and names one other person
    after it, the new partner: "Lena's partner is Jonah" / "Lena and Jonah broke up; Lena is with Eli now"."""
    old, new = read(old_text, new_text), read(new_text, old_text)
    names = [a for a in old.anchors if a.kind == "name"]
    if len(names) != 2 or len(old.anchors) != 2 or old.negated or new.negated or new.also \
            or not (old.relatives and old.relatives <= _PARTNER_WORDS or _COUPLE.search(old.text)) \
            or new.relatives - _PARTNER_WORDS or any(_HYPOTHETICAL.search(t) for t in (old_text, new_text)):
        return None
    holder, partner = names[0].key, names[1].key
    h, p = re.escape(holder), re.escape(partner)
    told = re.search(rf"\b(?:{h} and {p}|{p} and {h}) (?:have |had |just )?{_APART_VERB}\b"
                     rf"|\b{h} (?:has |had |just )?(?:{_APART_VERB} (?:with |from )?|left ){p}\b", new.text)
    if told is None:
        return None
    others = {a.key for a in new.anchors if a.kind == "name"} - {holder, partner}
    after = [a for a in new.anchors if a.key in others and a.start >= told.end()]
    if len(others) != 1 or not after:
        return None
    return Same("contradiction_fork", _spelled(new_text, next(a for a in new.anchors if a.key == holder)), "spouse",
                _spelled(old_text, names[1]),
                _spelled(new_text, after[0]), f"{partner!r} and the subject broke up; {after[0].key!r} named after it")
