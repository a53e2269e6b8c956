"""The same content in other words: a fact restated with nothing added is a duplicate, with more said a refinement.

Where no relation reading settles two sentences ("User's shoe size is UK 9." / "I take a size 9 in shoes (UK
sizing)", "My locker at the Westgate pool is number 12." / "pool locker: #12 (Westgate)"), compare what they
hold rather than how they say it: a bag of names, numbers, times, days and content-word stems, written one way
(align.canonical: the user for "I" / "my", clock times, number words), with function words, light verbs ("take",
"offer"), symbols ("#", ":", brackets) and fillers ("number 12") left out, and a few abbreviations and
attribute words put one way ("O-neg", "Mon-Fri", "hours" / "open").

- the same bag                                      -> duplicate
- the old bag less one plain word (a note's way)    -> duplicate ("mortgage rate is 4.2%" / "mortgage: 4.2%")
- the old bag and more, about the same subject      -> refinement ("takes the train to work" -> "commutes by
  train, usually the 07:42 from Didcot")

Guards (no verdict): a negation, a question, a hypothetical, a relative, "also" / "another", the past on one
side, a change said; two names in another order (a role swap: "A manages B" / "B manages A"; a passive says them
reversed), a role noun beside its verb ("Ada's manager is Ben" / "Ada manages Ben"), a verb that is a word of a
name; for a note or a refinement, another subject first, an old name said longer or a word of a name left out
("Velto" / "Velto Labs"). Another value, date, period or twin changes the bag. Deterministic, no model: set
comparisons per pair. `one_word_swapped` and `unsaid` are vetoes the rule validator puts on every duplicate."""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from functools import lru_cache

from .align import _ORDINALS, _STOP, Reading, _phrase_vectors, _told_as_past, canonical, read, stem, word_key
from .attributes import _HYPOTHETICAL
from .facts import _CURRENCIES, number_key
from .samefact import _says_change, day, phone_digits
from .swap import SAME_SENTENCE
from .validator import words

# Abbreviations, written out before stems are taken.
_ABBREVIATIONS = {"neg": "negative", "pos": "positive", "hrs": "hours", "hr": "hour", "mins": "minutes",
                  "min": "minute", "yrs": "years", "yr": "year", "wk": "week", "wks": "weeks", "mgr": "manager",
                  "dept": "department", "appt": "appointment", "tel": "phone", "mob": "mobile", "addr": "address",
                  "bday": "birthday", "hq": "headquarters", "approx": "about", "no": "number", "rd": "road",
                  "ave": "avenue", "wfh": "work from home", "dob": "birthday", "color": "colour",
                  "favorite": "favourite", "fav": "favourite", "fave": "favourite"}
# Verbs that carry no attribute of their own ("takes a size 9", "offers a free plan" = "has a free plan").
_LIGHT = frozenset("take takes took taking taken get gets got getting offer offers offered offering provide provides "
                   "provided providing keeps kept stored wear wears wore worn wearing use uses using"
                   .split())
# Words that say nothing beyond the value beside them: the user (as the subject, where the other side names
# none), "number 12", "about 3k", "closing time" (a time says it), the words of a note ("mine").
_FILLER = frozenset("user number mine about around roughly approximately time date called named located based "
                    "situated currently".split())
# Attribute words of one meaning, by stem: "opening hours" / "is open".
_SAME_STEM = {"hour": "open", "birthda": "born", "birth": "born", "driv": "car", "flight": "fly", "kid": "child",
              "children": "child", "mum": "moth", "mom": "moth", "dad": "fath"}
_DAY_RANGE = re.compile(r"\b(?:mon(?:day)?)\s*(?:-|–|to|through|thru|until)\s*fri(?:day)?\b|\bweekdays?\b",
                        re.IGNORECASE)
_WEEKEND = re.compile(r"\b(?:sat(?:urday)?)\s*(?:-|–|and|&|to)\s*sun(?:day)?\b|\bweekends?\b", re.IGNORECASE)
# Going to work by some means is commuting: "takes the train to work" / "commutes by train".
_TO_WORK = re.compile(r"\b(goes|go|going|gets|get|getting|travels?|travelling|traveling|takes?|taking|rides?|riding"
                      r"|cycles?|cycling|bikes?|biking|walks?|walking|drives?|driving)\b(.{0,40}?)\bto work\b",
                      re.IGNORECASE)
_MEANS = {"cycl": "bike", "bik": "bike", "walk": "foot", "driv": "car"}
_TOKEN = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\+?\d[\d-]{5,}\d|\d\d:\d\d|\d+(?:st|nd|rd|th)\b"
                    r"|\d+(?:[.,]\d+)*(?:k|m|bn)?\b%?"
                    r"|[a-z][a-z'-]*")
# "Rowan St", "Mill Rd" (after a name: "St Jude's" is a saint); months written short before or after a day.
_STREET = re.compile(r"\b([A-Za-z][a-z]+) ([Ss]t|[Rr]d|[Aa]ve)\b\.?")
_SHORT = "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec"
_SHORT_MONTH = re.compile(rf"\b({_SHORT})\b\.?(?=\s*\d)|(?<=\d )({_SHORT})\b\.?")
# Days written short in notes ("Fri: 22:00", "Mon + Wed"): capitalised only ("sat on the board" is no day).
_SHORT_DAY = re.compile(r"\b(Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun)\b\.?")
_DAY_NAME = {"Mon": "Monday", "Tue": "Tuesday", "Tues": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday",
             "Thur": "Thursday", "Thurs": "Thursday", "Fri": "Friday", "Sat": "Saturday", "Sun": "Sunday"}
_NUMERIC_DATE = re.compile(r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4})\b")  # day first, as the UK writes it
_PER_HOUR = re.compile(r"\s*/\s*(?:hr|hour)\b|\s+(?:per|an|a)\s+hour\b", re.IGNORECASE)
# A time among a note's first words is no note mark ("Thu 15:00 - meeting w/ Ana"); "w/" is "with".
_LEADING_TIME = re.compile(r"^(\W*(?:[\w']+\s+){0,3}\d{1,2}):(\d\d)\b")
_W_SLASH = re.compile(r"\bw/(?!o)\s*", re.IGNORECASE)
_MONTHS = "January February March April May June July August September October November December".split()
_QUESTION = re.compile(r"\?\s*$|^\s*(?:does|do|did|is|are|should|shall|can|could|would|will|has|have)\b",
                       re.IGNORECASE)


@lru_cache(maxsize=8192)
def content(text: str) -> frozenset[str]:
    """The sentence's content, written one way: names, numbers, times, days and content-word stems."""
    return frozenset(w for w in _in_order(text) if w != "user")


@lru_cache(maxsize=8192)
def _in_order(text: str) -> tuple[str, ...]:
    """The content words in the order the sentence says them, the user among them."""
    out: list[str] = []
    for token in _TOKEN.findall(_normalised(text).lower()):
        out += _keys(token)
    return tuple(dict.fromkeys(out))


@lru_cache(maxsize=8192)
def _spelled(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The words said in a name (capitalised, not first) and those said on their own as verbs, maybe."""
    named: set[str] = set()
    plain: set[str] = set()
    for i, m in enumerate(re.finditer(r"[A-Za-z][a-z'-]*", _normalised(text))):
        word = m.group()
        if i > 0 and word[0].isupper() and word != "User" and not _CALENDAR.fullmatch(word):
            named.update(_keys(word.lower()))  # (the user, days and months are capitalised wherever they stand)
        elif re.fullmatch(r"[a-z]{3,}(?:s|ed|ing)", word):
            plain.update(_keys(word))  # a verb, maybe
    return frozenset(named), frozenset(plain)


_CALENDAR = re.compile(r"(?i:(?:mon|tues|wednes|thurs|fri|satur|sun)days?|" + "|".join(_MONTHS) + ")")


def _verb_in_name(old_text: str, new_text: str) -> bool:
    """Is a word said on its own on one side only a word of a name on the other ("Ayla works at Corvane Bank" /
    "Ayla banks with Corvane Bank")? The bag of words holds one "bank" for both."""
    (old_named, old_plain), (new_named, new_plain) = _spelled(old_text), _spelled(new_text)
    return bool(old_plain & old_named & (new_named - new_plain) or new_plain & new_named & (old_named - old_plain))


def _normalised(text: str) -> str:
    t = _NUMERIC_DATE.sub(_date, _SHORT_DAY.sub(lambda m: _DAY_NAME[m.group(1)], text))
    t = _STREET.sub(_street, t)
    t = _SHORT_MONTH.sub(lambda m: next(x for x in _MONTHS if x.startswith(m.group(1) or m.group(2))), t)
    t = _LEADING_TIME.sub(r"\1h\2", _W_SLASH.sub("with ", _PER_HOUR.sub(" perhour", t)))
    t = canonical(t)
    t = re.sub(r"\b(\d{1,2})h(\d\d)\b", lambda m: f"{int(m.group(1)):02d}:{m.group(2)}", t)
    for code, pattern in _CURRENCIES:
        t = re.sub(pattern, f" {code} ", t, flags=re.IGNORECASE)
    t = _TO_WORK.sub(lambda m: f"commutes {_MEANS.get(stem(m.group(1)), '')} {m.group(2)}", t)
    t = _DAY_RANGE.sub(" weekday ", t)
    return _WEEKEND.sub(" weekend ", t)


def _street(m: re.Match[str]) -> str:
    if m.group(1).lower() in _STOP:
        return m.group()  # "in St Albans", "at St Jude's": a saint
    return f"{m.group(1)} {dict(st='Street', rd='Road', ave='Avenue')[m.group(2).lower()]}"


def _date(m: re.Match[str]) -> str:
    d, mo = int(m.group(1)), int(m.group(2))
    return f"{d} {_MONTHS[mo - 1]} {m.group(3)}" if 1 <= mo <= 12 and 1 <= d <= 31 else m.group()


def _keys(token: str) -> list[str]:
    """One token's compared forms: an e-mail as written, a phone number's digits, a number, or word stems."""
    token = token.strip("'-").removesuffix("'s").removesuffix("'")
    if "@" in token:
        return [token]
    if token[:1] in set("+0123456789"):
        digits = phone_digits(token) if "-" in token else None
        return [digits] if digits else [number_key(p) or p for p in token.split("-") if p]
    if token in _ORDINALS:
        return [_ORDINALS[token]]
    out = []
    parts = token.split("-")
    if len(parts) > 1 and min(map(len, parts)) <= 2 and not set(parts) & set(_ABBREVIATIONS):
        parts = ["".join(parts)]  # "wi-fi", "e-mail": one word
    for part in parts:
        for word in _ABBREVIATIONS.get(part, part).split():
            if word == "user" or word not in _STOP and word not in _LIGHT and word not in _FILLER \
                    and (len(word) > 1 or word.isalpha()):
                key = word_key(word)
                out.append(day(_SAME_STEM.get(key, key)))
    return out


def restatement(old_text: str, new_text: str) -> str | None:
    """"duplicate" when the new sentence holds the old one's content and no more, "refinement" when it holds all of
    it and more about the same subject; None when the two differ otherwise or a guard keeps them apart."""
    old_text, new_text = _initials(old_text, new_text)
    if _kept_apart(old_text, new_text):
        return None
    was, now = content(old_text), content(new_text)
    old, new = read(old_text, new_text), read(new_text, old_text)
    if not was or not now or _roles_apart(old, new, old_text, new_text) \
            or _verb_in_name(old_text, new_text):
        return None
    if now < was and len(was - now) == 1 and _plain(next(iter(was - now)), old, old_text):
        return "duplicate"  # less said, and only a word a note leaves out ("mortgage rate is 4.2%" / "mortgage: 4.2%")
    if not was <= now:
        return None
    if was == now:
        return "duplicate"
    old_names = {a.key for a in old.anchors if a.kind == "name"}
    new_names = {a.key for a in new.anchors if a.kind == "name"}
    if not old_names <= new_names or _in_order(new_text)[0] not in _in_order(old_text) \
            or _part_of(new_text, was):
        return None  # an old name said longer ("Velto" / "Velto Labs"), another subject first, a part of it
    added = now - was
    if len(added) < 2 and not any(w[:1].isdigit() or w in new_names for w in added):
        return None  # one more word may only say the attribute ("closing time", "in the morning")
    return "refinement"


def _roles_apart(old: Reading, new: Reading, old_text: str, new_text: str) -> bool:
    """Names in another order ("A manages B" / "B manages A"), or a role noun of a name on one side and its verb
    on the other ("Ada's manager is Ben" / "Ada manages Ben")."""
    shared = set(_names_in_order(old)) & set(_names_in_order(new))
    if old.relatives and old.relatives == new.relatives:
        shared.discard("user")  # "my sister Ana" / "Ana (my sister)": the user holds the relative, no role
    was, now = _names_in_order(old, shared), _names_in_order(new, shared)
    if _passive(old_text) != _passive(new_text):  # "X is owned by Y" / "Y owns X": the same roles in the other order
        keys = {a.key for a in old.anchors} & {a.key for a in new.anchors}
        was, now = _named(old, keys), _named(new, keys)[::-1]
    if was != now:
        return True
    return bool(_roles(old_text) & _verbs(new_text) or _roles(new_text) & _verbs(old_text))


_ROLE = re.compile(r"(?:'s|s')\s+(?:[a-z]+\s+)?([a-z]{3,}(?:er|or))\b|\b([a-z]{3,}(?:er|or))\s+(?:of|for|to)\b")


_PASSIVE = re.compile(r"\b(?:is|are|was|were|been)\s+(?:[a-z]+ly\s+)?[a-z]+\s+by\b")


def _passive(text: str) -> bool:
    return _PASSIVE.search(canonical(text).lower()) is not None


def _roles(text: str) -> set[str]:
    """The stems said as someone's role ("Ada's manager", "the owner of X"), the ending a suffix (not "colour")."""
    found = (m.group(1) or m.group(2) for m in _ROLE.finditer(_normalised(text).lower()))
    return {stem(w) for w in found if stem(w) == stem(w[:-2])}


def _verbs(text: str) -> set[str]:
    """The stems said as verbs of a name ("manages", "owned"), not as role nouns."""
    return {stem(w) for w in re.findall(r"\b[a-z]{3,}(?:s|ed)\b", _normalised(text).lower())
            if not w.endswith(("ers", "ors", "ss"))}


def _plain(key: str, r: Reading, text: str) -> bool:
    """A word, not a name or a figure of the sentence ("Riverwick Children's Hospital": a name)."""
    return not key[:1].isdigit() and not any(key in a.key.split() or stem(key) in a.key.split() for a in r.anchors) \
        and key not in _spelled(text)[0]


def _initials(old_text: str, new_text: str) -> tuple[str, str]:
    """Both sentences with a name one of them writes in initials written so in the other too ("New York City" /
    "NYC", "the British Broadcasting Corporation" / "the BBC")."""
    for short in set(_ACRONYM.findall(old_text + " " + new_text)):
        spelled = re.compile(r"\b" + r"\s+".join(f"{c}[a-z]+" for c in short) + r"\b")
        old_text, new_text = spelled.sub(short, old_text), spelled.sub(short, new_text)
    return old_text, new_text


_ACRONYM = re.compile(r"\b[A-Z]{2,5}\b")


def _kept_apart(old_text: str, new_text: str) -> bool:
    """A reason no likeness of content overrules: a negation, a question, a hypothetical, a relative, "also", the
    past on one side only, a change said."""
    old, new = read(old_text, new_text), read(new_text, old_text)
    relatives = {_relative(w) for w in old.relatives} ^ {_relative(w) for w in new.relatives}
    return (old.negated != new.negated or new.also or bool(relatives)
            or any(_QUESTION.search(t) or _HYPOTHETICAL.search(t) for t in (old_text, new_text))
            or _told_as_past(old.text) != _told_as_past(new.text) or _tense(old.text) != _tense(new.text)
            or _says_change(old_text, new_text))


def _relative(word: str) -> str:
    """One word per relative: "mum" / "mother", "kid" / "child"."""
    key = stem(word)
    return _SAME_STEM.get(key, key)


def unsaid(old_text: str, new_text: str) -> bool:
    """Does one sentence leave as a wish, a question or the past what the other says holds ("User runs on Sundays"
    / "User wants to run on Sundays", "... used to run ...", "Does User run ...?"), or negate it? No repeat, then."""
    old, new = read(old_text, new_text), read(new_text, old_text)
    wish = [bool(_QUESTION.search(t) or _WISH.search(t)) for t in (old_text, new_text)]
    return old.negated != new.negated or wish[0] != wish[1] or _told_as_past(old.text) != _told_as_past(new.text)


_WISH = re.compile(r"\b(?:might|maybe|perhaps|if|considering|thinking (?:of|about)|plans? to|planning"
                   r"|hop(?:e|es|ing) to"
                   r"|wants? to|wish(?:es)?|dreams? of)\b", re.IGNORECASE)


_PAST = re.compile(r"\b(?:had|did|until|ago|used to)\b|\b(?:was|were)\b(?!\s+born\b)")  # ("was born": no past state)


def _tense(text: str) -> bool:
    """Told in the past ("lived in Harrogate until 2019"): a past verb or a word that ends a period."""
    text = re.sub(r"\b(?:is|are|be|been|being)\s+[a-z]+ed\b", " ", text)  # a passive: "is managed by"
    return _PAST.search(text) is not None or re.search(r"\b(?:lived|worked|played|stayed|owned|managed)\b",
                                                       text) is not None


def _named(r: Reading, keys: set[str]) -> list[str]:
    return list(dict.fromkeys(a.key for a in r.anchors if a.kind == "name" and a.key in keys))


def _names_in_order(r: Reading, keep: set[str] | None = None) -> list[str]:
    """The words of the names (the user among them), in the order the sentence says them, each once."""
    seen: list[str] = []
    for a in r.anchors:
        if a.kind != "name":
            continue
        for w in a.key.split():
            if w not in seen and (keep is None or w in keep):
                seen.append(w)
    return seen


_POSSESSIVE = re.compile(r"(?:'s|s')\s+([\w-]+)")


def _part_of(new_text: str, was: frozenset[str]) -> bool:
    """Does the new sentence say something of a part or holder the old one does not name ("Haddon Ltd's Leeds
    branch" beside "Haddon Ltd")?"""
    return any(not set(_keys(m.group(1).lower())) <= was | {"user"}
               for m in _POSSESSIVE.finditer(_normalised(new_text)))


def one_word_swapped(old_text: str, new_text: str) -> bool:
    """Are the two sentences one sentence with one content word swapped for another, not a synonym ("sings alto" /
    "sings soprano", "shoe size" / "dress size")? Then they say another value or another attribute, never the
    same."""
    old, new = words(old_text), words(new_text)
    ops = [op for op in SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace" or ops[0][2] - ops[0][1] != 1 or ops[0][4] - ops[0][3] != 1:
        return False
    was, now = old[ops[0][1]], new[ops[0][3]]
    if not (was.isalpha() and now.isalpha() and _keys(was) != _keys(now) and _keys(was) and _keys(now)):
        return False
    va, vb = _phrase_vectors(" ".join(old), " ".join(new))
    return float(va @ vb) < SAME_SENTENCE  # (near alike by the model: a synonym, "is large" / "is big")
