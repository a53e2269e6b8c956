"""The same fact in any words, when no relation reading matched: one subject, one value a side, frames alike.

The lexicon (facts.py), the alignment (align.py) and the attribute classifier (attributes.py) each read the
relations they were written or trained for. This path reads none: it asks only whether the two sentences
say something of the same kind about the same subject, and leaves the relation unnamed.

1. Subject: the names both sentences share (the user for "I" / "my"; a second shared name is the
   subject's setting: "X's GP", "X's choir"), also when one sentence splits one in two ("Kittiwake cut
   the X5 drone's price" beside "the Kittiwake X5 drone").
2. Value: the one other name or figure each sentence holds (a date or year beside another value says
   when, not what).
3. Frame: the sentences with the subject masked as X and the value as Y must be close in meaning by
   the embedding model ("X's phone number is Y" / "X can be reached on Y").
4. Then: the same value after normalisation (phone digits, units, number words) is a duplicate; another
   value of the same sort is a correction only when the new sentence says a change in closed-class words
   ("now", "these days", "no longer", "switched", "cut ... to", "replaced"). Words of change generalise
   across relations; without one, two values of one frame may both hold (two offices, twins, a second car).

A second, narrower path reads a replacement said outright: the new sentence names the old value as
replaced, sold, divorced or succeeded ("Dr Sarpong has replaced Dr Hart at Bexley Row Surgery"), and one
new name beside it.

Every guard of attributes.compare applies first (a negation, a relative, "also" or a verb of many values,
the past, a hypothetical). Deterministic: the model is, and frames are embedded once per process."""

from __future__ import annotations

import re
from dataclasses import replace

from .align import _GONE_AFTER, _LINE_WORDS, Anchor, Reading, _periods, _phrase_vectors, canonical, read, stem
from .attributes import _HYPOTHETICAL, _INVERSE, Same, _dated, _guarded, classify_frame
from .facts import number_key, value_key

# Minimum cosine of the two masked frames (all-MiniLM-L6-v2): a duplicate needs the same value too, a
# correction a word of change too, so the frame need only be the same kind of statement.
DUPLICATE_FRAME = 0.72
CHANGED_FRAME = 0.65
# A correction no word of change says: the frames must be near alike and both of one single-valued attribute.
QUIET_FRAME = 0.9
# A phone number or an e-mail address tells the attribute by its sort: the frame need only be near.
TELLING_FRAME = 0.45

# A change said in closed-class words: time adverbs of the present, verbs of change, "replaced".
_CHANGE_CUE = re.compile(
    r"\b(?:now|these days|nowadays|anymore|any more|no longer|not any more|since|instead|from now on|as of"
    r"|switch(?:ed|es|ing)?|chang(?:ed|es|ing)|mov(?:ed|es|ing)|replac(?:ed|es|ing)|new|newly"
    r"|cut|cuts|raised?|raises|lowered|dropped|increased|reduced|put (?:\w+ ){0,2}(?:up|down)|bumped"
    r"|stepped down|steps down|took over|taken over|takes over|sold|upgraded|downgraded|became|has become"
    r"|updated|reset|transferred|relocated|got (?:engaged|married|divorced)|divorced|went)\b", re.IGNORECASE)

# Units of one quantity, in a base unit: "1.2 kg" = "1200 grams".
_SCALE = {"kg": ("g", 1000.0), "kilo": ("g", 1000.0), "kilogram": ("g", 1000.0), "g": ("g", 1.0),
          "gram": ("g", 1.0), "km": ("m", 1000.0), "kilometre": ("m", 1000.0), "m": ("m", 1.0),
          "metre": ("m", 1.0), "meter": ("m", 1.0), "cm": ("m", 0.01), "mm": ("m", 0.001),
          "l": ("l", 1.0), "litre": ("l", 1.0), "liter": ("l", 1.0), "ml": ("l", 0.001)}
_QUANTITY = re.compile(r"^\s*([\d.,]+)\s*([a-z]+)?\b", re.IGNORECASE)


def quantity(text: str) -> tuple[float, str] | None:
    """A number and its base unit ("1.2 kg" -> (1200.0, "g")); the unit "" when none is a known one."""
    m = _QUANTITY.match(text)
    if m is None:
        return None
    n = number_key(m.group(1))
    if n is None:
        return None
    unit = (m.group(2) or "").lower().rstrip("s") if m.group(2) else ""
    base, factor = _SCALE.get(unit, ("", 1.0))
    return float(n) * factor, base


def phone_digits(text: str) -> str | None:
    """A phone number's national digits: "+44 7700 900218" and "07700 900 218" -> "7700900218"."""
    digits = re.sub(r"\D", "", text)
    if len(digits) < 7 or re.search(r"[a-z]", text, re.IGNORECASE):
        return None
    if text.lstrip().startswith("+") or digits.startswith("00"):
        digits = digits.lstrip("0")[2:]  # a country code of two digits (+44, +33, +49): the usual case
    return digits.lstrip("0")


def same_value(old: str, new: str) -> bool:
    """Do two values say the same, written either way (phone digits, units, number words, case)?"""
    if value_key(old) == value_key(new) or day(value_key(old).casefold()) == day(value_key(new).casefold()):
        return True
    a, b = phone_digits(old), phone_digits(new)
    if a is not None and b is not None:
        return a == b
    qa, qb = quantity(canonical(old)), quantity(canonical(new))
    return qa is not None and qb is not None and qa[1] == qb[1] != "" and abs(qa[0] - qb[0]) < 1e-6 * max(qa[0], 1)


# ----------------------------------------------------------------------------------------- reading


def _subject(old: Reading, new: Reading) -> tuple[set[str], set[str]] | None:
    """The subject's anchor keys in the old and the new sentence: one shared name, or one old name the new
    sentence writes in parts ("kittiwake x5" / "kittiwake" ... "x5")."""
    shared = {a.key for a in old.anchors if a.kind == "name"} & {a.key for a in new.anchors if a.kind == "name"}
    if shared:  # several shared names: the others are the subject's setting ("X's GP", "X sings in Y's choir")
        return shared, shared
    for a in old.anchors:
        parts = {b.key for b in new.anchors if b.kind == "name" and set(b.key.split()) < set(a.key.split())}
        if len(parts) > 1 and set(" ".join(parts).split()) == set(a.key.split()):
            return {a.key}, parts
    return None


def _values(r: Reading, subject: set[str]) -> list[Anchor]:
    """The anchors that are no part of the subject; a date or year beside another value says when."""
    values = [a for a in r.anchors if a.key not in subject]
    what = [a for a in values if a.kind != "date" and not re.fullmatch(r"(?:19|20)\d\d", a.key)]
    return what if what else values


def _masked(r: Reading, subject: set[str], value: Anchor) -> str:
    out, at = [], 0
    for a in r.anchors:
        if a.key in subject or a is value:
            out += [r.text[at:a.start], "X" if a.key in subject else "Y"]
            at = a.end
    out.append(r.text[at:])
    return " ".join("".join(out).split()).rstrip(".!? ")


def _frame_similarity(a: str, b: str) -> float:
    va, vb = _phrase_vectors(a, b)
    return float(va @ vb)


def _spelled(text: str, a: Anchor) -> str:
    return canonical(text)[a.start:a.end]


def compare(old_text: str, new_text: str) -> Same | None:
    """The same subject and one value a side in frames alike: a duplicate (the same value) or a correction (another
    value, with a change said), or a replacement said outright; else None."""
    old, new = _dated(read(old_text, new_text)), _dated(read(new_text, old_text))
    kin = _one_relative(old, new)
    if kin:
        old, new = replace(old, relatives=frozenset()), replace(new, relatives=frozenset())
    if _guarded(old, new, (old_text, new_text)):
        return None
    replaced = None if kin else _replacement(old, new, old_text, new_text)
    found = _subject(old, new)
    if replaced is not None or found is None or old.event or new.event:
        return replaced
    old_subject, new_subject = found
    was, now = _values(old, old_subject), _values(new, new_subject)
    if not was and not now and old_subject == new_subject and len(old_subject) > 1:
        return _all_shared(old, new, old_subject, old_text, new_text)
    if len(was) != 1 or len(now) != 1 or _scoped_apart(old, new, was[0], now[0]):
        return None
    a, b = was[0], now[0]
    old_value, new_value = _spelled(old_text, a), _spelled(new_text, b)
    old_frame, new_frame = _masked(old, old_subject, a), _masked(new, new_subject, b)
    same = same_value(old_value, new_value) or a.key == b.key
    if kin and not same:
        return None  # another name for the same relative may be a second one (a second daughter)
    said = same or _says_change(old_text, new_text)
    if not same and (not _comparable(a, b) or _order(old_frame) != _order(new_frame)):
        return None  # (the cheap tests first: the frames' embeddings cost a model call each when new)
    similarity = _frame_similarity(_unchanged(old_frame), _unchanged(new_frame))
    subject = next(x for x in new.anchors if x.key in new_subject)
    why = f"one subject, one value, frames alike (masked similarity {similarity:.2f})"
    least = TELLING_FRAME if _telling(old_value) and _telling(new_value) else DUPLICATE_FRAME if same \
        else CHANGED_FRAME if said else QUIET_FRAME
    if same and similarity < least:  # the same value in frames put otherwise: one attribute read in both will do
        attribute = _one_attribute(old_frame, new_frame, a.kind)
        if attribute is None:
            return None
        why = f"one subject, one value, both {attribute} (masked similarity {similarity:.2f})"
    elif similarity < least:
        return None
    if same:
        return Same("duplicate", _spelled(new_text, subject), "", old_value, new_value, why)
    if _two_attributes(old_frame, new_frame, a.kind):
        return None
    if not said:  # no word of change: only where one value at a time is all the attribute holds
        attribute = _one_attribute(old_frame, new_frame, a.kind)
        if attribute is None or len(old_subject) > 1 or set(a.key.split()) & set(b.key.split()) \
                or _order(old_frame) != 1:
            return None  # (a setting may scope the value: "a fan of Arsenal in London"; "Halcyon Labs": a sister;
            # the shared name after the other may be the value: "Ines drives a Mazda 3" / "Ravi drives a Mazda 3")
        return Same("contradiction_fork", _spelled(new_text, subject), "", old_value, new_value,
                    f"{why}, both {attribute} (one value at a time)")
    return Same("contradiction_fork", _spelled(new_text, subject), "", old_value, new_value, why + ", a change said")


def _one_attribute(old_frame: str, new_frame: str, kind: str) -> str | None:
    """The attribute the classifier, sure of both frames, reads in both, when it holds one value at a time (a
    home city, a CFO, a birthday; not languages, offices, employees: "Y works at X" reads as X's employees)."""
    was, now = classify_frame(old_frame, kind).attribute, classify_frame(new_frame, kind).attribute
    return was.name if was is not None and was is now and not was.multi else None


_NOW = re.compile(r"\b(?:now|these days|nowadays|anymore|any more|currently|since)\b")


def _all_shared(old: Reading, new: Reading, shared: set[str], old_text: str, new_text: str) -> Same | None:
    """Every name of one sentence is in the other ("X's daughter is called Y" / "X has a daughter named Y"): a
    duplicate when, with some one of them as the value, the frames are alike."""
    best: tuple[float, Anchor, Anchor] | None = None
    for a in old.anchors:
        b = next(x for x in new.anchors if x.key == a.key)
        rest = shared - {a.key}
        old_frame, new_frame = _masked(old, rest, a), _masked(new, rest, b)
        if _scoped_apart(old, new, a, b) or _order(old_frame) != _order(new_frame):
            continue  # (in another order the two names may have swapped roles: "A reports to B" / "B ... to A")
        similarity = _frame_similarity(_unchanged(old_frame), _unchanged(new_frame))
        if best is None or similarity > best[0]:
            best = similarity, a, b
    if best is None or best[0] < DUPLICATE_FRAME:
        return None
    similarity, a, b = best
    subject = next(x for x in new.anchors if x.key != b.key)
    return Same("duplicate", _spelled(new_text, subject), "", _spelled(old_text, a), _spelled(new_text, b),
                f"the same names, one as the value, frames alike (masked similarity {similarity:.2f})")


def _one_relative(old: Reading, new: Reading) -> bool:
    """Do both sentences name the same relatives ("X's daughter is called Y" / "X has a daughter named Y")? Then the
    relative is the relation, not someone else who holds the fact."""
    relatives = {stem(w) for w in old.relatives | new.relatives}
    return bool(relatives) and relatives <= set(old.words) & set(new.words)


def _unchanged(frame: str) -> str:
    """The frame without its adverbs of the present: "X now lives in Y" is compared as "X lives in Y"."""
    return " ".join(_NOW.sub(" ", frame).split())


def _order(frame: str) -> int:
    """1 when the subject (X) comes before the value (Y), -1 after: "X's manager is Y" / "Y manages X"."""
    x, y = re.search(r"\bX\b", frame), re.search(r"\bY\b", frame)
    return 0 if x is None or y is None else 1 if x.start() < y.start() else -1


def _scoped_apart(old: Reading, new: Reading, a: Anchor, b: Anchor) -> bool:
    """Values that hold at other times or on other lines are both true: "on weekdays" / "on Sundays", a date said
    on one side only or another date, "office line" / "phone number"."""
    when_old = {day(x.key) for x in old.anchors if x.kind == "date" and x is not a}
    when_new = {day(x.key) for x in new.anchors if x.kind == "date" and x is not b}
    if when_old != when_new or _periods(old) != _periods(new):
        return True
    years_old, years_new = _years(old, a), _years(new, b)
    if years_old and years_new and years_old != years_new:
        return True  # "2024 revenue" / "2025 revenue": two years, two facts
    return (_LINE_WORDS & set(old.words)) != (_LINE_WORDS & set(new.words))


def day(key: str) -> str:
    """"saturdays" and "saturday" say one day ("trains on Saturdays" / "Saturday sessions")."""
    return key[:-1] if key.endswith("days") else key


def _years(r: Reading, value: Anchor) -> set[str]:
    return {x.key for x in r.anchors if x is not value and re.fullmatch(r"(?:19|20)\d\d", x.key)}


def _two_attributes(old_frame: str, new_frame: str, kind: str) -> bool:
    """The attribute classifier, sure of a frame, reads one of many values (offices, languages, events), or, sure of
    both, an attribute and its inverse ("X's manager is Y" / "X manages Y")."""
    was, now = classify_frame(old_frame, kind).attribute, classify_frame(new_frame, kind).attribute
    if (was is not None and was.multi) or (now is not None and now.multi):
        return True
    return was is not None and now is not None and {was.name, now.name} in _INVERSE_PAIRS


_INVERSE_PAIRS = [{a, b} for a, b in _INVERSE.items()]


def replacement(old_text: str, new_text: str) -> Same | None:
    """Only the replacement said outright (see `_replacement`), after compare's guards: strong enough to overrule
    a word list that read the two sentences as two relations."""
    old, new = _dated(read(old_text, new_text)), _dated(read(new_text, old_text))
    return None if _guarded(old, new, (old_text, new_text)) else _replacement(old, new, old_text, new_text)


def _telling(value: str) -> bool:
    return "@" in value or phone_digits(value) is not None


# An amount per period is money ("1,150 a month" / "£1,290 a month").
_MONEY_UNITS = frozenset({"money", "month", "annual", "year", "week", "weekly", "daily", "day"})


def _comparable(a: Anchor, b: Anchor) -> bool:
    """Values of one sort: both names, or both figures in one unit (or one side with no unit said)."""
    if {a.kind, b.kind} <= {"name", "phone"}:
        return True
    if a.kind != b.kind:
        return False
    return a.unit is None or b.unit is None or a.unit == b.unit or {a.unit, b.unit} <= _MONEY_UNITS


# Cues that mark the present or a novelty rather than an act of change: "has lived in York since 2019",
# "my new puppy" can add detail to what was said.
_ADVERBIAL_CUES = {"now", "these days", "nowadays", "since", "as of", "new", "newly", "from now on"}


def _says_change(old_text: str, new_text: str, *, verbs_only: bool = False) -> bool:
    """The new sentence says a change in words of change the old one lacks (with `verbs_only`, in verbs of
    change: "moved", "switched", "replaced", not "now" or "since")."""
    said = {m.group().lower() for m in _CHANGE_CUE.finditer(canonical(new_text))}
    said -= {m.group().lower() for m in _CHANGE_CUE.finditer(canonical(old_text))}
    return bool(said - _ADVERBIAL_CUES if verbs_only else said)


# An old value said gone: after "replaced", "divorced", "sold (the)", "took over from" (a title between: "Dr").
_GONE_BEFORE = re.compile(r"\b(?:replac(?:ed|es|ing)|succeed(?:ed|s|ing)?|t(?:ook|aking|akes) over from|instead of"
                          r"|in place of|divorced|sold|broke up with|split (?:up )?(?:from|with)"
                          r"|left|quit|cancell?ed|dropped)\s+"
                          r"(?:(?:the|his|her|their|its|my|our|dr|mr|mrs|ms|prof)\s+)?$")


# Left, with the next one named right after: "left X for Y", "quit X to join Y", "cancelled X and joined Y".
_LEFT_BEFORE = re.compile(r"\b(?:left|quit|cancell?ed|dropped)\s+(?:(?:the|his|her|their|my|our)\s+)?$")
_FOR_NEXT = re.compile(r"\s+(?:for|to join|and (?:joined|switched to|moved to|went to|signed up (?:with|for|at)))"
                       r"\s+(?:the\s+)?")


def _replacement(old: Reading, new: Reading, old_text: str, new_text: str) -> Same | None:
    """The new sentence names an old value as gone ("X replaced Y", "Y stepped down", "sold the Y and ...")
    beside another name of the old sentence (the holder) and one new name in the replacer's place: the new
    name takes the old value's place."""
    old_keys = {a.key for a in old.anchors}
    # "sold the Cupra" for "the Cupra Formentor": a name written shorter stands for the old one
    short = {a.key: k for a in new.anchors for k in old_keys if k.startswith(a.key + " ")}
    gone = [a for a in new.anchors if short.get(a.key, a.key) in old_keys and _said_gone(new, a)]
    kept = {short.get(a.key, a.key) for a in new.anchors} & old_keys
    added = [a for a in new.anchors if a.key not in old_keys and a.key not in short and a.kind == "name"]
    if len(gone) != 1 or len(added) != 1 or len(kept) < 2 or len(old.anchors) > 3 \
            or not _replacer(new, gone[0], added[0]):
        return None
    old_value = next(a for a in old.anchors if a.key == short.get(gone[0].key, gone[0].key))
    holder = next(a for a in new.anchors if short.get(a.key, a.key) in kept and a is not gone[0])
    return Same("contradiction_fork", _spelled(new_text, holder), "", _spelled(old_text, old_value),
                _spelled(new_text, added[0]), f"the old value {old_value.key!r} said gone, {added[0].key!r} named")


def _said_gone(r: Reading, a: Anchor) -> bool:
    return _GONE_BEFORE.search(r.text[:a.start]) is not None or _GONE_AFTER.match(r.text[a.end:]) is not None


def _replacer(r: Reading, gone: Anchor, added: Anchor) -> bool:
    """Is the new name where the one who takes the old value's place is said? The name right before "replaced"
    ("Dr Sarpong has replaced Dr Hart"), a name after the gone one ("divorced A and married B"), either side of
    "stepped down". "Kai replaced Lena Ortiz as lead at Fenwick" names no one in Lena's place."""
    if _GONE_AFTER.match(r.text[gone.end:]):
        return True
    if _LEFT_BEFORE.search(r.text[:gone.start]):  # "left Lumen Labs for Quanta", "cancelled X and joined Y"
        return _FOR_NEXT.fullmatch(r.text[gone.end:added.start]) is not None \
            and not any(a.start > added.end for a in r.anchors)  # "left X for Berlin on Monday": a trip
    if re.search(r"\b(?:replac|succeed|t(?:ook|aking|akes) over)\w*\s+(?:\w+\s+)?$", r.text[:gone.start]):
        before = [a for a in r.anchors if a.end <= gone.start]
        return bool(before) and before[-1] is added
    return added.start > gone.end


def refines(old_text: str, new_text: str) -> bool:
    """Does the new sentence say all the old one says, and more ("I have a dog." -> "My dog is a spaniel called
    Moss.")? All the old names and relation words are in it, with at least two more words or one more name; a
    relative it names is the one the old sentence is about ("has a sister" -> "her sister Imelda ..."), and
    neither negates, nor says "also" or "another" (a second one), nor is a hypothetical ("if I ever ...")."""
    old, new = read(old_text, new_text), read(new_text, old_text)
    if old.negated or new.negated or new.also or not old.anchors or not old.words \
            or _HYPOTHETICAL.search(old_text) or _HYPOTHETICAL.search(new_text):
        return False
    if _says_change(old_text, new_text, verbs_only=True):
        return False  # "... at 3pm was moved to 4pm": a change said outright is not more detail
    new_keys = [set(a.key.split()) for a in new.anchors]  # "Hassan" is in "Leila Hassan": said more fully
    if not all(any(set(a.key.split()) <= k for k in new_keys) for a in old.anchors) \
            or not set(old.words) <= set(new.words):
        return False
    if {stem(w) for w in new.relatives | old.relatives} - set(old.words):
        return False  # "X works at Y" -> "X's husband works at Y": about someone else
    more_words = len(set(new.words) - set(old.words))
    return more_words >= 2 or len(new.anchors) > len(old.anchors)
