"""Which attribute a sentence states, by meaning: a nearest-prototype classifier over the embedding model.

The lexicon (facts.py) and the alignment (align.py) read the wordings they were written for. This reads
any wording that means one of a set of common attributes of people and organisations:

1. Mask: the sentence's subject (the name both compared sentences share, "User" for "I" / "my" / "the
   user") becomes X, its other names and figures (align.read's anchors) Y: "KPMG hired Rose Baker as a
   senior auditor." -> "Y hired X as a senior auditor."
2. Embed the masked frame with fabric's embedder (all-MiniLM-L6-v2, vectors cached per phrase by
   align._phrase_vectors) and compare it with prototype frames written here, several per attribute in
   varied voice (active, passive, value first, possessive, first person). Only prototypes with X and Y
   in the frame's order, and attributes that take the value's sort (a date, a number, a name), compete.
   An attribute's score is the mean of its two closest prototypes.
3. Decide: an attribute only when its score is high enough and beats the next attribute by a margin;
   otherwise unknown. Inverse frames ("X manages Y": X is someone's manager, not X's manager) are
   attributes of their own, of many values, so a frame read backwards never corrects anything; so are
   decoys for other dates, figures, plans, side roles and events.

`compare` applies it to two sentences that share one subject: both of one single-valued attribute
with the same value is a duplicate, with another value of the same sort a contradiction. Attributes of
many values (languages, pets, offices, visits) never contradict. The rule validator asks it only where
its own readings found no shared relation and no reason to keep the two apart. Deterministic: the
model is, and prototypes are embedded once per process."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from .facts import value_key
from .align import _CHANGE, _STOP, Aligned, Anchor, Reading, _phrase_vectors, _told_as_past, canonical, read

# ----------------------------------------------------------------------------------------- prototypes


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str                 # the lexicon's group name where it has one: one key per attribute
    frames: tuple[str, ...]   # X: the subject, Y: the value
    multi: bool = False       # a subject holds several values at once: never a correction
    kinds: frozenset[str] = frozenset({"name"})  # the sorts of value (align._kind) it takes


def _a(name: str, frames: str, *, multi: bool = False, kinds: str = "name") -> Attribute:
    return Attribute(name, tuple(f.strip() for f in frames.split("|")), multi, frozenset(kinds.split()))


ATTRIBUTES: tuple[Attribute, ...] = (
    # people
    _a("employer", "X works at Y | X works for Y | X teaches at Y | X lectures at Y | X is employed by Y"
                   " | Y employs X | Y hired X | X joined Y"
                   " | X's employer is Y | X is an engineer at Y | X has a job at Y | Y is where X works"
                   " | X is on the staff of Y | X took a job with Y | X now works for Y as an analyst"
                   " | X started a new job at Y | X has been working at Y"),
    _a("side_roles", "X consults for Y | X advises Y | X volunteers at Y | X sits on the board of Y | X mentors at Y"
                     " | X freelances for Y", multi=True),
    _a("employees", "X hired Y | X employs Y | Y works at X | Y joined X | X took on Y as a consultant", multi=True),
    _a("job_title", "X is a Y | X's job title is Y | X works as a Y | X was promoted to Y | X's role is Y"
                    " | X's position is Y | X holds the title of Y | Y is X's job title | Y is the role X holds"),
    _a("home_city", "X lives in Y | X resides in Y | X's home is in Y | Y is where X lives | X moved to Y"
                    " | X relocated to Y | home for X is Y | X has settled in Y | X calls Y home"
                    " | X's address is in Y | X now lives in Y | X is a resident of Y"),
    _a("birthplace", "X was born in Y | X's birthplace is Y | X is originally from Y | X grew up in Y"
                     " | Y is where X was born"),
    _a("manager", "X reports to Y | X's manager is Y | Y manages X | X's boss is Y | Y is X's line manager"
                  " | X is managed by Y | X works under Y | X's supervisor is Y"),
    _a("reports", "X manages Y | Y reports to X | X is Y's manager | X supervises Y | X is the boss of Y"
                  " | X leads a team that includes Y", multi=True),
    _a("spouse", "X is married to Y | X's wife is Y | X's husband is Y | X's partner is Y | Y is X's spouse"
                 " | X is dating Y | X's girlfriend is Y | X's boyfriend is Y | X and Y got married"),
    _a("relatives", "X's sister is Y | X's brother is Y | X's son is Y | X's daughter is Y | Y is X's cousin"
                    " | X's mother is Y | X's father is Y", multi=True),
    _a("friends", "X is friends with Y | Y is X's friend | X met Y | X's colleague is Y | X knows Y", multi=True),
    _a("phone", "X's phone number is Y | call X on Y | X can be reached at Y | Y is X's mobile number"
                " | X's number is Y | ring X on Y", kinds="phone"),
    _a("email", "X's email is Y | write to X at Y | X's email address is Y | reach X by email at Y | Y is X's email"
                " | X uses the address Y", kinds="email"),
    _a("favourite_film", "X's favourite film is Y | X loves Y more than any other film"
                         " | X's all-time favourite movie is Y | the film X likes best is Y"
                         " | X's favourite movie is Y | Y is X's favourite film"),
    _a("favourite_book", "X's favourite book is Y | X loves Y more than any other book | the novel X likes best is Y"
                         " | X's favourite novel is Y | Y is X's favourite book"),
    _a("favourite_food", "X's favourite food is Y | X's favourite dish is Y | X loves eating Y more than anything"
                         " | the meal X likes best is Y | Y is X's favourite food"),
    _a("favourite_music", "X's favourite band is Y | X's favourite singer is Y | X's favourite song is Y"
                          " | the band X likes best is Y | X listens to Y more than anyone else"),
    _a("favourite_team", "X's favourite team is Y | X supports Y | X is a fan of Y | X roots for Y | Y is X's team"),
    _a("favourite_place", "X's favourite restaurant is Y | X's favourite city is Y | X's favourite cafe is Y"
                          " | the restaurant X likes best is Y | Y is X's favourite restaurant"),
    _a("pets", "X has a dog called Y | X's cat is named Y | X owns a parrot called Y | X has a pet named Y"
               " | X adopted a dog named Y", multi=True),
    _a("school", "X studies at Y | X attends Y | X goes to school at Y | X is a student at Y | X is enrolled at Y"
                 " | X's school is Y | X's university is Y | Y is where X studies"),
    _a("alma_mater", "X studied at Y | X graduated from Y | X has a degree from Y | X is an alumnus of Y", multi=True),
    _a("car", "X drives a Y | X's car is a Y | X drives Y | X's car is Y | X got a new car, a Y"
              " | a Y is what X drives | Y is X's car"),
    _a("age", "X is Y years old | X's age is Y | X turned Y | X is aged Y | Y is X's age", kinds="number"),
    _a("birthday", "X's birthday is Y | X was born on Y | X celebrates X's birthday on Y | X's date of birth is Y"
                   " | Y is X's birthday", kinds="date"),
    _a("doctor", "X's doctor is Y | X's GP is Y | X sees Dr Y | Y is X's physician | Y treats X"),
    _a("preferred_language", "X's preferred language is Y | X prefers to be contacted in Y | X likes to be addressed"
                             " in Y | Y is the language X prefers"),
    _a("languages", "X speaks Y | X is fluent in Y | X is learning Y | X can speak Y | X talks Y at home", multi=True),
    _a("hobbies", "X enjoys Y | X plays Y | X's hobby is Y | X is into Y | X practises Y", multi=True),
    _a("allergies", "X is allergic to Y | X has an allergy to Y | X can't eat Y", multi=True),
    _a("visited", "X has been to Y | X visited Y | X travelled to Y | X went to Y on holiday | X toured Y", multi=True),
    _a("salary", "X earns Y | X's salary is Y | X is paid Y a year | X makes Y annually | Y is what X earns a year",
       kinds="number"),
    # organisations
    _a("ceo", "Y is the CEO of X | X is led by Y | Y runs X | X's chief executive is Y | Y heads X"
              " | X appointed Y as chief executive | Y took over as CEO of X | X named Y its new CEO | X is run by Y"
              " | Y is at the helm of X | the boss of X is Y | X is led by chief executive Y | X is headed by CEO Y"),
    _a("ceo_of", "X is the CEO of Y | X runs Y | X heads Y | X leads Y | X is at the helm of Y | X founded Y",
       multi=True),
    _a("cfo", "Y is the CFO of X | X's chief financial officer is Y | Y is X's finance chief"),
    _a("cto", "Y is the CTO of X | X's chief technology officer is Y | Y leads technology at X"),
    _a("chair", "Y chairs X | Y is the chair of X | X's board is chaired by Y | Y is chairman of X"),
    _a("headquarters", "X is headquartered in Y | X's headquarters are in Y | X is based in Y"
                       " | X moved its head office to Y | Y is home to X's head office | X's HQ is in Y"
                       " | X's main office is in Y | Y is where X has its headquarters"),
    _a("sites", "X opened an office in Y | X has a showroom in Y | X has a branch in Y | X runs a factory in Y"
                " | X has a store in Y | X operates a warehouse in Y", multi=True),
    _a("owner", "X is owned by Y | Y owns X | Y acquired X | X is a subsidiary of Y | X's parent company is Y"
                " | Y bought X | X belongs to Y | X was taken over by Y"),
    _a("holdings", "X owns Y | X acquired Y | X bought Y | Y is a subsidiary of X | X is the parent company of Y",
       multi=True),
    _a("billing_plan", "X is on the Y plan | X's billing plan is Y | X subscribes to the Y tier | X upgraded to Y"
                       " | X's subscription tier is Y | X pays for the Y plan | X moved to the Y plan"
                       " | Y is the plan X is on | X downgraded to Y | X switched to the Y tier"
                       " | the Y tier is what X pays for"),
    _a("other_plans", "X's support plan is Y | X's phone plan is Y | X's insurance plan is Y | X's pension plan is Y"
                      " | X's data plan is Y | X's maintenance contract is Y", multi=True),
    _a("price", "X costs Y | the price of X is Y | X is priced at Y | X sells for Y | X is Y each | Y buys X",
       kinds="number"),
    _a("headcount", "X has Y employees | X employs Y people | X's headcount is Y | Y people work at X"
                    " | Y people are employed by X | X has a staff of Y | X's workforce is Y", kinds="number"),
    _a("revenue", "X's revenue is Y | X made Y in revenue | X's annual sales were Y | X brought in Y last year"
                  " | Y is X's annual revenue | X had a turnover of Y | X brings in Y a year | X's sales are Y a year",
       kinds="number"),
    _a("valuation", "X is valued at Y | X's valuation is Y | X is worth Y | investors value X at Y"
                    " | Y is X's valuation", kinds="number"),
    _a("budget", "X's budget is Y | X has a budget of Y | Y has been allocated to X | X is funded with Y"
                 " | Y is the budget for X", kinds="number"),
    _a("rent", "X's rent is Y | X pays Y in rent | the rent for X is Y a month | Y a month is the rent for X",
       kinds="number"),
    _a("seats", "X has Y seats | X's plan includes Y seats | X is licensed for Y users | Y seats are licensed to X",
       kinds="number"),
    _a("population", "X has a population of Y | Y people live in X | X is home to Y residents"
                     " | Y is the population of X", kinds="number"),
    _a("version", "X runs on version Y | X's current version is Y | X was upgraded to Y"
                  " | the latest release of X is Y | X is on Y | Y is the current version of X", kinds="name number"),
    _a("stack", "X is written in Y | X's codebase uses Y | X is built with Y | X is implemented in Y"
                " | Y is the language of X | X was rewritten in Y | X's code is now Y"),
    _a("hosting", "X is deployed on Y | X is hosted on Y | X runs on Y | X lives on Y servers | Y hosts X"),
    _a("deadline", "X is due on Y | the deadline for X is Y | X must be finished by Y | X has to ship by Y"
                   " | X is due Y | Y is the deadline for X", kinds="date"),
    _a("launch_date", "X launches on Y | X's launch is set for Y | X will go live on Y | the release date of X is Y"
                      " | X comes out on Y | Y is the launch date of X", kinds="date"),
    _a("meeting_day", "X takes place on Y | X is held every Y | X meets on Y | X happens on Ys | on Ys X meets",
       kinds="date"),
    _a("address", "X is located at Y | X's address is Y | you can find X at Y | X sits on Y | Y is the address of X"),
    # (No clock times: a place has many at once -- check-in, a lunch service, a last entry -- that frames
    # masked to "X ... at Y" do not tell apart.)
    # Other dates and figures a subject has: without them, the few attributes of one sort of value would take
    # any date or number ("X's wedding anniversary is June 9" is no birthday). Many values: never a correction.
    _a("other_dates", "X's wedding anniversary is Y | X's appointment is on Y | X's exam is on Y"
                      " | X's holiday starts on Y | X's contract ends on Y | X's flight leaves on Y"
                      " | X's next review is on Y | X started on Y | X's party is on Y", multi=True, kinds="date"),
    _a("other_figures", "X has Y children | X ran Y kilometres | X owns Y cars | X scored Y points"
                        " | X's room number is Y | X weighs Y kilos | X's shoe size is Y | X is Y cm tall"
                        " | X has Y followers | X sold Y units | X has Y stores | X grew Y%",
       multi=True, kinds="number"),
    _a("events", "X presented Y | X met Y | X gave a talk at Y | X emailed Y | X called Y | X visited Y's office"
                 " | X had lunch with Y | X sent Y the report | X thanked Y | X interviewed at Y"
                 " | X presented the results to Y | X showed the slides to Y | X sent a proposal to Y", multi=True),
    _a("customers", "X is a customer of Y | Y is a client of X | X signed a deal with Y | X partners with Y",
       multi=True),
    _a("investors", "Y invested in X | X is backed by Y | X raised money from Y", multi=True),
)

# Chosen on the tune splits of placement_pairs_v2 / v4 and on temporal_chains_v3 (docs/bench/validators.md).
MIN_SCORE = 0.62   # the best attribute's score: below it the frame is like none of them
MIN_MARGIN = 0.06  # ... and its lead over the next attribute: below it, unsure


# ----------------------------------------------------------------------------------------- classifying

_lock = threading.Lock()
_prototypes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # vectors, attribute and order per row


def _order(masked: str) -> int:
    """Which placeholder comes first: 1 for X (the subject), -1 for Y, 0 when not one of each."""
    words = masked.split()
    if words.count("X") != 1 or words.count("Y") != 1:
        return 0
    return 1 if words.index("X") < words.index("Y") else -1


def _table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    global _prototypes
    with _lock:
        if _prototypes is None:
            frames = [f for a in ATTRIBUTES for f in a.frames]
            owner = np.array([i for i, a in enumerate(ATTRIBUTES) for _ in a.frames])
            order = np.array([_order(f) for f in frames])
            _prototypes = (np.stack(_phrase_vectors(*frames)), owner, order)
        return _prototypes


@dataclass(frozen=True, slots=True)
class Classified:
    """One sentence classified: the best attribute (None when unsure), its score and lead."""

    attribute: Attribute | None
    score: float
    margin: float
    frame: str


def frame(r: Reading, subject: str, value: tuple[int, int] | None = None) -> str:
    """The sentence with the subject as X and every other anchor (and `value`, a span of lower-case words) as
    Y, in its own words otherwise."""
    spans = sorted([(a.start, a.end, "X" if a.key == subject else "Y") for a in r.anchors]
                   + ([(value[0], value[1], "Y")] if value else []))
    out, at = [], 0
    for start, end, mark in spans:
        out.append(r.text[at:start])
        out.append(mark)
        at = end
    out.append(r.text[at:])
    return " ".join("".join(out).split()).rstrip(".!? ")


@lru_cache(maxsize=8192)
def classify_frame(masked: str, kind: str = "name") -> Classified:
    """The attribute of a masked frame whose value is of sort `kind` (align._kind: a phone number, a date, ...):
    only attributes that take such values compete."""
    vectors, owner, order = _table()
    (v,) = _phrase_vectors(masked)
    sims = vectors @ v
    # The model barely tells "X manages Y" from "Y manages X": only prototypes with the subject and the value in
    # the same order are compared ("Y hired X" with "Y hired X", not with "X hired Y").
    side = _order(masked)
    if side:
        sims = np.where(order == side, sims, -1.0)
    scores = []
    for i, attribute in enumerate(ATTRIBUTES):
        top = np.sort(sims[owner == i])[-2:]
        top = top[top > -1.0]
        scores.append(float(top.max() * (1 - _SECOND) + top.min() * _SECOND)
                      if top.size and kind in attribute.kinds else -1.0)
    ranked = np.argsort(scores)[::-1]
    best, second = scores[ranked[0]], scores[ranked[1]]
    sure = best >= MIN_SCORE and best - second >= MIN_MARGIN
    return Classified(ATTRIBUTES[ranked[0]] if sure else None, best, best - second, masked)


_SECOND = 0.5  # weight of an attribute's second-closest prototype in its score (the closest has the rest)


_WORDS = re.compile(r"[a-z][a-z-]*")
_YEAR = re.compile(r"(?:19|20)\d\d")
# Words that are grammar, time or change, never a value.
_NOT_VALUE = _STOP | _CHANGE | frozenset("""these days now again currently today lately recently nowadays instead
    since anymore said says say told mentioned their they them user users new old""".split())


def frame_value(r: Reading, subject: str, other: Reading, spelled: str = "") -> list[tuple[Classified, str, str]]:
    """The ways to read the value of `r` about `subject`: its one other anchor, or when it has none, each word
    the other sentence lacks ("X is employed by stripe these days": stripe). (classification, value, kind)."""
    values = [a for a in r.anchors if a.key != subject]
    when = [a for a in values if a.kind == "date" or _YEAR.fullmatch(a.key)]
    if len(values) > 1 and len(values) - len(when) == 1:  # "started there in May": when, not what
        r = replace(r, anchors=tuple(a for a in r.anchors if a not in when))
        values = [a for a in values if a not in when]
    if len(values) == 1:
        a = values[0]
        return [(classify_frame(frame(r, subject), a.kind), (spelled or r.text)[a.start:a.end], a.kind)]
    if values:
        return []
    subject_at = next(a for a in r.anchors if a.key == subject)
    theirs = set(_WORDS.findall(other.text))
    out = []
    for m in _WORDS.finditer(r.text):
        w = m.group()
        if w in _NOT_VALUE or w in theirs or w.endswith("ly") or len(w) < 3 or \
                subject_at.start <= m.start() < subject_at.end:
            continue
        masked = frame(r, subject, (m.start(), m.end()))
        out.append((classify_frame(masked, "name"), (spelled or r.text)[m.start():m.end()], "name"))
    return sorted(out, key=lambda o: -o[0].score)  # the word that reads best as a value first


# ----------------------------------------------------------------------------------------- comparing


@dataclass(frozen=True, slots=True)
class Same:
    """Two sentences found to state one attribute of one subject."""

    verdict: str      # "duplicate" or "contradiction_fork"
    subject: str      # as the new sentence spells it
    attribute: str
    old_value: str
    new_value: str
    why: str


def _dated(r: Reading) -> Reading:
    """A year right after a day or month is part of that date ("April 30, 2025"), not a name of its own."""
    anchors: list[Anchor] = []
    for a in r.anchors:
        last = anchors[-1] if anchors else None
        if last is not None and last.kind == "date" and _YEAR.fullmatch(a.key) \
                and not r.text[last.end:a.start].strip(" ,"):
            anchors[-1] = replace(last, key=f"{last.key} {a.key}", end=a.end)
        else:
            anchors.append(a)
    return r if len(anchors) == len(r.anchors) else replace(r, anchors=tuple(anchors))


# Said as possible, planned or wished, not as so: "I might move to Galway", "if she joins Halvard".
_HYPOTHETICAL = re.compile(r"\b(?i:might|could|would|should|maybe|perhaps|if|unless|considering|thinking (?:of|about)"
                           r"|plans? to|planning|hop(?:e|es|ing) to|wants? to|wish(?:es)?|dreams? of|in talks)\b"
                           r"|\bmay\b(?! \d)")  # in lower case: "May 3" is a date


def _guarded(old: Reading, new: Reading, texts: tuple[str, str]) -> bool:
    """A reason to keep two sentences apart that no meaning overrules: a negation, a relative, "also" or a
    verb of many values, one side told as the past, a hypothetical."""
    return (old.negated or new.negated or bool(old.relatives or new.relatives) or new.also
            or old.many or new.many or _told_as_past(old.text) != _told_as_past(new.text)
            or any(_HYPOTHETICAL.search(t) for t in texts))


_USER = re.compile(r"\bUser\b")
_WE = re.compile(r"\b(?:[Ww]e|[Oo]ur)\b")


def compare(old_text: str, new_text: str) -> Same | None:
    """Do the two sentences state one single-valued attribute of one subject (the name they share)?"""
    if _USER.search(canonical(old_text)) and not _USER.search(canonical(new_text)):
        new_text = _WE.sub(lambda m: "User's" if m.group().lower() == "our" else "User", new_text)  # chat: "we moved"
    old, new = _dated(read(old_text, new_text)), _dated(read(new_text, old_text))
    if _guarded(old, new, (old_text, new_text)):
        return None
    found = _compare(old, new, old_text, new_text)
    if found is None:  # a leading capital the alignment took for grammar may be the value ("KPMG hired ...")
        wide_old, wide_new = read(old_text, f"{new_text} {old_text}"), read(new_text, f"{old_text} {new_text}")
        if (wide_old, wide_new) != (old, new):
            found = _compare(_dated(wide_old), _dated(wide_new), old_text, new_text)
    if found is not None and found.attribute != "job_title" and (_titled(old_text) or _titled(new_text)):
        return None  # "Priya Nair is a staff engineer": a title, whatever else its frame is near (an employer)
    return found


def _titled(text: str) -> bool:
    """Does the sentence give its subject a job title in words (keys.title_key: "X is a staff engineer")?"""
    from .keys import title_key

    return title_key(text) is not None


def _compare(old: Reading, new: Reading, old_text: str, new_text: str) -> Same | None:
    old_keys, new_keys = {a.key for a in old.anchors}, {a.key for a in new.anchors}
    shared = old_keys & new_keys
    if len(shared) == 2 and old_keys == new_keys and len(old.anchors) == len(new.anchors) == 2:
        subjects = sorted(shared)  # the same two names: either may be the subject, the other the value
    elif len(shared) == 1:
        subjects = list(shared)
    else:
        return None
    for subject in subjects:
        for was, old_value, old_kind in frame_value(old, subject, new, canonical(old_text)):
            attribute = was.attribute
            if attribute is None or attribute.multi:
                continue
            for now, new_value, new_kind in frame_value(new, subject, old, canonical(new_text)):
                if now.attribute is not attribute or old_kind != new_kind:
                    continue
                same = value_key(old_value) == value_key(new_value)
                if not same and len(subjects) == 2:
                    continue
                spelled = next(x for x in new.anchors if x.key == subject)
                t_new = canonical(new_text)
                why = f"attribute {attribute.name} by meaning ({was.score:.2f}/{now.score:.2f}, margins " \
                      f"{was.margin:.2f}/{now.margin:.2f})"
                return Same("duplicate" if same else "contradiction_fork", t_new[spelled.start:spelled.end],
                            attribute.name, old_value, new_value, why)
    return None


# ----------------------------------------------------------------------------------------- keying one sentence

# Attributes whose name the lexicon spells per kind of thing ("favourite_band", "favourite_cafe"): one name here
# would not meet a keyed write or the lexicon's key for the same fact, so they key nothing.
_NO_KEY = frozenset({"favourite_music", "favourite_place"})


def key(text: str) -> tuple[str, str, str] | None:
    """The (subject, attribute, value) one sentence states, by meaning, when the word lists read none: each
    name tried as the subject ("KPMG hired Rose Baker": Rose Baker / employer / KPMG; as KPMG it reads as
    KPMG's employees, of many values). Only one subject may read as a single-valued attribute with the
    margin (a frame the model reads both ways names no subject), with one value, and none of compare's
    guards (a negation, a relative, "also" / many values, the past, a hypothetical)."""
    if _told_as_past(canonical(text)) or _HYPOTHETICAL.search(text) or _titled(text):
        return None
    narrow = _dated(read(text))
    found = _key(narrow, text)
    if found is None:  # a leading capital the alignment took for grammar may be a name ("KPMG hired ...")
        wide = _dated(read(text, text))
        if wide.anchors != narrow.anchors:
            found = _key(wide, text)
    return found


def _key(r: Reading, text: str) -> tuple[str, str, str] | None:
    if r.negated or r.relatives or r.also or r.many:  # (an event: the classifier's own decoy, of many values)
        return None
    values = [a for a in r.anchors if not (a.kind == "date" or _YEAR.fullmatch(a.key))]
    if len(values) != 2:  # one subject and one value ("started there in May": when, not what)
        return None
    r = replace(r, anchors=tuple(values))
    t = canonical(text)
    read_as = [(subject, value, classify_frame(frame(r, subject.key), value.kind).attribute if subject.kind == "name"
                else None) for subject, value in ((values[0], values[1]), (values[1], values[0]))]
    single = [(s, v, a) for s, v, a in read_as if a is not None and not a.multi]
    if len(single) != 1 or single[0][2].name in _NO_KEY:
        return None
    subject, value, attribute = single[0]
    other = next(a for s, _, a in read_as if s is not subject)
    # The other way round, the sentence may read as the inverse ("KPMG hired Rose Baker": KPMG's employees);
    # as anything else, the model read the frame backwards ("Rose Baker interviewed at Google": an event of
    # hers, not Google's employer).
    if other is not None and _INVERSE.get(attribute.name) != other.name:
        return None
    return t[subject.start:subject.end], attribute.name, t[value.start:value.end]


_INVERSE = {"employer": "employees", "manager": "reports", "ceo": "ceo_of", "owner": "holdings"}


def unread(aligned: Aligned) -> bool:
    """Did the alignment only fail to read one relation in both sentences (not see another subject, a relative,
    a unit, a qualifier, a negation, many values or the past)? "No shared name" and "more than one name
    changed" count, because compare itself asks for one shared subject and one value a side."""
    return aligned.verdict == "unknown" or aligned.unread
