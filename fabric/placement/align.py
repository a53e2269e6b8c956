"""Same fact or not, for any relation: align two sentences' names and values, then compare what is left.

The lexicon (facts.py) reads the relations it knows. This reads the rest, with no word list of
relations, so a relation nobody wrote down ("Leon Ashby's parrot is called Kiwi", "the billing
service runs on Python 3.10") is still recognised when it is restated:

1. Anchors: the names and numbers of each sentence (facts.names), after writing numbers one way
   ("twelve" -> 12, "forty-two thousand" -> 42000, "555-0177" = "555 0177", "8 am" = "8:00 in the
   morning" = 08:00), and the other sentence's names found in any case ("the payments team").
2. Alignment: anchors in both sentences are the subject; one anchor in each that differs is the
   value; a number's unit ("14 delivery vans", "18 euros") must agree.
3. Relation: the words left when anchors, grammar words and words of change ("now", "moved",
   "raised") are taken out, stemmed. The same words are the same attribute; otherwise the two masked
   sentences must be close in meaning by the real embedding model (`similarity`, cached per phrase).
4. Guards (when unsure, another fact): no shared anchor (name twins "Kenji Mori" / "Kenji Morita",
   sister products "Helix API" / "Helix SDK"), a role swap ("A reports to B" / "B reports to A"), a
   relative ("X's son attends ..."), "also" / "another" or a verb of many values ("has", "visited",
   "speaks") with a changed name, a qualifier on one side only ("guest wifi password"), a negation
   on one side only.

Pure functions of the two texts plus the similarity callable: deterministic."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Callable, Literal

import numpy as np

from .facts import CURRENCY, GONE_BEFORE, Span, _names as names, _project, currency, number_key

# ------------------------------------------------------------------------------ numbers written one way

_UNITS = {w: i for i, w in enumerate("""zero one two three four five six seven eight nine ten eleven twelve
    thirteen fourteen fifteen sixteen seventeen eighteen nineteen""".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if i > 1}
_MULTIPLIERS = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORD = "|".join([*_UNITS, *_TENS, *_MULTIPLIERS, "and", "a"])
_NUMBER_PHRASE = re.compile(rf"\b(?:{'|'.join([*_UNITS, *_TENS])})(?:[\s-]+(?:{_NUMBER_WORD}))*\b", re.IGNORECASE)


def _words_to_number(phrase: str) -> tuple[int, int] | None:
    """'forty-two thousand' -> (42000, words used); stops at the first word that is no number word."""
    total, current, used = 0, 0, 0
    parts = re.split(r"[\s-]+", phrase.lower())
    for i, w in enumerate(parts):
        if w in _UNITS:
            current += _UNITS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        elif w in ("thousand", "million"):
            total += max(current, 1) * _MULTIPLIERS[w]
            current = 0
        elif w == "and" and i + 1 < len(parts) and (parts[i + 1] in _UNITS or parts[i + 1] in _TENS):
            continue
        else:
            break
        used = i + 1
    return (total + current, used) if used else None


def _spell_numbers(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        got = _words_to_number(m.group())
        if got is None:
            return m.group()
        value, used = got
        rest = re.split(r"([\s-]+)", m.group())[2 * used:]  # the words after the number, with their separators
        return str(value) + "".join(rest)
    return _NUMBER_PHRASE.sub(sub, text)


# "the third floor" = "the 3rd floor", "week 1" = "the first week": an ordinal before a noun, after "the" / "each"
_ORDINALS = {w: f"{i}{'st' if i == 1 else 'nd' if i == 2 else 'rd' if i == 3 else 'th'}" for i, w in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split(), 1)}
_ORDINAL = re.compile(rf"\b((?i:the|each|every))\s+((?i:{'|'.join(_ORDINALS)}))\b(?=[\s-]+[a-z]+)")
_PHONE = re.compile(r"(?<![\w.])\+?\d{2,4}(?:[ .-]\d{2,6}){1,4}(?!\w|[.:]\d)")
_CLOCK = re.compile(r"\b(\d{1,2})(?:[:.](\d\d))?\s*(?:(a\.m\.|p\.m\.|am|pm)(?!\w)|o'clock\b"
                    r"|(?=\s+in the (morning|afternoon|evening)\b)|(?=\s+at night\b))", re.IGNORECASE)
_BARE_CLOCK = re.compile(r"\b(\d{1,2}):(\d\d)\b")
_DAY_PART = re.compile(r"(\d\d:\d\d)\s+(?:in the (?:morning|afternoon|evening)|at night)\b", re.IGNORECASE)


# Opening hours, one value however written: "9 to 5", "from 10:00 to 18:00", "8:00–20:00", "opens at 10
# and closes at 6" -> "09:00-17:00". A bare hour only after a word of opening hours; an end hour not after
# the start, or before 8, is in the afternoon ("9 to 5", "10 to 6").
_HOURS_WORD = (r"((?:\b(?:open|opens|opened|staffed|hours(?: are| of)?|shifts? (?:is|are|runs?))\s+"
               r"(?:from\s+|between\s+)?))")
_BARE_HOURS = re.compile(_HOURS_WORD + r"(\d{1,2}|\d\d:\d\d)\s*(?:to|till|until|and|-|–|—)\s*(\d{1,2}|\d\d:\d\d)"
                         r"\b(?![:.]\d)"
                         r"(?!\s*(?:%|percent|people|years?|days?|weeks?|months?|hours?|minutes?))", re.IGNORECASE)
_OPEN_CLOSE = re.compile(r"\b(opens?|opened)\s+(?:at\s+)?(\d{1,2}|\d\d:\d\d)\s*(?:,\s*)?(?:and\s+)?"
                         r"(?:closes?|closed|shuts?)\s+(?:at\s+)?(\d{1,2}|\d\d:\d\d)\b(?![:.]\d)", re.IGNORECASE)
_HOURS = re.compile(r"\b(\d\d:\d\d)\s*(?:to|till|until|-|–|—)\s*(\d\d:\d\d)\b")
# "by the end of June 2025" is the month's deadline: "June 2025"
_MONTH_END = re.compile(r"\b(?:the\s+)?(?:end|close|last day)\s+of\s+(" + "|".join(
    "January February March April May June July August September October November December".split())
    + r")\b", re.IGNORECASE)


def _hour(said: str, start: str | None) -> str:
    """A clock time or a bare hour of opening hours as HH:MM (`start`: the range's first hour, for its end)."""
    if ":" in said:
        return said
    hour = int(said)
    first = None if start is None else int(start.split(":")[0])
    if first is None:
        hour += 12 if hour < 6 else 0
    elif hour <= 12 and (hour <= first or hour < 8):
        hour += 12
    return f"{hour % 24:02d}:00"


def _clock(m: re.Match[str]) -> str:
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    after = m.string[m.end():m.end() + 30].lower()
    pm = (m.group(3) or "").lower().startswith("p") or re.match(r"\s+(?:in the (?:afternoon|evening)|at night)",
                                                                 after) is not None
    if pm and hour < 12:
        hour += 12
    if hour > 23 or minute > 59:
        return m.group()
    return f"{hour:02d}:{minute:02d}"


_ISO_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_THERE = re.compile(r"\b((?:at|in)\s+(?:[A-Z][\w&'.-]*)(?:\s+[A-Z][\w&'.-]*)*)\s*([:;,–—-])(.*?)\bthere\b")


# Chat memories name their subject "the user", "User", "I", "me" or "my": one subject, written "User";
# "we" and "our team" name another, the user's team, written "Team" ("our" alone is left: in "our main
# database" the database is the holder). A first-person verb is put in the third person ("I drive" ->
# "User drives"), as the lexicon reads a named subject's. "I" after a lower-case word or at a clause's
# start only ("btw I live"), not "World War I ended"; in chat also "i'm", "i've".
_VERB = (r"((?:(?:now|still|also|currently|just|actually|really|only|mostly|usually|no longer|recently)\s+)?)"
         r"([a-z]+)\b(?!['’])")
_AFTER = "(?:^|(?<=[.!?,;:]\\s)|" + "|".join(rf"(?<=\b[a-z]{{{n}}}\s)" for n in range(1, 13)) + ")"
_I = _AFTER + "I"
_I_CHAT = _AFTER + "[Ii]"  # "i'm", "i've": a contraction says the pronoun ("i moved to sales": unread)
# "we" as a clause's subject only: "on Fridays we hold the retro" tells of an event, no team's attribute
_WE = "(?:^|" + "|".join(rf"(?<=\b{w}\s)" for w in ("so", "and", "but", "btw", "fyi", "also", "now")) \
    + r"|(?<=[.!?,;:]\s))[Ww]e"
# A chat note with no subject ("Moved to Porto last month.", "Works at Stripe now.") is about the user.
_NO_SUBJECT = re.compile(r"(?:^|(?<=[.!?]\s))(?:((?i:just|recently|finally|now))\s+)?"
                         r"((?i:moved|relocated|started|joined|switched|lives|works|drives|prefers|left|quit)"
                         r"(?=\s+(?:(?:to|at|in|for|with|from|into|over)\s+)?[A-Z])"
                         # "starting a new job at Figma", not "Starting Monday, Dana leads ..."
                         r"|(?i:started|starting)(?=\s+(?:a\s+new\s+job|a\s+new\s+role|work|at)\s+(?:at\s+|with\s+)?[A-Z]))")
_USER = ((_NO_SUBJECT, lambda m: " ".join(["User", *(g.lower() for g in m.groups() if g)])),
         (re.compile(r"\b(?:the\s+)?user(?=\b(?!-))", re.IGNORECASE), "User"),
         (re.compile(r"\b[Mm]y\b"), "User's"), (re.compile(_I_CHAT + r"['’]m\b"), "User is"),
         (re.compile(_I_CHAT + r"['’]ve\b"), "User has"), (re.compile(_I_CHAT + r"['’]d\b"), "User would"),
         (re.compile(_I + r" " + _VERB), lambda m: _agree("User", m)),
         (re.compile(r"\b(?:[Oo]ur|[Mm]y) (?:team|company|org|organi[sz]ation|startup|group)\b(?!['’])"), "Team"),
         (re.compile(r"\b[Oo]ur (?=(?:HQ|hq|headquarters|head office|main office|budget|headcount)\b)"), "Team's "),
         (re.compile(_WE + r"['’]re\b"), "Team is"), (re.compile(_WE + r"['’]ve\b"), "Team has"),
         (re.compile(_WE + " " + _VERB), lambda m: _agree("Team", m)))
_ME = re.compile(r"(?<=[a-z] )me\b(?!['’-])")
_NOT_VERBS = frozenset("""can could will would shall should may might must did do does is was were has had
am are have used got went is been being not never to a an the and or but now""".split())
_IRREGULAR = {"am": "is", "are": "is", "were": "was", "have": "has", "do": "does", "go": "goes"}


def _agree(subject: str, m: re.Match[str]) -> str:
    """"I work at" -> "User works at": the third person the lexicon's verbs are written in."""
    verb = m.group(2)
    if verb in _IRREGULAR:
        verb = _IRREGULAR[verb]
    elif not (verb in _NOT_VERBS or verb.endswith(("ed", "s", "ing")) or len(verb) < 2):
        verb = verb[:-1] + "ies" if re.search(r"[^aeiou]y$", verb) else \
            verb + "es" if verb.endswith(("sh", "ch", "x", "o", "z")) else verb + "s"
    return f"{subject} {m.group(1)}{verb}"


# "X said (that) they moved ...", "X told me his ...": the speaker's own fact, told as X's ("X moved ...").
_REPORTED = re.compile(r"\b([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)\s+(?:said|says|mentioned|mentions|told\s+(?:me|us)"
                       r"|tells\s+(?:me|us)|noted|notes|explained|shared|confirmed|confirms|reported|wrote)"
                       r"(?:\s+that)?\s+(they|he|she|their|his|her)\b")
# "Ms. Adaeze Nwosu": without its dot the honorific is a title the name leaves out (facts.names).
_HONORIFIC = re.compile(r"\b(Mr|Mrs|Ms|Mx|Dr|Prof)\.\s+(?=[A-Z])")
# "reports directly to", "works closely with": an adverb inside a relation phrase says nothing of the relation.
_INNER_ADVERB = re.compile(r"\b([a-z]+(?:s|ed))\s+[a-z]{2,}ly\s+(to|into|for|at|in|with|by|from|on|under)\b")

# "go-to restaurant", "fave film": the favourite, written one way for the lexicon and the alignment alike.
_FAVOURITE_WORD = re.compile(r"\b(?:go-to|fave|favored|favoured)(?=\s+[a-z])", re.IGNORECASE)

# "... is Middlemarch, not Dune": the value denied after a comma is the old one, not a negation of the fact.
_NOT_THAT = re.compile(r",\s*not\s+(?:the\s+)?[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*(?=\s*(?:[.!?;]|$))")

# "Jonas is no longer in Oslo, he lives in Bergen": the old value denied, then the new one said of a pronoun;
# what the sentence states is its second clause, said of its subject ("Jonas lives in Bergen").
_NO_LONGER = re.compile(r"^(?P<subject>[^,;.:]+?)\s+(?:(?:is|are|does|do|has|have|was|were)(?:\s+no longer|n't|\s+not)"
                        r"|no longer)\b[^,;.:]*(?:[,;:]|\s[–—-])\s*(?:(?:and|but|so)\s+)?(?:now\s+)?"
                        r"(?:he|she|they|it)(?!(?:'s|'re|\s+is|\s+are)\s+(?:now\s+)?(?:at|in|on|with|for)\b)"
                        r"(?P<be>'s|'re|\s+is|\s+are)?\s+(?!(?:said|says|thinks|told|wrote)\b)(?=\w)", re.IGNORECASE)
# ("... Siemens; she is now at Bosch": "is at" names no attribute, so the first clause's verb is kept to read.)


# "Zara, who used to live in Glasgow, now lives in Dundee": the clause names the old value; the sentence states the new.
_USED_TO_CLAUSE = re.compile(r",\s*(?:who|which)\s+(?:used to|was formerly|were formerly|formerly|previously)\b"
                             r"[^,]*,\s*", re.IGNORECASE)


# A terse note as users write one: a head, a mark, a value ("Nordlys HQ: Tromsø", "HQ -> Bergen", "Atlas budget =
# $15k", "New boss: Dana Reyes"), read as the sentence it stands for ("Nordlys HQ is now Bergen"). A head with
# no name is an attribute of the user's own ("Rent: 1,200/mo" -> "User's rent is ..."), when it names one.
_NOTE = re.compile(r"^\s*(?P<head>[A-Za-z][\w'&. -]{0,40}?)\s*(?P<mark>:|=|->|→|=>)\s*"
                   r"(?P<value>[^\s:=→].{0,60}?)\s*[.!]*\s*$")
_NOT_NOTE_HEAD = frozenset("""note notes update updates reminder todo to-do fyi btw ps correction edit re fwd question
    answer summary context tldr tl;dr heads-up warning important action next status log""".split())
# the user's own attributes a note may name with no holder ("New boss: ...", "Rent: ...", "HQ: ...")
_OWN_HEADS = frozenset("""boss manager rent salary home address employer job title role phone mobile email car dentist
    doctor gp landlord partner city diet bank lawyer coach mentor birthday age hq headquarters office budget
    headcount""".split())
# heads of the user's team's attributes ("HQ: Tromsø", "Budget: $20k"); heads naming the holder's tools
_TEAM_HEADS = frozenset("hq headquarters office budget headcount".split())
_STACK_HEADS = frozenset("stack db database tooling".split())
_HOLDER_WORDS = _OWN_HEADS | _TEAM_HEADS | _STACK_HEADS | {"new", "current", "my", "our", "the"}
_DONE_MARK = re.compile(r"\s*(?:✅|✔️?|☑️?|👍)\s*")


def note(t: str) -> str:
    """The sentence a terse note stands for, or the text as it is."""
    m = _NOTE.match(t)
    if m is None or "\n" in t:
        return t
    head, mark, value = m.group("head").strip(), m.group("mark"), _DONE_MARK.sub(" ", m.group("value")).strip()
    words = head.split()
    if not value or len(words) > 4 or len(value.split()) > 5 or words[0].lower() in _NOT_NOTE_HEAD \
            or re.search(r"\b(?:is|are|was|were|has|have|will)\b", head + " " + value):
        return t  # a label before a sentence ("Update: Nordlys moved ..."), not a note
    now = " now" if mark in ("->", "→", "=>") else ""
    noun = words[-1].lower()
    # (a head of one word is capitalised as any note begins: "Lunch: pizza" names nothing)
    named = len(words) > 1 and any(w[0].isupper() and w.lower() not in _HOLDER_WORDS for w in words)
    if noun in _STACK_HEADS:  # "Stack: Postgres", "Atlas DB: MySQL": the holder's tool
        holder = " ".join(words[:-1]) if named else "Team"
        return f"{holder} switched to {value}" if now else f"{holder} uses {value}"  # (an arrow: a switch)
    if noun in ("job", "employer", "workplace") and not named:  # "New job: Figma": where the user works
        return f"User{now} works at {value}"
    if not named:
        if noun not in _OWN_HEADS:
            return t
        rest = [w for w in words if w.lower() not in ("my", "our", "team")]
        holder = "Team's" if noun in _TEAM_HEADS or words[0].lower() in ("our", "team") else "User's"
        head = " ".join([holder, *(w if w.isupper() else w.lower() for w in rest)])
    return f"{head} is{now} {value}"


# "moved back to Lisbon", "moved back home to Lisbon": a move to a place, as "moved to Lisbon"
_BACK = re.compile(r"\b(moved|relocated|went)\s+back\s+(?:home\s+)?to\b", re.IGNORECASE)
# "User left Stripe", "quit Stripe today": an end, no new value; read as "no longer works at Stripe"
_LEFT = re.compile(r"^(?P<who>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)\s+(?:just\s+|finally\s+|officially\s+)?"
                   r"(?:left|quit)\s+(?P<what>[A-Z][\w&'.-]*(?:\s+[A-Z][\w&'.-]*)*)"
                   r"(?P<tail>(?:\s+(?:today|yesterday|this week|last week|last month|in [A-Z][a-z]+))?"
                   r"\s*[^\w\s]*\s*)$")
# "started at Figma", "starting a new job at Figma": a job, in the words the lexicon and the alignment read one
_STARTED = re.compile(r"\b(started|starting|starts)\s+(?:(?:a|my|her|his|their)\s+)?(?:new\s+)?"
                      r"(?:(?:job|role|position|work)\s+)?(?:at|with)(?=\s+[A-Z])")
# "3,200/mo", "/month", "/yr": one word per period ("monthly"), as "a month" is written
_SLASH_PERIOD = re.compile(r"(\d[\d,.]*\s*[kKmM]?)\s*/\s*(mo|month|yr|year|wk|week|day)\b")
_SLASH_WORD = {"mo": "monthly", "month": "monthly", "yr": "annual", "year": "annual", "wk": "weekly", "week": "weekly",
               "day": "daily"}


def _no_longer(m: re.Match[str]) -> str:
    return m.group("subject") + (" is " if m.group("be") else " ")


_MONTH_NAMES = "January February March April May June July August September October November December".split()
_MONTH = r"(January|February|March|April|May|June|July|August|September|October|November|December)"
_ISO_DAY = re.compile(r"\b(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b(?!-\d)")
# ("Room 4 May be closed": the verb "may" is no month.)
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b(?!(?<=May)\s+[a-z])"
                        rf"(?:,?\s+(\d{{4}})\b)?")
# "April 10th 2027", "April 10 2027": the year joined as "April 10, 2027" is one date, not a day and a year.
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:(?:st|nd|rd|th)\b(?:,?\s+(\d{{4}})\b)?|,?\s+(\d{{4}})\b)")


def _dates(t: str) -> str:
    """"2025-03-14", "14 March 2025", "the 14th of March", "March 14th" -> "March 14, 2025" / "March 14"."""
    t = _ISO_DAY.sub(lambda m: f"{_MONTH_NAMES[int(m.group(2)) - 1]} {int(m.group(3))}, {m.group(1)}", t)
    t = _DAY_MONTH.sub(lambda m: f"{m.group(2)} {int(m.group(1))}" + (f", {m.group(3)}" if m.group(3) else ""), t)
    return _MONTH_DAY.sub(lambda m: f"{m.group(1)} {m.group(2)}" + (f", {m.group(3) or m.group(4)}"
                                                                   if m.group(3) or m.group(4) else ""), t)

# "pushed back 2 weeks, to October 14", "delayed by three days": how far it moved is no value of its own.
_SHIFT = re.compile(r"\b((?:pushed|moved|pulled|brought|set)\s+(?:back|forward|out|up)|delayed|postponed|"
                    r"extended)\s+(?:by\s+)?(?:about\s+)?(?:a|an|\d+)\s+(?:days?|weeks?|months?|hours?|years?)\b,?",
                    re.IGNORECASE)
# "v16.2": a version is its number.
_VERSION = re.compile(r"\bv(\d+(?:\.\d+)+)\b")


def _reported(m: re.Match[str]) -> str:
    return m.group(1) + ("'s" if m.group(2) in ("their", "his", "her") else "")


_SHOUTED = re.compile(r"[A-Z]{2,}\W+[A-Z]{2,}\W+[A-Z]{2,}")


_PER_PERIOD = re.compile(r"(\d(?:[\d,.]*\d)?\s*(?:[kKmM]\b|%)?(?:\s*[a-z]+)?\s+)"
                         r"(?:a|per|each|every)\s+(year|month|week|day)\b", re.IGNORECASE)
_PERIODICAL = {"year": "annual", "month": "monthly", "week": "weekly", "day": "daily"}


@lru_cache(maxsize=16384)
def canonical(text: str) -> str:
    """The sentence with numbers, times, dates and phone numbers written one way (NFKC first), the
    user written "User", reported speech and honorifics dropped."""
    t = unicodedata.normalize("NFKC", text).replace("’", "'")
    if _SHOUTED.search(t) and not re.search(r"[a-z]", t):  # all capitals say nothing of names: read it in lower case
        t = t.lower()
    t = _dates(note(t))
    t = _BACK.sub(r"\1 to", t)
    t = _SLASH_PERIOD.sub(lambda m: f"{m.group(1)} {_SLASH_WORD[m.group(2)]}", t)
    for pattern, user in _USER:
        t = pattern.sub(user, t)
    t = _STARTED.sub(r"\1 working at", t)
    t = _LEFT.sub(lambda m: f"{m.group('who')} no longer works at {m.group('what')}{m.group('tail')}", t)
    t = _REPORTED.sub(_reported, t)
    t = _ME.sub("User", t)  # after reported speech ("told me they moved")
    t = _NO_LONGER.sub(_no_longer, t)
    t = _USED_TO_CLAUSE.sub(" ", t)
    t = _HONORIFIC.sub(r"\1 ", t)
    t = _INNER_ADVERB.sub(r"\1 \2", t)
    t = _FAVOURITE_WORD.sub(lambda m: "Favourite" if m.group()[0].isupper() else "favourite", t)
    t = _NOT_THAT.sub("", t)
    t = re.sub(r"\bhalf past (\w+)", r"\1:30", t, flags=re.IGNORECASE)
    t = re.sub(r"\b(noon|midday)\b", "12:00", t, flags=re.IGNORECASE)
    t = re.sub(r"\bmidnight\b", "00:00", t, flags=re.IGNORECASE)
    t = re.sub(r"\b(open(?:s|ed)?) (?:its|their|the) doors\b", r"\1", t)  # "opens its doors at 9": opens at 9
    t = re.sub(r"\b([Yy])early\b", lambda m: "Annual" if m.group(1) == "Y" else "annual", t)  # one word per period
    t = _spell_numbers(t)
    t = _ORDINAL.sub(lambda m: f"{m.group(1)} {_ORDINALS[m.group(2).lower()]}", t)
    # "$6M a year" = "$6M annual revenue", "$15 a month" = "a monthly price of $15": one word per period
    # (after an amount only: "postponed by a week" is no period)
    t = re.sub(r"\bper annum\b|\bannually\b", "annual", t)
    t = _PER_PERIOD.sub(lambda m: m.group(1) + _PERIODICAL[m.group(2).lower()], t)
    t = _SHIFT.sub(lambda m: m.group(1).split()[0], t)  # "pushed back 2 weeks, to" -> "pushed to"
    t = _VERSION.sub(r"\1", t)
    t = re.sub(r"\bv(\d+)\b", r"V\1", t)  # "the Helix API v2": a name of its own
    # "Ask anyone at Ostara Labs: Ada works there" -> "Ask anyone: Ada works at Ostara Labs"
    t = _THERE.sub(lambda m: f"{m.group(2)}{m.group(3)}{m.group(1).split()[0]} {m.group(1).split(None, 1)[1]}", t)
    t = re.sub(r"\s*°\s*[CF]\b|°", " degrees", t)
    t = re.sub(r"\s*(?:per ?cent|percent)\b", "%", t, flags=re.IGNORECASE)
    t = _PHONE.sub(lambda m: re.sub(r"[ .-]", "-", m.group()) if len(re.sub(r"\D", "", m.group())) >= 7
                   and not _ISO_DATE.fullmatch(m.group()) else m.group(), t)  # "555 0177" -> "555-0177": one token
    t = _CLOCK.sub(_clock, t)
    t = _BARE_CLOCK.sub(lambda m: f"{int(m.group(1)):02d}:{m.group(2)}" if int(m.group(1)) < 24 else m.group(), t)
    t = _DAY_PART.sub(r"\1", t)
    t = _OPEN_CLOSE.sub(lambda m: f"{m.group(1)} {_hour(m.group(2), None)}-{_hour(m.group(3), m.group(2))}", t)
    t = _BARE_HOURS.sub(lambda m: f"{m.group(1)}{_hour(m.group(2), None)}-{_hour(m.group(3), m.group(2))}", t)
    t = _HOURS.sub(r"\1-\2", t)
    return _MONTH_END.sub(r"\1", t)


# ------------------------------------------------------------------------------------------ reading

_STOP = frozenset("""a an the is are was were be been being has have had of in on at to for by with as and or but
    its it it's his her their our my your this that which who whom whose what where when there here than so then
    very also still any all some each every both either do does did can could will would shall should may might
    must just only about into from up out off per via s 'd 'll 're 've i we you he she they them us
    me him one ones""".split())
# Words that tell a value changed, not which attribute: "moved to", "now", "raised its price to".
_CHANGE = frozenset("""now new newly changed change changes moved move moves switched switch updated update
    since currently these days nowadays anymore raised lowered increased decreased dropped grew grown slipped
    pushed promoted became become becomes replaced replacing instead latest recently today lately longer passed
    went gone has been set reset sold bought officially effective starting renamed transferred shifted upgraded
    downgraded rewritten changed traded swapped exchanged stepped resigned retired departed replaced
    actually relocated migrated started starting began down up cut""".split())
# "X's son attends ...", "X's husband works at ...": the fact is about someone else.
RELATIVES = frozenset("""son daughter child children kid kids wife husband spouse partner sister brother sibling
    mother father mom mum dad parent parents grandmother grandfather aunt uncle cousin niece nephew friend
    boss deputy assistant colleague neighbour neighbor fiance fiancee girlfriend boyfriend team-mate""".split())
_RELATIVE = re.compile(rf"(?:'s?|\b(?:his|her|their|its|our|your))\s+(?:[a-z-]+\s+)?({'|'.join(RELATIVES)})\b"
                       rf"|\b({'|'.join(RELATIVES)})\s+of\b")
_WHEN = re.compile(r"\b(?:from|starting|beginning|as of|effective)\s+(?:next|this|the coming|tomorrow|today|now)"
                   r"(?:\s+(?:week|month|year|quarter|season))?\b")
# A subject holds several values of these at once: a new name is another fact, not a correction.
_MANY = re.compile(r"\b(?:visited|visits|(?:has|have) been to"
                   r"|speaks|speak|plays|play|collects|owns|includes?|available on|member of"
                   r"|ha(?:s|ve) an? (?![\w-]+ (?:named|called)\b)"  # but "has a dog named Ziggy": its name
                   r"|supports|offers|serves|sells|stocks|attends?|friends with"
                   r"|volunteers?|partners? with|collaborates? with|works? with|donates? to"
                   r"|depends? on|dependenc(?:y|ies))\b")
_ALSO = re.compile(r"\b(?:also|another|too|as well|additional)\b")  # said outright: one more value
_NEGATION = re.compile(r"\b(?:not(?! (?:far|only|just|least|bad|unlike)\b)|no longer|never|none|neither|nor|without)\b"
                       r"|n't\b")
# One attribute in other words: stems mapped to one word before relation words are compared.
_SAME_WORD = {"due": "deadlin", "resident": "population", "inhabitant": "population", "populat": "population",
              "fee": "price", "cost": "price", "charg": "price", "pric": "price", "deliv": "ship", "shipp": "ship",
              "bill": "price", "pay": "price", "paid": "price", "employ": "staff", "worker": "staff",
              "annual": "year", "shut": "clos", "nam": "call", "written": "writ", "implement": "writ", "cod": "writ"}
# Verbs that only say an event is scheduled ("happens on", "takes place on", "we hold it on"): no attribute.
_SCHEDULED = re.compile(r"\b(?:(?:takes?|took|taking|taken) place|(?:planned|scheduled|slated|expected|set) (?=for|on)"
                        r"|happens?|happened|happening|occurs?|occurred"
                        r"|(?<!on )(?:holds?|held))\b")
_SCHEDULE_WORDS = frozenset("happen happens happened happening occur occurs occurred planned scheduled slated "
                            "expected".split())
# Words a money value implies: "the shipping fee is €4.99" / "orders ship for €6.50".
_PRICE_WORDS = frozenset({"price"})
_TIME_WORDS = frozenset({"tim"})  # "opening time at X is 9:00" / "X opens at 9:00"
_DATE_WORDS = frozenset({"dat"})  # "the launch date" / "the launch": said by a date value


_WEEKDAY = re.compile(r"(?:mon|tues|wednes|thurs|fri|satur|sun)day")


def word_key(word: str) -> str:
    """A relation word's compared form: its stem, one stem per synonym group."""
    w = stem(word)
    return _SAME_WORD.get(w, w)


_ACTIVITY = re.compile(r"\b(?:is|are|am|was|were)\s+(?:\w+ly\s+)?(?!being\b)\w{3,}ing\b")
# Simple past right after a name: an event ("X presented ...", "X asked Y ..."); each is a fact of its own.
# Verbs of change ("moved", "raised", "sold") state a new value instead (see _CHANGE).
_EVENT_VERB = re.compile(r"(?:[a-z]{3,}ed|told|took|gave|met|went|made|sent|wrote|bought|left|found|built|won|lost"
                         r"|ran|saw|spoke|brought|taught|paid|held|drove|flew|ate|read|gave|began|chose)$")


def _event(text: str, anchors: tuple[Anchor, ...]) -> bool:
    for a in anchors:
        m = re.match(r"\s+(?:(?:also|then|just|recently|finally|once)\s+)?([a-z]+)\b", text[a.end:])
        if m and _EVENT_VERB.match(m.group(1)) and m.group(1) not in _CHANGE:
            return True
    return False


_CLAUSE = re.compile(r"[,;]|\b(?:and|but|with|who|which|while|because|although)\b")
_WORD = re.compile(r"[a-z][a-z'-]*")


def stem(word: str) -> str:
    """A crude English stem, enough to equate 'prefers' / 'preferred', 'owner' / 'owns' / 'ownership',
    'quarter' / 'quarterly', 'allergic' / 'allergy', 'services' / 'service'."""
    w = word.lower().removesuffix("'s").strip("'-")
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif re.search(r"(?:ch|sh|x|z|ss)es$", w):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    for _ in range(2):
        for suffix in ("ship", "ing", "ed", "er", "ly", "ure", "ic", "y", "e"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)]
                if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsaeiou":
                    w = w[:-1]  # "planned" -> "plann" -> "plan"
                break
    return w


@dataclass(frozen=True, slots=True)
class Anchor:
    key: str          # compared form
    kind: str         # "name" | "number" | "time"
    unit: str | None  # a number's unit stem ("van", "money"), if it says one
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Reading:
    text: str                      # canonical, lower-case
    anchors: tuple[Anchor, ...]
    words: tuple[str, ...]         # relation and detail stems outside the anchors, in order (no change words)
    negated: bool
    many: bool                     # a verb of many values, or an activity ("is mentoring")
    also: bool                     # "also", "another": one more value, said outright
    event: bool                    # tells what someone did ("X presented the roadmap to Y"), not a state
    relatives: frozenset[str]
    heads: frozenset[tuple[str, str]] = frozenset()  # (name, head): "the Delta service" -> ("delta", "service")


_TIME = re.compile(r"\d\d:\d\d")
_CURRENCY = re.compile(rf"[$€£]|\b(?:{CURRENCY})\b", re.IGNORECASE)
_COPULA_AFTER = re.compile(r"\s+(?:is|was|are|were|'s|remains|has been|will be)\b")


_DATE_WORD = re.compile(r"\b(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|january|february|march|april|may|june|july"
                        r"|august|september|october|november|december)", re.IGNORECASE)


def _kind(span: Span) -> str:
    """What sort of value: its sort alone says much of the attribute (a phone number, an e-mail, a time)."""
    if _TIME.fullmatch(span.text) or _HOURS.fullmatch(span.text):
        return "time"  # (or opening hours, "09:00-17:00")
    if "@" in span.text:
        return "email"
    if re.fullmatch(r"\+?\d[\d-]{5,}\d", span.text) and len(re.sub(r"\D", "", span.text)) >= 7:
        return "phone"
    if _DATE_WORD.match(span.text):
        return "date"
    return "number" if span.number else "name"


# Units of one dimension measure one attribute ("30 seconds" -> "two minutes"); other nouns count other things.
_DIMENSIONS = {**{stem(w): "time" for w in "second seconds minute minutes hour hours day days week weeks month months"
                  " year years".split()},
               **{stem(w): "length" for w in "mm cm metre metres meter meters km kilometres miles mile feet foot inch"
                  " inches".split()},
               **{stem(w): "weight" for w in "g gram grams kg kilo kilos kilograms pound pounds lb lbs".split()}}


def _dimension(unit: str) -> str:
    return _DIMENSIONS.get(unit, unit)


def _unit(text: str, span: Span) -> str | None:
    if _CURRENCY.search(span.text) or _CURRENCY.match(text[span.end:].lstrip()):
        return "money"
    m = re.match(r"\s*(?:%|[a-z][a-z-]*)", text[span.end:])
    if m is None:
        return None
    word = m.group().strip()
    if stem(word) in _DIMENSIONS:  # "4 days" ("days" is also a word of change: "these days")
        return stem(word)
    return None if word in _STOP or word in _CHANGE else word_key(word)


_CALENDAR = re.compile(r"\b(?:(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?|January|February|March|April|May|June|July"
                       r"|August|September|October|November|December)(?:\s+\d{1,2}(?:st|nd|rd|th)?\b)?"
                       r"|\b(?:1[89]|20)\d\d\b")


_STATEMENT_TIME = re.compile(r"\b(?:since|from|until|till|as of|starting|effective|through)\s+$", re.IGNORECASE)


def _calendar(text: str, spans: tuple[Span, ...]) -> tuple[Span, ...]:
    """Days, months and years facts.names leaves out as times of the statement: here they may be the value
    ("the review is on Tuesdays" -> "every Thursday")."""
    extra = []
    for m in _CALENDAR.finditer(text):
        if any(m.start() < sp.end and sp.start < m.end() for sp in spans) or _STATEMENT_TIME.search(text[:m.start()]):
            continue  # "Since March, ..." is when the statement holds, not a value
        key = re.sub(r"days?\b", "day", m.group().lower())
        extra.append(Span(m.start(), m.end(), m.group(), key, False, m.group().isdigit()))
    return tuple(sorted((*spans, *extra), key=lambda sp: sp.start))


@lru_cache(maxsize=16384)
def _spans(text: str) -> tuple[tuple[Span, ...], Span | None]:
    """facts.names of a canonical sentence, and a capitalised first word that may be grammar ("Call the
    clinic", "Passwords must ...", "Orders under ..."), unless it is what the sentence is about ("Linear is
    what the team uses")."""
    spans = names(text)
    first = spans[0] if spans else None
    lead = re.match(r"[A-Z][a-z]+\s+(?=\d)", first.text) if first is not None and first.start == 0 else None
    # "Locker 214 belongs to ...": the number is the name.
    if lead and first is not None and not _COPULA_AFTER.match(text[first.end:]):
        rest = first.text[lead.end():]
        number = number_key(rest)
        first = Span(first.start + lead.end(), first.end, rest, number or rest.casefold(), first.possessive,
                     number is not None)
        spans = (first, *spans[1:])
    doubtful = first is not None and not text[:first.start].strip() and " " not in first.text \
        and not first.number and not first.possessive and not _COPULA_AFTER.match(text[first.end:])
    return spans, first if doubtful else None


def _own_names(text: str, other: str) -> tuple[Span, ...]:
    """The sentence's names; a doubtful first word only when the other sentence capitalises it too."""
    spans, doubtful = _spans(text)
    if doubtful is None or re.search(r"(?<![\w.])" + re.escape(doubtful.text) + r"(?!\w)", other):
        return spans
    return spans[1:]


@lru_cache(maxsize=16384)
def read(text: str, other: str = "") -> Reading:
    """A sentence's anchors and relation words; `other`: a sentence it is compared with (whose names are
    looked for here in any case). Cached per sentence and set of names: a neighbour is read once."""
    t, o = canonical(text), canonical(other) if other else ""
    own = _own_names(t, o)
    spans = _project(t, own, _own_names(o, t)) if o else own
    return _read(t, spans)


def _anchor(t: str, sp: Span) -> Anchor:
    kind = _kind(sp)
    unit = _unit(t, sp) if kind == "number" else None
    end = sp.end
    if unit in _DIMENSIONS:  # "40 minutes" is the value, not a number and a word of the relation
        word = re.match(r"\s*[a-z]+", t[sp.end:].lower())  # the unit was read from this word
        end = sp.end + (word.end() if word else 0)
    return Anchor(sp.key, kind, unit, sp.start, end)


@lru_cache(maxsize=16384)
def _read(t: str, spans: tuple[Span, ...]) -> Reading:
    anchors = tuple(_anchor(t, sp) for sp in _calendar(t, spans))
    low = t.lower()
    masked = list(low)
    for a in anchors:
        masked[a.start:a.end] = " " * (a.end - a.start)
    rest = "".join(masked)
    rest = _WHEN.sub(" ", rest)  # "from next week ...": when the statement holds, not the attribute
    rest = _SCHEDULED.sub(" ", rest)
    rest = re.sub(r"\b(?:stepped|steps|step|stepping) down\b", " ", rest)
    # "the Delta service" / "Delta", "the Tern project" / "Tern": a generic noun after a name is part of the name
    heads = set()
    for a in anchors:
        m = _HEAD.match(rest, a.end) if a.kind == "name" else None
        if m:
            heads.add((a.key, m.group(1)))
            rest = rest[:m.start(1)] + " " * len(m.group(1)) + rest[m.end(1):]
    tokens = [w.removesuffix("'s").removesuffix("'") for w in _WORD.findall(rest)]
    words = tuple(word_key(w) for w in tokens if w not in _STOP and w not in _CHANGE and len(w) > 1)
    return Reading(low, anchors, words, _NEGATION.search(rest) is not None,
                   _MANY.search(rest) is not None or _ACTIVITY.search(rest) is not None,
                   _ALSO.search(rest) is not None, _event(low, anchors),
                   frozenset(m.group(1) or m.group(2) for m in _RELATIVE.finditer(rest)), frozenset(heads))


_HEAD = re.compile(r"\s+(project|service|app|team|programme|program|initiative|platform)\b(?!\s+(?:of|for)\b)")

# ---------------------------------------------------------------------------------------- comparing

# A name the sentence says is the old value: after "switched from" (facts.GONE_BEFORE); before "stepped down",
# "resigned", "was replaced".
_GONE_AFTER = re.compile(r"\s+(?:has\s+)?(?:stepped down|steps down|resigned|retired|departed|was replaced"
                         r"|was succeeded|left\b(?!\s+[a-z]))")


_PAST_MARK = re.compile(r"\b(?:used to|formerly|previously|former|ex-|back then|in the past|years ago)"
                        r"|(?:'s|\b(?:her|his|their|its|my|our|your)) (?:first|previous|prior|earlier)\b")


def _told_as_past(text: str) -> bool:
    return _PAST_MARK.search(text) is not None


# Roles a person holds at a place or thing; another role is another fact, however close the sentences are.
_ROLE_GROUPS = {w: group for group, ws in {
    "own": "owner owners owns owned ownership", "found": "founder founders founded co-founder",
    # heading, leading, managing, directing: one role people restate in any of these words
    "lead": "manager managers manages managed head heads headed director directors lead leads led runs",
    "chef": "chef chefs cook", "captain": "captain", "coach": "coach coaches",
    "president": "president", "chair": "chair chairs chaired chairman chairwoman chairperson",
    "edit": "editor editors", "bake": "baker bakers", "principal": "principal", "mayor": "mayor",
    "treasurer": "treasurer", "secretary": "secretary", "sponsor": "sponsor sponsors sponsored",
    "maintain": "maintainer maintainers maintains maintained", "author": "author authors wrote written",
    "design": "designer designers designed", "landlord": "landlord", "tenant": "tenant tenants"}.items()
    for w in ws.split()}


def _roles(r: Reading, shared: set[str]) -> set[str]:
    return {_ROLE_GROUPS[w] for w in _tokens(r, shared) if w in _ROLE_GROUPS}


# When a value holds: "on weekdays" / "at weekends", "in summer" / "in winter".
_PERIOD_WORDS = {w: w.rstrip("s") for w in "weekday weekdays weekend weekends summer winter spring autumn holiday "
                 "holidays".split()}


def _periods(r: Reading) -> set[str]:
    return {_PERIOD_WORDS[w] for w in _WORD.findall(r.text) if w in _PERIOD_WORDS}


def _every(r: Reading, value: Anchor) -> bool:
    return re.search(r"\b(?:every|each)\s+$", r.text[:value.start]) is not None


def _stated_last(r: Reading, value: Anchor) -> bool:
    """Is this the sentence's only name, ending it after "is", "is now", "changed to" or a colon, in a definite
    statement ("the office wifi password is X", not "a good dentist is X")?"""
    return len(r.anchors) == 1 and not r.text[value.end:].strip(" .!") \
        and re.search(r"(?:\b(?:is|are|remains|now|(?:changed|updated|reset|set|switched|moved|raised|lowered)\s+to)|:)"
                      r"\s*$", r.text[:value.start]) is not None \
        and re.match(r"\s*(?:an?|one|some|another)\b", r.text) is None


# "X is (now) a Senior Engineer at Y": the name between the subject's "is a" and the shared "at Y" is X's title there.
_BEFORE_TITLE = re.compile(r"\b(?:is|was|are|became|become|as)\s+(?:now\s+)?(?:a|an|the|our|their)\s+$")
_AFTER_TITLE = re.compile(r"\s+(?:at|of|for|with|in)\s+(?:the\s+)?$")


def _title_slot(r: Reading, value: Anchor, shared: set[str]) -> bool:
    i = r.anchors.index(value)
    if i == 0 or i + 1 >= len(r.anchors) or r.anchors[i - 1].key not in shared or r.anchors[i + 1].key not in shared:
        return False
    after = r.anchors[i + 1]
    return _BEFORE_TITLE.search(r.text[r.anchors[i - 1].end:value.start]) is not None \
        and _AFTER_TITLE.fullmatch(r.text[value.end:after.start]) is not None


def _superseded(r: Reading) -> set[str]:
    return {a.key for a in r.anchors
            if GONE_BEFORE.search(r.text[:a.start]) or _GONE_AFTER.match(r.text[a.end:])}


Verdict = Literal["duplicate", "child_update", "contradiction_fork", "separate", "unknown"]


@dataclass(frozen=True, slots=True)
class Aligned:
    verdict: Verdict
    why: str
    subject: str = ""
    old_value: str = ""
    new_value: str = ""
    relation: str = ""   # a name for the attribute, from the old sentence's words ("name_parrot")
    veto: bool = False   # a structural reason that overrules the lexicon (a qualifier swap, a relative, a unit)
    unread: bool = False  # "separate" only for want of one relation read in both (no reason seen to separate)


def _tokens(r: Reading, shared: set[str]) -> list[str]:
    """The sentence's words with the subject as 'X', any other anchor as 'Y', and no words of change."""
    out, at = [], 0
    for a in r.anchors:
        out += _WORD.findall(r.text[at:a.start])
        out.append("X" if a.key in shared else "Y")
        at = a.end
    out += _WORD.findall(r.text[at:])
    out = [w.removesuffix("'s") if len(w) > 3 else w for w in out]  # "the museum's archive": the museum, then archive
    return [w for w in out if w not in _CHANGE and w not in _SCHEDULE_WORDS]


def _phrase(r: Reading, shared: set[str], content: bool = True) -> str:
    """What the relation looks like: in its content words ("X parrot called Y" for "X's parrot is called
    Y") to tell attributes apart, all its words to tell a rewording."""
    return " ".join(w for w in _tokens(r, shared) if not content or w not in _STOP)


def _swap(old: Reading, new: Reading, shared: set[str], implied: frozenset[str] = frozenset()
          ) -> tuple[str, bool] | None:
    """The same frame with one content word (or two) swapped for another. Returns the swap and whether it
    names another thing: a modifier of the same noun ("a day pass" / "a monthly pass", "shoe size" /
    "glove size") or the noun itself ("X's parrot is called" / "X's tortoise is called") -- another
    attribute; otherwise the predicate changed ("is open until" / "closes at", "written in" / "deployed
    on"), which may be a rewording."""
    a, b = _tokens(old, shared), _tokens(new, shared)
    ops = [op for op in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    gone, came = [w for w in a[i1:i2] if w not in _STOP], [w for w in b[j1:j2] if w not in _STOP]
    gone, came = [w for w in gone if word_key(w) not in implied], [w for w in came if word_key(w) not in implied]
    if not gone or not came or len(gone) > 2 or len(came) > 2 \
            or {word_key(w) for w in gone} == {word_key(w) for w in came}:
        return None
    if "X" in a[i1:i2] + b[j1:j2] or "Y" in a[i1:i2] + b[j1:j2]:
        return None
    frame = [w for w in a[:i1] + a[i2:] if w not in _STOP and w not in ("X", "Y")]
    if not frame:
        return None  # nothing else in common: a rewording ("lives in" / "is based in")
    after = a[i2] if i2 < len(a) else ""
    before = a[i1 - 1] if i1 else ""
    noun = (after not in _STOP and after not in ("X", "Y", "")) or before in _DETERMINERS
    return f"{' '.join(gone)} / {' '.join(came)}", noun


_DETERMINERS = frozenset("the a an its his her their our my your s".split())


# "email" / "email address", "phone" / "phone number": the same attribute with its head noun said.
_HEAD_NOUNS = frozenset("address number".split())


def _qualified(old: Reading, new: Reading, shared: set[str]) -> str | None:
    """The same frame with content words added on one side only, inside it ("the office wifi password" /
    "the office guest wifi password"): a narrower attribute, not a restatement."""
    a, b = _tokens(old, shared), _tokens(new, shared)
    ops = [op for op in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] not in ("insert", "delete"):
        return None
    _, i1, i2, j1, j2 = ops[0]
    added = [w for w in a[i1:i2] + b[j1:j2] if w not in _STOP and w not in _HEAD_NOUNS]
    inside = 0 < i1 < len(a) and 0 < j1 < len(b)
    return " ".join(added) if added and inside and "X" not in added and "Y" not in added else None


# Adjectives of time or status: the same item, told as it stands ("the current fee" / "the regular fee").
_STATUS_WORDS = frozenset(stem(w) for w in """current former latest present old previous original revised updated
    official usual regular standard normal full total overall actual""".split())


def _modifiers(r: Reading, shared: set[str], nouns: set[str], implied: frozenset[str]) -> set[str]:
    """The words right before a noun both sentences use ("junior" in "X's junior membership is ..."),
    as compared stems ("annual" is "year")."""
    t = ["", *_tokens(r, shared)]
    return {word_key(w) for d, w, n in zip(t, t[1:], t[2:])  # after "the", "a", "its", "X's": an adjective
            if (d in _DETERMINERS or d == "X") and w not in _STOP and w not in ("X", "Y")
            and word_key(n) in nouns and word_key(w) not in implied and stem(w) not in _STATUS_WORDS}


def _other_modifier(old: Reading, new: Reading, shared: set[str], implied: frozenset[str]) -> str | None:
    """The attribute's noun qualified on both sides, by a word the other sentence says nowhere ("the annual
    membership is 240 pounds" / "the junior membership is 90 pounds a year"): another item. A period said
    either way ("annual" / "a year") is one period, not another item."""
    nouns = set(old.words) & set(new.words)  # "the yearly fee" / "the corporate fee": a price noun too
    mods_old, mods_new = _modifiers(old, shared, nouns, implied), _modifiers(new, shared, nouns, implied)
    if not mods_old or not mods_new or mods_old == mods_new:
        return None
    extra = (mods_old - set(new.words)) | (mods_new - set(old.words))
    return " ".join(sorted(extra)) or None


_COPULA = re.compile(r"\s+(?:(?:now|also|still|currently|then)\s+)?(?:is|was|are|were|remains|has been|will be|'s)\b")


def _acts(r: Reading, anchor: Anchor, shared: set[str]) -> bool:
    """Does this name come before the names both sentences share, as the doer of a verb ("Milo calls the
    family dog Biscuit", "The dog Milo walks ... answers to Biscuit")? Then it is the subject, not a value: a
    value that leads is followed by "is" ("Node 20 is what the repo runs on")."""
    first_shared = min((x.start for x in r.anchors if x.key in shared), default=-1)
    return anchor.start < first_shared and _COPULA.match(r.text[anchor.end:]) is None \
        and not r.text[anchor.end:].startswith(("'", ","))


def _possessed(r: Reading, anchor: Anchor) -> bool:
    """"Quentin's dog ...": a possessive name is what the sentence is about."""
    return r.text[anchor.end:anchor.end + 2] in ("'s", "' ")


_SUBJECT_MARK = re.compile(r"\b(?:of|for)\s+(?:the\s+)?$")


def _marked(r: Reading, anchor: Anchor) -> bool:
    """Does the grammar mark this name as what the sentence is about: "X's ...", "the owner of X"?"""
    return r.text[anchor.end:anchor.end + 2] in ("'s", "' ") or _SUBJECT_MARK.search(r.text[:anchor.start]) is not None


def clauses(r: Reading) -> int:
    """How many clause marks a sentence has after its last name (commas, "and", "who", "with" ...)."""
    return len(_CLAUSE.findall(r.text, r.anchors[-1].end if r.anchors else 0))


def _roles_swapped(old: Reading, new: Reading, shared: set[str]) -> bool:
    """The same names in another order, joined by the same words: "A signed a contract with B" / "B signed
    a contract with A", "A is mentoring B" / "B is mentoring A" (a passive, "A is managed by B" / "B manages
    A", joins them by other words)."""
    order_old = [a.key for a in old.anchors if a.key in shared]
    order_new = [a.key for a in new.anchors if a.key in shared]
    if len(order_old) < 2 or order_old == order_new:
        return False
    def joins(r: Reading) -> list[str]:
        inner = [a for a in r.anchors if a.key in shared]
        return [" ".join(_WORD.findall(r.text[x.end:y.start])) for x, y in zip(inner, inner[1:])]
    return sorted(joins(old)) == sorted(joins(new))


def _between(r: Reading, first: Anchor, second: Anchor) -> str:
    lo, hi = sorted((first, second), key=lambda a: a.start)
    return " ".join(_WORD.findall(r.text[lo.end:hi.start]))


def _version(a: Anchor, b: Anchor) -> bool:
    """"Python 3.10" -> "Python 3.12", "Node 18" -> "Node 20": the same thing in another version."""
    wa, wb = a.key.split(), b.key.split()
    letters = [w for w in wa if not w[0].isdigit()]
    return bool(letters) and letters == [w for w in wb if not w[0].isdigit()] and wa != wb


# Chosen on the tune split of tests/data/placement_pairs_v2.jsonl; checked on its holdout.
SAME_RELATION = 0.74    # masked sentences this close state the same attribute (their words differ)
SAME_RELATION_TELLING = 0.30  # ... when the value is a phone number or an e-mail address: its sort tells the attribute
_TELLING = ("phone", "email")
# Which phone: one person has several numbers at once, one per line.
# A person's number with no line said is their own phone: "mobile" / "a new number" is one line, "office" is another.
_OWN_LINE = frozenset(stem(w) for w in "mobile cell cellphone personal direct".split())
_LINE_WORDS = frozenset(stem(w) for w in "mobile cell cellphone office home work landline fax desk direct personal "
                                         "business switchboard".split())
FAR = 0.50            # whole sentences further apart than this, in other words, are not one attribute
NEAR_DUPLICATE = 0.75  # whole sentences at least this close before a duplicate is considered
SAME_WORDING = 0.80     # ... and the same value, reworded: a duplicate


def compare_aligned(old_text: str, new_text: str, similarity: Callable[[str, str], float],
                    sentence_similarity: float = 1.0) -> Aligned:
    """How a new sentence stands to an old one, by aligning anchors; `similarity` compares two masked
    phrases (the real embedding model, cached). `sentence_similarity`: the two whole sentences' cosine,
    known already: a reworded duplicate is never far, so no phrase is embedded for one that is."""
    old, new = read(old_text, new_text), read(new_text, old_text)
    gone = _superseded(new) & {a.key for a in old.anchors} - _superseded(old)
    if gone:  # "switched from MySQL to PostgreSQL", "Ruth Ede stepped down": the old value, named as gone
        text = new.text
        for a in new.anchors:
            if a.key in gone:
                text = text[:a.start] + " " * (a.end - a.start) + text[a.end:]
        new = replace(new, text=text, anchors=tuple(a for a in new.anchors if a.key not in gone))
    old_keys, new_keys = {a.key for a in old.anchors}, {a.key for a in new.anchors}
    shared = old_keys & new_keys
    other_head = {h for h in old.heads ^ new.heads if h[0] in {x[0] for x in old.heads} & {x[0] for x in new.heads}}
    if other_head:  # "the Falcon team" / "the Falcon app": two things of one name
        return Aligned("separate", f"another thing of one name ({', '.join(sorted(h for _, h in other_head))})",
                       veto=True)
    if old.relatives != new.relatives:
        return Aligned("separate", f"about a relative ({', '.join(sorted(old.relatives ^ new.relatives))})", veto=True)
    lost = [a for a in old.anchors if a.key not in shared]
    gained = [a for a in new.anchors if a.key not in shared]
    wo, wn = set(old.words), set(new.words)
    only_old, only_new = wo - wn, wn - wo
    subject = next((a for a in new.anchors if a.key in shared), None)
    subject_text = canonical(new_text)[subject.start:subject.end] if subject else ""

    if not lost:
        if not shared:
            return Aligned("unknown", "no names")
        if old.negated != new.negated:
            return Aligned("unknown", "one side negates")
        if new.anchors[0].key not in shared:
            return Aligned("unknown", "the new sentence leads with another name")
        covered = len(wo & wn) / len(wo) if wo else 1.0
        added = len(only_new) + len(gained)
        # A clause of its own after the names: ", the direct line".
        tail = clauses(new) > clauses(old) and bool(only_new)
        if tail or added >= 2 and (covered >= 0.75 or covered >= 0.5 and added >= 4
                                   and not (old.many or new.many or new.also)):
            more = clauses(new) > clauses(old)  # "... and also avoids dairy"
            if not gained and not more and len(only_new) <= 3 and sentence_similarity >= NEAR_DUPLICATE and \
                    similarity(_phrase(old, shared, False), _phrase(new, shared, False)) >= SAME_WORDING:
                # a few words more, the same meaning: "is on" / "takes place on"
                return Aligned("duplicate", "the same names, the relation reworded", subject_text,
                               relation=relation_name(old, shared))
            return Aligned("child_update", f"the same names, {added} more details", subject_text,
                           relation=relation_name(old, shared))
        if gained:
            return Aligned("unknown", "the same names and a new one")
        if _roles_swapped(old, new, shared):
            return Aligned("unknown", "the same words with the roles swapped")
        if not only_old and not only_new:
            return Aligned("duplicate", "the same names and words, reordered", subject_text,
                           relation=relation_name(old, shared))
        telling = any(x.kind in _TELLING for x in old.anchors)  # the same person and the same phone number
        if sentence_similarity >= NEAR_DUPLICATE and _swap(old, new, shared) is None and \
                similarity(_phrase(old, shared, False), _phrase(new, shared, False)) >= (
                    SAME_RELATION_TELLING if telling else SAME_WORDING):
            return Aligned("duplicate", "the same names, the relation reworded", subject_text,
                           relation=relation_name(old, shared))
        return Aligned("unknown", "the same names, other words")
    if not gained:
        return Aligned("unknown", "the new sentence drops a name")
    if len(lost) > 1 or len(gained) > 1:
        return Aligned("separate", "more than one name changed", unread=True)
    a, b = lost[0], gained[0]
    if a.kind == b.kind == "time" and len(b.key.split()) == 4 and b.key.split()[:2] == a.key.split():
        # "opens at 9 am" / "opens at 9 am and closes at 6 pm": hours ("09 00 18 00") that start at the old time
        return Aligned("child_update", "the closing time added to the opening time", subject_text,
                       relation=relation_name(old, shared))
    if a.kind != b.kind:
        return Aligned("separate", f"a {a.kind} became a {b.kind}")
    lines_old, lines_new = _LINE_WORDS & set(old.words), _LINE_WORDS & set(new.words)
    if a.kind == "phone" and lines_old and lines_new and not lines_old & lines_new:  # "mobile" / "office line"
        return Aligned("separate", f"another line ({' '.join(sorted(lines_old))} / {' '.join(sorted(lines_new))})",
                       veto=True)
    other_line = (lines_old | lines_new) - _OWN_LINE
    if a.kind == "phone" and other_line and not (lines_old and lines_new):  # "office number" / "a new number"
        return Aligned("separate", f"a line named on one side only ({' '.join(sorted(other_line))})")
    if a.unit and b.unit and _dimension(a.unit) != _dimension(b.unit):  # "8 engineers" / "3 designers"
        return Aligned("separate", f"another unit ({a.unit} / {b.unit})", veto="money" in (a.unit, b.unit))
    implied = (_PRICE_WORDS if a.unit == b.unit == "money" else frozenset()) \
        | (_DATE_WORDS if a.kind == b.kind == "date" else frozenset()) \
        | (_TIME_WORDS if a.kind == b.kind == "time" else frozenset())  # a price, a date, a time either way
    only_old, only_new = only_old - implied, only_new - implied
    period_old, period_new = _periods(old), _periods(new)
    if period_new - period_old and period_old:  # "on weekdays" / "at weekends"
        return Aligned("separate", f"another period ({' '.join(sorted(period_new - period_old))})", veto=True)
    if a.unit == b.unit == "money" and currency(canonical(old_text)[a.start:a.end + 12]) \
            != currency(canonical(new_text)[b.start:b.end + 12]):
        return Aligned("separate", "another currency", veto=True)
    if a.unit == b.unit == "money" and only_old and only_new:  # "tickets to X cost" / "parking at X costs"
        return Aligned("separate", f"another thing priced ({' '.join(sorted(only_old))} / "
                                   f"{' '.join(sorted(only_new))})")
    if a.kind == b.kind == "number" and _every(old, a) != _every(new, b):  # "every 10 minutes" / "takes 35 minutes"
        return Aligned("separate", "a frequency on one side only")
    if _WEEKDAY.match(a.key) and _WEEKDAY.match(b.key):  # "weekly ... on Tuesdays" / "every Thursday"
        only_old, only_new = only_old - {"week"}, only_new - {"week"}
    version = a.kind == "name" and _version(a, b)
    if a.kind == "name" and not version and set(a.key.split()) & set(b.key.split()) \
            and old.anchors.index(a) == 0 and new.anchors.index(b) == 0:
        return Aligned("separate", f"another subject ({a.key} / {b.key})")  # name twins
    if a.kind == "name" and shared and all(x.kind != "name" for x in old.anchors if x.key in shared):
        return Aligned("separate", "only a number or time is shared: another subject")
    if not shared and len(wo & wn) >= 2 and not only_old and not only_new and _stated_last(old, a) \
            and _stated_last(new, b):  # "the office wifi password is X" / "new office wifi password: Y"
        return Aligned("contradiction_fork", "the same words in lower case, another value ending them", "",
                       canonical(old_text)[a.start:a.end], canonical(new_text)[b.start:b.end],
                       relation_name(old, shared))
    if not shared and not (a.kind != "name" or version or gone and not only_new) or not shared and len(wo & wn) < 2:
        return Aligned("separate", "no shared name", unread=True)
    if old.negated != new.negated:
        return Aligned("separate", "one side negates")
    if _told_as_past(old.text) != _told_as_past(new.text):
        return Aligned("separate", "one side tells the past")  # "used to work at Repsol" corrects nothing
    if (old.event or new.event) and a.kind == "name" and not version:
        return Aligned("separate", "an event, not a state: each is a fact of its own")
    if len(old.anchors) > 2 and a.kind == "name" and not version and not (
            _title_slot(old, a, shared) and _title_slot(new, b, shared)):
        return Aligned("separate", "one of several names changed")
    if (old.many or new.many or new.also) and a.kind == "name" and not version and not gone:
        return Aligned("separate", "a relation of many values", veto=new.also)
    swapped = _swap(old, new, shared, implied)
    if swapped:  # another noun: another attribute; another predicate: maybe a rewording, but unsure
        return Aligned("separate", f"another {'attribute' if swapped[1] else 'predicate'} in the same frame "
                                   f"({swapped[0]})", veto=swapped[1], unread=not swapped[1])
    roles_old, roles_new = _roles(old, shared), _roles(new, shared)
    if roles_old and roles_new and not roles_old & roles_new:  # "the owner of X" / "X's head baker"
        return Aligned("separate", f"another role ({' '.join(sorted(roles_old))} / {' '.join(sorted(roles_new))})")
    qualifier = _qualified(old, new, shared) or (
        _other_modifier(old, new, shared, implied) if a.unit == b.unit == "money" else None)
    if qualifier:
        return Aligned("separate", f"a qualifier on one side only ({qualifier})", veto=True)
    if a.kind == "name" and (_acts(old, a, shared) and _acts(new, b, shared)
                             or _possessed(old, a) or _possessed(new, b)):
        return Aligned("separate", f"another subject ({a.key} / {b.key})")  # "A calls the dog Biscuit" / "B ..."
    if a.kind == "name" and shared and _marked(old, a) and _marked(new, b) \
            and not any(_marked(old, x) for x in old.anchors if x.key in shared):
        return Aligned("separate", f"another subject ({a.key} / {b.key})")  # "the owner of Beacon" / "of Lighthouse"
    if shared and a.kind == "name":
        other = next(x for x in old.anchors if x.key in shared)
        theirs = next(x for x in new.anchors if x.key == other.key)
        if (old.anchors.index(a) < old.anchors.index(other)) != (new.anchors.index(b) < new.anchors.index(theirs)) \
                and _between(old, a, other) == _between(new, b, theirs):
            return Aligned("separate", "the same words with the roles swapped")
    why = "the same relation words"
    if gone and not only_new:
        why = "the old value named as replaced, no other relation said"
    elif only_old or only_new:
        if sentence_similarity < FAR:  # no phrase embedded for sentences this far apart
            return Aligned("separate", f"other words, sentences far apart ({sentence_similarity:.2f} < {FAR})",
                           unread=True)
        sim = similarity(_phrase(old, shared), _phrase(new, shared))
        needed = SAME_RELATION if a.kind not in _TELLING else SAME_RELATION_TELLING
        if sim < needed:
            return Aligned("separate", f"another relation (masked similarity {sim:.2f} < {needed})", unread=True)
        why = f"the relation reworded (masked similarity {sim:.2f})"
    old_value = canonical(old_text)[a.start:a.end]
    new_value = canonical(new_text)[b.start:b.end]
    return Aligned("contradiction_fork", why, subject_text, old_value, new_value, relation_name(old, shared))


def single_key(text: str) -> tuple[str, str, str] | None:
    """The (subject, relation, value) one sentence states outside the lexicon, when its grammar says
    which name is the subject: two names, one possessive or after "of / for" ("Leon Ashby's parrot is
    called Kiwi", "the phone number for the Ashgrove clinic is 555-0177"), or the first one doing
    something to the second ("the Kestrel repo uses Node 18" has one name only: no key). Not for
    events, activities, values of many, negations or relatives, as for the lexicon's keys."""
    r = read(text)
    if len(r.anchors) != 2 or r.negated or r.many or r.also or r.event or r.relatives:
        return None
    marked = [a for a in r.anchors if _possessed(r, a) or _SUBJECT_MARK.search(r.text[:a.start])]
    if len(marked) != 1 or marked[0].kind != "name":
        return None
    subject = marked[0]
    value = next(a for a in r.anchors if a is not subject)
    t = canonical(text)
    return t[subject.start:subject.end], relation_name(r, {subject.key}), t[value.start:value.end]


def relation_name(r: Reading, shared: set[str]) -> str:
    """A name for an attribute outside the lexicon: the content words of the sentence that first stated it
    ("The name of Leon Ashby's parrot is Kiwi" -> "name_parrot")."""
    words = [w for w in _tokens(r, shared) if w not in ("X", "Y") and w not in _STOP and len(w) > 1]
    return "_".join(words[:4]) or "is"


# --------------------------------------------------------------------- relation similarity (cached)

_embedder = None
_embedder_lock = threading.Lock()


class PhraseVectors:
    """A sized LRU of phrase vectors. Each row is copied out of its batch, so evicting one frees it (a row
    view would keep its whole batch alive). A worker asks for ~190 new phrases per 1,000 placements."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._rows: OrderedDict[str, np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, phrase: str) -> bool:
        return phrase in self._rows

    def get(self, phrase: str) -> np.ndarray:
        self._rows.move_to_end(phrase)
        return self._rows[phrase]

    def put(self, phrases: list[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
        """Adds the rows (the least recently used go past `maxsize`); returns them by phrase."""
        rows = {p: np.array(v, copy=True) for p, v in zip(phrases, vectors)}
        for p, v in rows.items():
            self._rows[p] = v
            self._rows.move_to_end(p)
        while len(self._rows) > self.maxsize:
            self._rows.popitem(last=False)
        return rows


# 16,384 phrases of 384 float32, ~1.9 KB each: 31 MB (was 65,536 cleared at once: 116 MB)
_vectors = PhraseVectors(16384)


def _phrase_vectors(*phrases: str) -> list[np.ndarray]:
    """The phrases' vectors; the ones not seen yet are embedded in one batch."""
    global _embedder
    with _embedder_lock:
        found = {p: _vectors.get(p) for p in dict.fromkeys(phrases) if p in _vectors}
        missing = [p for p in dict.fromkeys(phrases) if p not in found]
        if missing:
            if _embedder is None:
                from .. import embed

                # the process's local model if it has one (a worker does), else one of our own: one thread
                _embedder = next((e for e in list(embed._shared.values()) if isinstance(e, embed.LocalEmbedder)),
                                 None) or embed.LocalEmbedder(batch_size=8, threads=1)
            found.update(_vectors.put(missing, _embedder.embed(missing)))
        return [found[p] for p in phrases]


def relation_similarity(a: str, b: str) -> float:
    """Cosine of two masked phrases by the real embedding model (all-MiniLM-L6-v2); each phrase embedded
    once per process."""
    va, vb = _phrase_vectors(a, b)
    return float(va @ vb)
