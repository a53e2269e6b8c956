"""`fabric bench temporal`: what did the store know at time T — fabric against flat vector memory.

The benchmark seed 001 says nobody has built, run the way seed 000 ran its A/B: the same
questions, the same embeddings, the same researcher/critic loop, different memory backends.

Cases (generated from a seed; each case runs in its own org / store):
  static        one fact, asked now (the control)
  staleness     2 or 3 versions of a single-valued fact, asked now: expect the newest
  historical    the same, asked at a valid time between versions: expect the one valid then
  out_of_order  the newer version arrives first, the older second (or, of three, the middle one
                last); asked now and in between
  known_at      asked "as known" at a moment between two writes: expect what the store believed
                then (with three versions also about an earlier valid time: the audit question)
  retraction    a correction is retracted; asked now (the older fact again) and as known before;
                or the middle of three versions is retracted: the last still holds now, the first
                held in between, and as known before the retraction the middle one did
  duplicate     a fact written twice (the same words, or a paraphrase): one live memory
  refinement    a fact and a more detailed version of it: both live, the detail reachable
  multi_hop     the city of the headquarters of the company a person worked for at T: both hops
                must come from the same epoch

Every kind comes in two phrasings. SAME-TEMPLATE cases write every version of a fact in one
template (only the value changes). REPHRASED cases write each version in another of the
relation's rephrasings, the way people restate facts: subject and value in other positions,
passive voice, synonyms of the relation, numbers in words or digits (ten relations, two of them outside
the rule validator's lexicon: a dog's name and a phone number; at least
four rephrasings each). Both are reported separately.

Anti-cheat (seed 000), checked in code by `check_anti_cheat`: every version is written as if
currently true, with no recency words and no dates; only timestamps tell versions apart.
Same-template versions share one template; rephrased versions never do. Every org also holds
facts of the same relation about other subjects.

The CONVERSATIONAL STREAM (`conversation`): one org, many turns about the same few people,
companies and projects, each turn a distinct fact (many multi-valued: places visited, languages,
offices opened). Nothing in it should be a duplicate or a correction; the share of turns recorded
as duplicates or superseded is the "collapsed" figure (target at most 1%).

Backends (same embedding model, same questions):
  fabric-keys   fabric, writes carry subject/relation/value (the rule validator)
  fabric-text   fabric, text only: the validator must infer contradictions, refinements, repeats
  fabric-keys-llm, fabric-text-llm   the same with the LLM validator (opt-in: an OpenAI-compatible
                endpoint and model; the rules settle what they read for sure, the model the rest).
                Their writes go to a queue of their own, placed by a second worker started with the
                LLM's settings, so the rules' and the LLM's columns come from one run on the same cases
  pgvector      flat: one table, top-k cosine, no time (timestamps are metadata only)
  chroma        flat: ChromaDB embedded, cosine, as in seed 000 (optional `bench` extra)

How each backend answers: fabric through its public API only — asked now = `search(q)` top-1,
at a valid time = `search(q, valid_at=T)`, as known at T' = `search(q, known_at=T')` where T' is a
moment recorded after one write's placement and before the next write. Flat backends rank by
similarity only: the seed's "flat RAG". A flat store forgets by deleting, so a retraction deletes.

The loop (seed 000): the researcher takes the top hit; the critic checks it for staleness —
fabric-keys with `current_value(subject, relation)` (as of the asked time), fabric-text (no keys)
with the hit's supersession chain (`history`) against `belief_state` at the asked time, flat
backends against the newest timestamped value of the same key among the hits. On a rejection the
researcher queries again (retry), up to 2 retries; then the loop escalates."""

from __future__ import annotations

import logging
import random
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..errors import FabricError, PlacementParked, ValidationError
from ..placement.validator import normalise
from ..types import utcnow
from .measure import percentile

log = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("static", "staleness", "historical", "out_of_order", "known_at", "retraction",
                          "duplicate", "refinement", "multi_hop")
# fabric must be right on every query of these kinds (both modes).
MUST_KINDS: tuple[str, ...] = ("staleness", "historical", "out_of_order", "known_at", "retraction")
# Seed 001's five behaviours, each measured by the kinds named here.
BEHAVIOURS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("staleness handling", ("staleness", "historical"),
     "stops relying on a superseded fact at the right moment: not before (historical), not after (staleness)"),
    ("supersession attribution", ("known_at",),
     "answers with the facts the store held at the time, not today's"),
    ("retraction timing", ("retraction",),
     "a retraction takes effect exactly then, and what was believed before it stays answerable"),
    ("contradiction resolution", ("out_of_order", "duplicate", "refinement"),
     "the right version wins (even arriving late), the loser is time-bounded; repeats and details "
     "are not contradictions"),
    ("multi-hop temporal consistency", ("multi_hop",),
     "every hop of a chain comes from the same epoch"),
)
ALL_BACKENDS: tuple[str, ...] = ("fabric-keys", "fabric-text", "pgvector", "chroma")
# Opt-in (they need an endpoint): not in "all", named one by one or as "llm".
LLM_BACKENDS: tuple[str, ...] = ("fabric-keys-llm", "fabric-text-llm")
PHRASINGS: tuple[str, ...] = ("same", "rephrased")
CASES_FULL, CASES_QUICK = 20, 3
TURNS_FULL, TURNS_QUICK = 150, 40
DISTRACTORS_FULL, DISTRACTORS_QUICK = 3, 2
TOP_K = 5
MAX_RETRIES = 2
LAST_PHASE = 4
WAIT_TIMEOUT = 600.0
LLM_WAIT_TIMEOUT = 3600.0  # the LLM backends' job timeout (llm_fabric)

# ---------------------------------------------------------------------------------------- the cases


class BenchmarkError(FabricError):
    """The benchmark cannot run as asked (bad options, a case that breaks the anti-cheat rules)."""


@dataclass(frozen=True, slots=True)
class Relation:
    name: str
    subject_pool: str          # person | company
    value_pool: str            # company | city | person | plan | film | headcount | petname | phone
    templates: tuple[str, ...]     # same-template cases: one of these for every version
    rephrasings: tuple[str, ...]   # rephrased cases: each version in another one; {vw}: a number in words
    questions: tuple[str, ...]
    detail: str                # appended to a statement (before its full stop) to refine it; {x}
    detail_words: tuple[str, ...]
    detail_question: str

    def say(self, template: str, subject: str, value: str) -> str:
        text = template.format(s=subject, v=value, vw=number_words(int(value)) if value.isdigit() else value)
        return re.sub(r"(?<=s)'s\b", "'", text)  # "Redfern Instruments' CEO", as people write it


# Written as people restate facts, not in the shape of any validator: the subject or the value
# leads, active or passive, other verbs for the same relation, numbers in digits or in words.
RELATIONS: tuple[Relation, ...] = (
    Relation("employer", "person", "company",
             ("{s} works at {v}.", "{s} is employed by {v}.", "{s} has a job at {v}."),
             ("{s} works at {v}.", "{v} employs {s}.", "{s}'s employer is {v}.",
              "{s} is on the payroll of {v}.", "Ask anyone at {v}: {s} works there."),
             ("Where does {s} work?", "Which company employs {s}?"),
             " as a {x} engineer", ("data", "platform", "security", "firmware", "reliability", "compiler"),
             "What kind of engineer is {s} at {v}?"),
    Relation("home_city", "person", "city",
             ("{s} lives in {v}.", "{s} resides in {v}.", "{s} has a home in {v}."),
             ("{s} lives in {v}.", "Home for {s} is {v}.", "{v} is where {s} lives.", "{s} resides in {v}.",
              "The city {s} calls home is {v}."),
             ("Where does {s} live?", "Which city does {s} live in?"),
             " in a flat near the {x}", ("cathedral", "river port", "botanical garden", "main station",
                                         "university", "fish market"),
             "What is the home of {s} in {v} near?"),
    Relation("manager", "person", "person",
             ("{s} reports to {v}.", "{s}'s manager is {v}.", "{s} is managed by {v}."),
             ("{s} reports to {v}.", "{v} is the manager of {s}.", "{s} is managed by {v}.", "{v} manages {s}.",
              "The person {s} reports to is {v}."),
             ("Who is {s}'s manager?", "Who does {s} report to?"),
             " on the {x} team", ("payments", "search", "billing", "mobile", "analytics", "logistics"),
             "Which team is {s} on under {v}?"),
    Relation("ceo", "company", "person",
             ("The chief executive of {s} is {v}.", "{s} is led by chief executive {v}.",
              "{s} has {v} as its CEO."),
             ("The chief executive of {s} is {v}.", "{v} is the CEO of {s}.", "{s} is led by chief executive {v}.",
              "{v} runs {s} as its chief executive.", "{s}'s top job, CEO, is held by {v}."),
             ("Who is the CEO of {s}?", "Who runs {s} as chief executive?"),
             ", who also chairs the {x} committee", ("audit", "risk", "ethics", "strategy", "safety",
                                                     "nominations"),
             "Which committee does {v}, the CEO of {s}, chair?"),
    Relation("headquarters", "company", "city",
             ("{s} has its headquarters in {v}.", "{s} is headquartered in {v}.",
              "The head office of {s} is in {v}."),
             ("{s} is headquartered in {v}.", "{v} is home to the headquarters of {s}.",
              "The head office of {s} is in {v}.", "{s} runs its business from a head office in {v}."),
             ("Where is {s} headquartered?", "In which city is the head office of {s}?"),
             " in an office tower by the {x}", ("harbour", "railway station", "river", "airport",
                                                "cathedral square", "ring road"),
             "Which landmark is the head office of {s} in {v} beside?"),
    Relation("billing_plan", "company", "plan",
             ("{s} is on the {v} plan.", "{s} subscribes to the {v} plan.", "{s} pays for the {v} plan."),
             ("{s} is on the {v} plan.", "The billing plan of {s} is {v}.", "{v} is the plan {s} pays for.",
              "{s} subscribes to our {v} tier.", "Billing for {s} runs on the {v} plan."),
             ("Which plan is {s} on?", "What billing plan does {s} have?"),
             " with {x} seats", ("twenty", "forty", "sixty", "eighty", "ninety", "thirty"),
             "How many seats does {s} have on the {v} plan?"),
    Relation("favourite_film", "person", "film",
             ("The favourite film of {s} is {v}.", "{s}'s favourite film is {v}.",
              "{s} names {v} as a favourite film."),
             ("The favourite film of {s} is {v}.", "{s} loves {v} more than any other film.",
              "{v} is {s}'s favourite movie.", "Of all films, {s} likes {v} best."),
             ("What is {s}'s favourite film?", "Which film does {s} like best?"),
             ", for its {x}", ("soundtrack", "camera work", "ending", "dialogue", "lead actor", "score"),
             "What does {s} like about {v}?"),
    Relation("headcount", "company", "headcount",
             ("{s} has {v} employees.", "{s} employs {v} people.", "The staff of {s} numbers {v}."),
             ("{s} has {v} employees.", "{s} employs {vw} people.", "{v} people work at {s}.",
              "The staff of {s} numbers {vw}.", "Headcount at {s}: {v}."),
             ("How many employees does {s} have?", "How many people work at {s}?"),
             ", most of them in {x}", ("engineering", "sales", "support", "manufacturing", "research",
                                       "operations"),
             "Where do most of the people at {s} work?"),
)
# Relations the rule validator's lexicon does not know: it must read their restatements by aligning
# names and values (fabric/placement/align.py).
RELATIONS += (
    Relation("pet_name", "person", "petname",
             ("{s}'s dog is called {v}.", "The name of {s}'s dog is {v}.", "{s} has a dog named {v}."),
             ("{s}'s dog is called {v}.", "The name of {s}'s dog is {v}.", "{v} is the name of {s}'s dog.",
              "{s} calls the family dog {v}.", "The dog {s} walks every morning answers to {v}."),
             ("What is the name of {s}'s dog?", "What is {s}'s dog called?"),
             ", a {x} with a loud bark", ("beagle", "spaniel", "terrier", "collie", "poodle", "husky"),
             "What breed is {s}'s dog {v}?"),
    Relation("phone", "person", "phone",
             ("{s}'s phone number is {v}.", "The phone number of {s} is {v}.", "{s} can be reached on {v}."),
             ("{s}'s phone number is {v}.", "You can reach {s} on {v}.", "{v} is the number to call for {s}.",
              "To get hold of {s}, dial {v}.", "The phone number for {s} is {v}."),
             ("What is {s}'s phone number?", "Which number reaches {s} by phone?"),
             ", the {x} line", ("mobile", "office", "home", "direct", "night", "desk"),
             "Which line is {s}'s number {v}?"),
)
REL = {r.name: r for r in RELATIONS}

FIRST = ("Ada", "Bruno", "Celia", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Katya",
         "Lionel", "Maren", "Nikhil", "Odile", "Pavel", "Quentin", "Rosa", "Soren", "Talia", "Ulrich", "Vera",
         "Wendell", "Xenia", "Yusuf", "Zora", "Anouk", "Bastien", "Corin", "Delphine", "Emeric", "Freya",
         "Gideon", "Hana", "Ivo", "Jana", "Kofi", "Lena", "Milo", "Nadia")
LAST = ("Moreau", "Castell", "Okafor", "Lindqvist", "Haddad", "Brennan", "Sato", "Vukovic", "Albrecht",
        "Quispe", "Tanaka", "Ferreira", "Novak", "Abara", "Dunmore", "Esposito", "Fairbairn", "Gallo", "Holm",
        "Iverson", "Jaramillo", "Kowal", "Laine", "Mbeki", "Nakamura", "Ostrander", "Petrov", "Rasku",
        "Strand", "Teixeira", "Underhill", "Varga", "Whitlock", "Yilmaz", "Zelenko", "Arden", "Bellamy",
        "Cordova", "Drummond", "Ekholm")
COMPANIES = ("Meridian Bio", "Kestrel Dynamics", "Halcyon Freight", "Ostara Labs", "Brightwater Analytics",
             "Corvid Systems", "Lumen Foundry", "Tessellate Robotics", "Juniper Ridge Capital",
             "Aldergrove Foods", "Quillon Software", "Sable Harbor Energy", "Vantor Medical",
             "Pinecrest Textiles", "Orrery Aerospace", "Marlowe Logistics", "Cinder Peak Games",
             "Ironleaf Insurance", "Tidewater Pharma", "Solstice Optics", "Granite Arc Media",
             "Wrenfield Motors", "Bramble Data", "Cobalt Heron Bank", "Driftwood Studios",
             "Emberline Chemicals", "Foxglove Health", "Glasswing Security", "Harrow Point Shipping",
             "Ivory Tern Airlines", "Larkspur Semiconductors", "Mosswood Robotics", "Nimbus Quarry",
             "Obsidian Lane Partners", "Pallas Grid", "Quarry Hill Dairy", "Redfern Instruments",
             "Saltmarsh Brewing", "Thornbury Cement", "Umber Valley Wines")
CITIES = ("Lyon", "Porto", "Tallinn", "Ghent", "Bergen", "Kraków", "Valencia", "Leipzig", "Bologna", "Aarhus",
          "Ljubljana", "Cork", "Tampere", "Graz", "Utrecht", "Brno", "Turku", "Nantes", "Seville", "Gdańsk",
          "Malmö", "Basel", "Bilbao", "Lille", "Split", "Riga", "Vilnius", "Salzburg", "Dresden", "Galway",
          "Trieste", "Coimbra", "Montpellier", "Zaragoza", "Eindhoven", "Uppsala", "Innsbruck", "Poznań",
          "Plovdiv", "Debrecen")

PLANS = ("Starter", "Growth", "Scale", "Enterprise", "Premium", "Team", "Business", "Pro", "Essentials",
         "Ultimate", "Basic", "Plus")
FILMS = ("Paper Harbour", "Copper Skies", "The Salt Road", "Winter Orchard", "Glass Lanterns", "The Quiet Ferry",
         "Northern Tide", "A House of Kites", "Blue Quarry", "The Ninth Bell", "Cinder Garden", "Silver Marsh",
         "The Long Meadow", "Paper Moons")
HEADCOUNTS = tuple(str(n) for n in range(120, 990, 35))
PET_NAMES = ("Biscuit", "Pepper", "Juniper", "Waffles", "Clover", "Pickle", "Ziggy", "Mochi", "Rufus", "Tansy",
             "Barnaby", "Nutmeg", "Otis", "Saffron")
PHONES = tuple(f"+44 161 {n:03d} {n * 7 % 1000:03d}" for n in range(110, 990, 37))  # no 4-digit group: no year

EPOCH = datetime(2012, 1, 1, tzinfo=timezone.utc)

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_words(n: int) -> str:
    """0..999 in words, as people write them ("three hundred and forty-five")."""
    if not 0 <= n <= 999:
        raise ValueError(f"{n} is outside 0..999")
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("-" + _ONES[n % 10] if n % 10 else "")
    rest = n % 100
    return _ONES[n // 100] + " hundred" + (" and " + number_words(rest) if rest else "")


@dataclass(frozen=True, slots=True)
class Fact:
    """One statement written to every backend. `role`: version | distractor | repeat | detail."""

    fid: str
    subject: str
    relation: str
    value: str
    text: str
    valid_from: datetime
    role: str
    template: int


@dataclass(frozen=True, slots=True)
class Query:
    """One question. Asked now, at a valid time (`valid_at`), or as known right after a phase."""

    qid: str
    text: str
    subject: str
    relation: str
    valid_at: datetime | None = None
    known_phase: int | None = None
    check: str = "top1"                      # top1 | duplicate | refinement | multi_hop
    detail_fid: str | None = None            # refinement: the detailed memory to reach
    base_fid: str | None = None              # refinement: the fact it refines
    hop2_question: str | None = None         # multi_hop: the second question, {s} = first hop's answer
    hop2_relation: str | None = None

    @property
    def asked(self) -> str:
        return "known_at" if self.known_phase is not None else "valid_at" if self.valid_at else "now"


@dataclass(slots=True)
class Case:
    cid: str
    kind: str
    facts: dict[str, Fact] = field(default_factory=dict)
    phases: dict[int, list[str]] = field(default_factory=dict)       # phase -> fids written then
    retractions: dict[int, list[str]] = field(default_factory=dict)  # phase -> fids retracted then
    queries: list[Query] = field(default_factory=list)
    subjects: tuple[str, ...] = ()                                   # the case's own subjects
    phrasing: str = "same"                                           # same | rephrased

    def write_order(self) -> list[str]:
        return [fid for p in sorted(self.phases) for fid in self.phases[p]]

    def to_dict(self) -> dict[str, Any]:
        return {"cid": self.cid, "kind": self.kind, "phrasing": self.phrasing, "subjects": list(self.subjects),
                "facts": [{"fid": f.fid, "subject": f.subject, "relation": f.relation, "value": f.value,
                           "text": f.text, "valid_from": f.valid_from.isoformat(), "role": f.role}
                          for f in self.facts.values()],
                "phases": {str(p): fids for p, fids in sorted(self.phases.items())},
                "retractions": {str(p): fids for p, fids in sorted(self.retractions.items())},
                "queries": [{"qid": q.qid, "text": q.text, "subject": q.subject, "relation": q.relation,
                             "asked": q.asked, "valid_at": q.valid_at.isoformat() if q.valid_at else None,
                             "known_phase": q.known_phase, "check": q.check} for q in self.queries]}


class _Names:
    """Fresh fabricated names for one case: no first name, last name, company or city repeats."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.first: set[str] = set()
        self.last: set[str] = set()
        self.companies: set[str] = set()
        self.cities: set[str] = set()
        self.used: set[str] = set()

    def person(self) -> str:
        first = self.rng.choice([f for f in FIRST if f not in self.first])
        last = self.rng.choice([x for x in LAST if x not in self.last])
        self.first.add(first)
        self.last.add(last)
        return f"{first} {last}"

    def company(self) -> str:
        c = self.rng.choice([x for x in COMPANIES if x not in self.companies])
        self.companies.add(c)
        return c

    def city(self) -> str:
        c = self.rng.choice([x for x in CITIES if x not in self.cities])
        self.cities.add(c)
        return c

    def pick(self, pool: Sequence[str]) -> str:
        x = self.rng.choice([x for x in pool if x not in self.used])
        self.used.add(x)
        return x

    def of(self, pool: str) -> str:
        if pool in ("plan", "film", "headcount", "petname", "phone"):
            return self.pick({"plan": PLANS, "film": FILMS, "headcount": HEADCOUNTS, "petname": PET_NAMES,
                              "phone": PHONES}[pool])
        return {"person": self.person, "company": self.company, "city": self.city}[pool]()


class _Builder:
    """Builds one case: facts placed in phases, retractions, queries."""

    def __init__(self, cid: str, kind: str, rng: random.Random, distractors: int = 3, phrasing: str = "same"):
        self.case = Case(cid, kind, phrasing=phrasing)
        self.rng = rng
        self.n_distractors = distractors
        self.rephrased = phrasing == "rephrased"
        self.names = _Names(rng)
        self.n = 0

    def templates(self, rel: Relation) -> tuple[str, ...]:
        return rel.rephrasings if self.rephrased else rel.templates

    def other_template(self, rel: Relation, *not_these: int) -> int:
        """Another template of the case's pool (rephrased cases: a version never repeats a style)."""
        return self.rng.choice([t for t in range(len(self.templates(rel))) if t not in not_these])

    def fact(self, phase: int, rel: Relation, subject: str, value: str, valid_from: datetime, role: str,
             template: int, text: str | None = None) -> Fact:
        self.n += 1
        f = Fact(f"{self.case.cid}.f{self.n}", subject, rel.name, value,
                 text or rel.say(self.templates(rel)[template], subject, value), valid_from, role, template)
        self.case.facts[f.fid] = f
        self.case.phases.setdefault(phase, []).append(f.fid)
        return f

    def distractors(self, rel: Relation, count: int, before: datetime) -> None:
        """Facts of the same relation about other subjects, valid from before the case's facts.

        Written in phase 1 with the case's first fact (one placement job per org and phase)."""
        for _ in range(count):
            when = before - timedelta(days=self.rng.randint(30, 400))
            self.fact(1, rel, self.names.of(rel.subject_pool), self.names.of(rel.value_pool), when, "distractor",
                      self.rng.randrange(len(self.templates(rel))))

    def versions(self, rel: Relation, subject: str, count: int, start: datetime, template: int,
                 phases: Sequence[int]) -> list[Fact]:
        values = [self.names.of(rel.value_pool) for _ in range(count)]
        times = [start]
        for _ in range(count - 1):
            times.append(times[-1] + timedelta(days=self.rng.randint(200, 700)))
        styles = [template] * count
        if self.rephrased:  # each version in another style, starting from `template`
            styles = [template] + self.rng.sample([t for t in range(len(rel.rephrasings)) if t != template], count - 1)
        return [self.fact(p, rel, subject, v, t, "version", st)
                for v, t, p, st in zip(values, times, phases, styles)]

    def query(self, text: str, subject: str, relation: str, **kw: Any) -> Query:
        q = Query(f"{self.case.cid}.q{len(self.case.queries) + 1}", text, subject, relation, **kw)
        self.case.queries.append(q)
        return q


def _mid(a: datetime, b: datetime) -> datetime:
    return a + (b - a) / 2


def generate(seed: int = 0, per_kind: int = CASES_FULL, kinds: Sequence[str] = KINDS, *,
             distractors: int = 3, phrasings: Sequence[str] = PHRASINGS) -> list[Case]:
    """The benchmark's cases, reproducible from `seed` (and the counts). Checked against the anti-cheat
    rules. `distractors`: facts of each case relation about other subjects in every org (at least 2).
    `phrasings`: same (one template per fact) and/or rephrased (each version in another style)."""
    if not isinstance(per_kind, int) or per_kind < 1:
        raise ValidationError("per_kind", "must be a positive integer")
    if not isinstance(distractors, int) or distractors < 2:
        raise ValidationError("distractors", "at least two facts about other subjects per relation")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValidationError("kinds", f"unknown kind {unknown[0]!r}; kinds are {', '.join(KINDS)}")
    if not phrasings or any(p not in PHRASINGS for p in phrasings):
        raise ValidationError("phrasings", f"choose from {', '.join(PHRASINGS)}")
    rng = random.Random(seed)
    cases = []
    for phrasing in phrasings:
        for ki, kind in enumerate(kinds):
            for i in range(per_kind):
                cid = f"{kind}-{i:02d}" if phrasing == "same" else f"{kind}-r{i:02d}"
                b = _Builder(cid, kind, random.Random(rng.getrandbits(64)), distractors, phrasing)
                # rephrased cases start one relation further on, so together they cover all eight
                _BUILD[kind](b, i, RELATIONS[(i + ki + (phrasing == "rephrased") * 4) % len(RELATIONS)])
                cases.append(b.case)
    check_anti_cheat(cases)
    return cases


def _start(b: _Builder) -> datetime:
    return EPOCH + timedelta(days=b.rng.randint(0, 1500))


def _single(b: _Builder, rel: Relation) -> tuple[str, int, datetime]:
    subject = b.names.of(rel.subject_pool)
    b.case.subjects = (subject,)
    t0 = _start(b)
    b.distractors(rel, b.n_distractors, t0)
    return subject, b.rng.randrange(len(b.templates(rel))), t0


def _question(b: _Builder, rel: Relation, subject: str) -> str:
    return b.rng.choice(rel.questions).format(s=subject)


def _build_static(b: _Builder, i: int, rel: Relation) -> None:
    s, t, t0 = _single(b, rel)
    b.versions(rel, s, 1, t0, t, [1])
    b.query(_question(b, rel, s), s, rel.name)


def _build_staleness(b: _Builder, i: int, rel: Relation) -> None:
    s, t, t0 = _single(b, rel)
    n = 2 + i % 2
    b.versions(rel, s, n, t0, t, list(range(1, n + 1)))
    b.query(_question(b, rel, s), s, rel.name)


def _build_historical(b: _Builder, i: int, rel: Relation) -> None:
    s, t, t0 = _single(b, rel)
    n = 2 + i % 2
    vs = b.versions(rel, s, n, t0, t, list(range(1, n + 1)))
    for a, c in zip(vs, vs[1:]):
        b.query(_question(b, rel, s), s, rel.name, valid_at=_mid(a.valid_from, c.valid_from))


def _build_out_of_order(b: _Builder, i: int, rel: Relation) -> None:
    s, t, t0 = _single(b, rel)
    # Even cases: the newer of two versions is written first. Odd cases: of three versions the
    # first and the last are written, then the middle one lands between them.
    vs = b.versions(rel, s, 2, t0, t, [2, 1]) if i % 2 == 0 else b.versions(rel, s, 3, t0, t, [1, 3, 2])
    b.query(_question(b, rel, s), s, rel.name)
    for a, c in zip(vs, vs[1:]):
        b.query(_question(b, rel, s), s, rel.name, valid_at=_mid(a.valid_from, c.valid_from))


def _build_known_at(b: _Builder, i: int, rel: Relation) -> None:
    s, t, t0 = _single(b, rel)
    n = 2 + i % 2
    vs = b.versions(rel, s, n, t0, t, list(range(1, n + 1)))
    for phase in range(1, n):
        b.query(_question(b, rel, s), s, rel.name, known_phase=phase)
    if n == 3:  # the audit question: what did the store believe after the second write about an earlier time
        b.query(_question(b, rel, s), s, rel.name, known_phase=2, valid_at=_mid(vs[0].valid_from, vs[1].valid_from))


def _build_retraction(b: _Builder, i: int, rel: Relation) -> None:
    s, t, t0 = _single(b, rel)
    if i % 2 == 0:  # a correction is retracted: the older fact holds again
        _, correction = b.versions(rel, s, 2, t0, t, [1, 2])
        b.case.retractions[3] = [correction.fid]
        b.query(_question(b, rel, s), s, rel.name)
        b.query(_question(b, rel, s), s, rel.name, known_phase=2)  # as known before the retraction
        return
    # The middle of three versions is retracted: the last still holds now, and between the
    # middle's and the last's valid_from the first one held after all.
    first, middle, last = b.versions(rel, s, 3, t0, t, [1, 2, 3])
    b.case.retractions[4] = [middle.fid]
    between = _mid(middle.valid_from, last.valid_from)
    b.query(_question(b, rel, s), s, rel.name)
    b.query(_question(b, rel, s), s, rel.name, valid_at=between)
    b.query(_question(b, rel, s), s, rel.name, valid_at=between, known_phase=3)  # as known before


def _build_duplicate(b: _Builder, i: int, rel: Relation) -> None:
    s, t, t0 = _single(b, rel)
    (f,) = b.versions(rel, s, 1, t0, t, [1])
    # the same words (even i, same-template cases) or a paraphrase (odd i, and every rephrased case)
    other = t if i % 2 == 0 and not b.rephrased else b.other_template(rel, t)
    b.fact(2, rel, s, f.value, f.valid_from, "repeat", other)
    b.query(_question(b, rel, s), s, rel.name, check="duplicate")


def _build_refinement(b: _Builder, i: int, rel: Relation) -> None:
    s, t, t0 = _single(b, rel)
    (base,) = b.versions(rel, s, 1, t0, t, [1])
    # rephrased: the detail restates the fact in another style before adding to it
    style = b.other_template(rel, t) if b.rephrased else t
    restated = rel.say(b.templates(rel)[style], s, base.value)
    detail = restated[:-1] + rel.detail.format(x=b.rng.choice(rel.detail_words)) + "."
    d = b.fact(2, rel, s, base.value, base.valid_from, "detail", style, text=detail)
    b.query(rel.detail_question.format(s=s, v=base.value), s, rel.name, check="refinement", detail_fid=d.fid,
            base_fid=base.fid)


def _build_multi_hop(b: _Builder, i: int, rel: Relation) -> None:
    emp, hq = REL["employer"], REL["headquarters"]
    person = b.names.person()
    first, second = b.names.company(), b.names.company()
    b.case.subjects = (person, first, second)
    t0 = _start(b)
    b.distractors(emp, b.n_distractors, t0)
    b.distractors(hq, b.n_distractors, t0)
    te, th = b.rng.randrange(len(b.templates(emp))), b.rng.randrange(len(b.templates(hq)))
    # rephrased: the second version of each fact in another style
    te2, th2 = (b.other_template(emp, te), b.other_template(hq, th)) if b.rephrased else (te, th)
    d = lambda: timedelta(days=b.rng.randint(200, 700))  # noqa: E731
    t1 = t0 + d()
    t2 = t1 + d()
    t3 = t2 + d()
    b.fact(1, hq, first, b.names.city(), t0, "version", th)
    b.fact(1, hq, second, b.names.city(), t0, "version", th)
    b.fact(1, emp, person, first, t1, "version", te)
    b.fact(2, hq, first, b.names.city(), t2, "version", th2)     # the first company moves
    b.fact(3, emp, person, second, t3, "version", te2)           # the person changes company
    at = _mid(t1, t2) if i % 2 == 0 else _mid(t2, t3)
    b.query(_question(b, emp, person), person, emp.name, valid_at=at, check="multi_hop",
            hop2_question=b.rng.choice(hq.questions), hop2_relation=hq.name)


_BUILD: dict[str, Callable[[_Builder, int, Relation], None]] = {
    "static": _build_static, "staleness": _build_staleness, "historical": _build_historical,
    "out_of_order": _build_out_of_order, "known_at": _build_known_at, "retraction": _build_retraction,
    "duplicate": _build_duplicate, "refinement": _build_refinement, "multi_hop": _build_multi_hop,
}

# ------------------------------------------------------------------------------------- anti-cheat

RECENCY_WORDS = (
    "former", "formerly", "previous", "previously", "prior", "no longer", "now", "nowadays", "current",
    "currently", "new", "newly", "newest", "latest", "recent", "recently", "lately", "outdated", "old", "older",
    "still", "anymore", "any more", "used to", "today", "yesterday", "tomorrow", "ago", "since", "until",
    "as of", "update", "updated", "replaced", "replaces", "succeeded", "successor", "predecessor", "interim",
    "acting", "incoming", "outgoing", "retired", "past", "present", "once", "later", "earlier", "before",
    "after", "last", "next", "soon", "became", "becomes", "moved", "left", "joined", "ex",
)
_RECENCY = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(RECENCY_WORDS, key=len, reverse=True))
                      + r")\b", re.IGNORECASE)
_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
           "saturday sunday").split()
_DATE = re.compile(r"\b\d{4}\b|\b\d{1,2}[/.-]\d{1,2}([/.-]\d{2,4})?\b|\b\d{1,2}(st|nd|rd|th)\b|\b("
                   + "|".join(_MONTHS) + r")\b|\bq[1-4]\b", re.IGNORECASE)


def banned_in(text: str) -> list[str]:
    """Recency words and date-like tokens in a text (what the anti-cheat rule forbids)."""
    return [m.group(0) for m in _RECENCY.finditer(text)] + [m.group(0) for m in _DATE.finditer(text)]


def check_anti_cheat(cases: Iterable[Case]) -> None:
    """Refuse cases a surface cue could answer (seed 000's rules), naming the case and the text.

    - no recency words and no dates in any written text or question;
    - same-template cases: the versions of one fact share one template (their texts are equal once
      the value is masked); rephrased cases: no two versions of one fact share a template;
    - every org also holds at least two facts of a case's relation(s) about other subjects."""
    for c in cases:
        for text in [f.text for f in c.facts.values()] + [q.text for q in c.queries]:
            bad = banned_in(text)
            if bad:
                raise BenchmarkError(f"case {c.cid}: {text!r} contains {bad} (recency word or date)")
        by_key: dict[tuple[str, str], list[Fact]] = {}
        for f in c.facts.values():
            if f.role == "version":
                by_key.setdefault((f.subject, f.relation), []).append(f)
        for (s, r), vs in by_key.items():
            if c.phrasing == "rephrased":
                if len({v.template for v in vs}) != len(vs):
                    raise BenchmarkError(f"case {c.cid}: versions of ({s}, {r}) repeat a style in a rephrased case")
            else:
                masked = {v.text.replace(v.value, "{v}") for v in vs}
                if len(masked) > 1:
                    raise BenchmarkError(f"case {c.cid}: versions of ({s}, {r}) differ in style: {sorted(masked)}")
            if len({normalise(v.value) for v in vs}) != len(vs):
                raise BenchmarkError(f"case {c.cid}: versions of ({s}, {r}) repeat a value")
        for r in {f.relation for f in c.facts.values() if f.role == "version"}:
            others = [f for f in c.facts.values() if f.role == "distractor" and f.relation == r
                      and f.subject not in c.subjects]
            if len(others) < 2:
                raise BenchmarkError(f"case {c.cid}: fewer than two facts of {r!r} about other subjects")


# ----------------------------------------------------------------------------------------- oracle


def believed(case: Case, known_phase: int | None = None) -> list[Fact]:
    """The facts a perfect bi-temporal store holds right after `known_phase` (None: at the end)."""
    last = LAST_PHASE if known_phase is None else known_phase
    gone = {fid for p, fids in case.retractions.items() if p <= last for fid in fids}
    return [case.facts[fid] for p in sorted(case.phases) if p <= last for fid in case.phases[p] if fid not in gone]


def expected_value(case: Case, subject: str, relation: str, valid_at: datetime | None = None,
                   known_phase: int | None = None) -> str | None:
    """The right answer from the case's timeline: of the facts believed then about (subject,
    relation) and valid from no later than `valid_at` (default now), the one with the latest
    valid_from. Derived, never stored."""
    at = valid_at or utcnow()
    order = {fid: n for n, fid in enumerate(case.write_order())}
    cands = [f for f in believed(case, known_phase)
             if f.subject == subject and f.relation == relation and f.valid_from <= at]
    if not cands:
        return None
    return max(cands, key=lambda f: (f.valid_from, order[f.fid])).value


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and normalise(a) == normalise(b)


# --------------------------------------------------------------------------------------- backends


@dataclass(slots=True)
class Hit:
    """One retrieved item, mapped back to the fact whose text it holds (fid None: unknown text)."""

    fid: str | None
    text: str
    score: float
    ref: Any = None


@dataclass
class BackendStats:
    writes: int = 0
    ingest_s: float = 0.0
    accept_s: float = 0.0
    validator_calls: int = 0
    llm_calls: int = 0                 # placements the model decided (the rules settled the others)
    llm_ms: list[float] = field(default_factory=list)  # each one's time in the validator, retries included
    decisions: dict[str, int] = field(default_factory=dict)
    validators: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    placements: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


class FabricBackend:
    """fabric through its public library API. `keyed`: writes carry subject/relation/value. `llm`: `fab`
    queues its writes for a worker that places them with the LLM validator (see `llm_fabric`)."""

    def __init__(self, fab: Any, *, keyed: bool, run_id: str, k: int = TOP_K, llm: bool = False):
        self.fab, self.keyed, self.k, self.llm = fab, keyed, k, llm
        self.name = ("fabric-keys" if keyed else "fabric-text") + ("-llm" if llm else "")
        self.run_id = run_id
        self.stats = BackendStats()
        self.marks: dict[int, datetime] = {}
        self.memory_of: dict[tuple[str, str], Any] = {}
        self.texts: dict[str, dict[str, str]] = {}

    def org(self, case: Case) -> str:
        return f"bench-{self.run_id}-{'k' if self.keyed else 't'}{'l' if self.llm else ''}-{case.cid}"

    def ingest(self, phase: int, cases: Sequence[Case]) -> None:
        items, refs = [], []
        for c in cases:
            self.texts.setdefault(c.cid, {})
            for fid in c.phases.get(phase, []):
                f = c.facts[fid]
                self.texts[c.cid].setdefault(f.text, fid)
                item: dict[str, Any] = dict(content=f.text, org=self.org(c), valid_from=f.valid_from,
                                            source="bench-temporal", metadata={"bench_run": self.run_id})
                if self.keyed:
                    item.update(subject=f.subject, relation=f.relation, value=f.value)
                items.append(item)
                refs.append((c, fid))
        started = time.perf_counter()
        receipts = self.fab.write_many(items) if items else []
        accepted = time.perf_counter()
        for (c, fid), receipt in zip(refs, receipts):
            p = self.fab.wait(receipt, timeout=WAIT_TIMEOUT)
            self.memory_of[(c.cid, fid)] = p.memory_id
            st = self.stats
            st.decisions[p.decision] = st.decisions.get(p.decision, 0) + 1
            st.validators[p.validator or "?"] = st.validators.get(p.validator or "?", 0) + 1
            if p.validator not in (None, "pregate"):
                st.validator_calls += 1
            if p.validator == "llm":
                st.llm_calls += 1
            st.placements.setdefault(c.cid, []).append(
                {"fid": fid, "decision": p.decision, "validator": p.validator, "reason": p.reason})
        self.stats.writes += len(items)
        self.stats.accept_s += accepted - started
        self.stats.ingest_s += time.perf_counter() - started
        for c in cases:
            for fid in c.retractions.get(phase, []):
                self.fab.retract(self.memory_of[(c.cid, fid)], org=self.org(c),
                                 reason="bench: the correction was wrong")
        self.marks[phase] = utcnow()

    def ask(self, case: Case, text: str, valid_at: datetime | None, known_phase: int | None) -> list[Hit]:
        known_at = self.marks[known_phase] if known_phase is not None else None
        started = time.perf_counter()
        mems = self.fab.search(text, org=self.org(case), k=self.k, valid_at=valid_at, known_at=known_at)
        self.stats.latencies_ms.append((time.perf_counter() - started) * 1000)
        return [Hit(self.texts[case.cid].get(m.content), m.content, m.score or 0.0, m) for m in mems]

    def critic(self, case: Case, q: Query, hit: Hit, hits: Sequence[Hit]) -> bool:
        """Staleness check without embeddings: current_value by key, or (no key) the supersession chain."""
        m = hit.ref
        known_at = self.marks[q.known_phase] if q.known_phase is not None else None
        if m.subject and m.relation:
            cv = self.fab.current_value(m.subject, m.relation, org=self.org(case), valid_at=q.valid_at,
                                        known_at=known_at)
            return cv is not None and _same(cv.value, m.value)
        chain = {x.id for x in self.fab.history(m.id, org=self.org(case))}
        held = {x.id for x in self.fab.belief_state(org=self.org(case), valid_at=q.valid_at, known_at=known_at)}
        return chain & held == {m.id}

    def live(self, case: Case, text: str) -> list[str | None]:
        return [self.texts[case.cid].get(m.content) for m in self.fab.belief_state(org=self.org(case))]

    def read_llm_latency(self, cases: Sequence[Case]) -> None:
        """The time each model-decided placement spent in the validator, from the decision log (the
        worker measured it; one read per case's org, after the run)."""
        for c in cases:
            self.stats.llm_ms += [d.latency_ms for d in self.fab.decisions(org=self.org(c), action="place",
                                                                           limit=10000)
                                  if d.validator == "llm" and d.latency_ms is not None]

    def reachable(self, case: Case, hit: Hit | None, detail_fid: str) -> bool:
        """The detail sits in the branch of the top hit (a tree walk from the hit's root)."""
        detail = self.memory_of.get((case.cid, detail_fid))
        if hit is None or detail is None:
            return False
        return detail in {m.id for m in self.fab.walk(hit.ref.root_id, org=self.org(case))}

    def close(self) -> None:
        pass


def pgvector_backend(fab: Any, run_id: str) -> tuple[FlatBackend, Any]:
    """The flat pgvector baseline, its tables in fab's database over one connection (returned: close it after)."""
    import psycopg

    from .flat import FlatPgvector

    conn = psycopg.connect(fab.database_url, autocommit=True)
    dim = fab.embedder.dim

    def flat_table(name: str) -> FlatPgvector:
        return FlatPgvector(conn, name, dim=dim)

    return FlatBackend("pgvector", flat_table, fab.embedder, run_id=run_id), conn


class FlatBackend:
    """A flat vector store per case (pgvector or Chroma): top-k cosine, timestamps as metadata only."""

    def __init__(self, name: str, factory: Callable[[str], Any], embedder: Any, *, run_id: str, k: int = TOP_K):
        self.name, self.factory, self.embedder, self.k = name, factory, embedder, k
        self.run_id = run_id
        self.stats = BackendStats()
        self.stores: dict[str, Any] = {}
        self.texts: dict[str, dict[str, str]] = {}

    def store(self, case: Case) -> Any:
        if case.cid not in self.stores:
            self.stores[case.cid] = self.factory(re.sub(r"[^a-z0-9_]", "_", f"{self.run_id}_{case.cid}".lower()))
        return self.stores[case.cid]

    def ingest(self, phase: int, cases: Sequence[Case]) -> None:
        refs = [(c, c.facts[fid]) for c in cases for fid in c.phases.get(phase, [])]
        started = time.perf_counter()
        vectors = self.embedder.embed([f.text for _, f in refs]) if refs else None
        by_case: dict[str, list[int]] = {}
        for n, (c, f) in enumerate(refs):
            by_case.setdefault(c.cid, []).append(n)
            self.texts.setdefault(c.cid, {}).setdefault(f.text, f.fid)
        for c in cases:
            rows = by_case.get(c.cid, [])
            if rows and vectors is not None:  # (rows imply vectors)
                facts = [refs[n][1] for n in rows]
                self.store(c).add([f.fid for f in facts], [f.text for f in facts], vectors[rows],
                                  [{"fid": f.fid, "subject": f.subject, "relation": f.relation, "value": f.value,
                                    "valid_from": f.valid_from.isoformat(), "valid_from_ts": f.valid_from.timestamp(),
                                    "phase": phase} for f in facts])
            if c.retractions.get(phase):
                self.store(c).delete(c.retractions[phase])  # a flat store forgets by deleting
        self.stats.writes += len(refs)
        self.stats.ingest_s += time.perf_counter() - started
        self.stats.accept_s += time.perf_counter() - started

    def ask(self, case: Case, text: str, valid_at: datetime | None, known_phase: int | None) -> list[Hit]:
        started = time.perf_counter()  # the same path as fabric's search: embed the question, then look up
        vec = self.embedder.embed([text])[0]
        rows = self.store(case).query(vec, k=self.k)
        self.stats.latencies_ms.append((time.perf_counter() - started) * 1000)
        return [Hit(r.metadata.get("fid"), r.text, r.score, r) for r in rows]

    def critic(self, case: Case, q: Query, hit: Hit, hits: Sequence[Hit]) -> bool:
        """Seed 000's flat critic: the newest timestamped value of the same key among the hits."""
        meta = hit.ref.metadata
        at = (q.valid_at or utcnow()).timestamp()
        pool = [h.ref.metadata for h in hits
                if (h.ref.metadata.get("subject"), h.ref.metadata.get("relation")) == (meta.get("subject"),
                                                                                     meta.get("relation"))
                and float(h.ref.metadata.get("valid_from_ts", 0)) <= at
                and (q.known_phase is None or int(h.ref.metadata.get("phase", 0)) <= q.known_phase)]
        if not pool:
            return True
        newest = max(pool, key=lambda m: float(m.get("valid_from_ts", 0)))
        return _same(newest.get("value"), meta.get("value"))

    def live(self, case: Case, text: str) -> list[str | None]:
        vec = self.embedder.embed([text])[0]
        return [r.metadata.get("fid") for r in self.store(case).query(vec, k=1000)]

    def reachable(self, case: Case, hit: Hit | None, detail_fid: str) -> bool | None:
        return None  # a flat store has no structure to walk

    def close(self) -> None:
        for s in self.stores.values():
            try:
                s.drop()
            except Exception as exc:  # leave no half-run behind, but never hide the results
                log.warning("could not drop a flat store: %s", exc)
        self.stores.clear()


# ----------------------------------------------------------------------------------------- scoring


def _loop(backend: Any, case: Case, q: Query, first: list[Hit]) -> dict[str, Any]:
    """Seed 000's loop: researcher takes the top hit, critic checks it, retry (query again) up to 2, escalate."""
    hits = first
    for attempt in range(MAX_RETRIES + 1):
        if attempt:
            hits = backend.ask(case, q.text, q.valid_at, q.known_phase)
        if hits and backend.critic(case, q, hits[0], hits):
            return {"outcome": "approved", "retries": attempt, "fid": hits[0].fid}
    return {"outcome": "escalated", "retries": MAX_RETRIES, "fid": None}


def evaluate(backend: Any, case: Case, q: Query) -> dict[str, Any]:
    """Ask one question and score it against the timeline oracle."""
    facts = case.facts
    rec: dict[str, Any] = {"backend": backend.name, "kind": case.kind, "phrasing": case.phrasing, "case": case.cid,
                           "qid": q.qid, "asked": q.asked, "question": q.text}

    def fact_of(h: Hit | None) -> Fact | None:
        return facts.get(h.fid) if h is not None and h.fid is not None else None

    if q.check == "multi_hop":
        assert q.hop2_relation is not None and q.hop2_question is not None  # a multi_hop query has both
        exp1 = expected_value(case, q.subject, q.relation, q.valid_at, q.known_phase)
        hits1 = backend.ask(case, q.text, q.valid_at, q.known_phase)
        f1 = fact_of(hits1[0] if hits1 else None)
        got1 = f1.value if f1 and (f1.subject, f1.relation) == (q.subject, q.relation) else None
        exp2 = expected_value(case, exp1, q.hop2_relation, q.valid_at) if exp1 else None
        got2 = None
        f2 = None
        if got1 is not None:
            hits2 = backend.ask(case, q.hop2_question.format(s=got1), q.valid_at, q.known_phase)
            f2 = fact_of(hits2[0] if hits2 else None)
            got2 = f2.value if f2 and (f2.subject, f2.relation) == (got1, q.hop2_relation) else None
        hop2_then = expected_value(case, got1, q.hop2_relation, q.valid_at) if got1 else None
        rec.update(expected=[exp1, exp2], got=[got1, got2], correct=_same(got1, exp1) and _same(got2, exp2),
                   consistent=_same(got1, exp1) and _same(got2, hop2_then),
                   stale=False, top_fid=[f1.fid if f1 else None, f2.fid if f2 else None])
        return rec

    hits = backend.ask(case, q.text, q.valid_at, q.known_phase)
    top = hits[0] if hits else None
    f = fact_of(top)
    expected = expected_value(case, q.subject, q.relation, q.valid_at, q.known_phase)
    same_key = f is not None and (f.subject, f.relation) == (q.subject, q.relation)
    rec.update(expected=expected, got=f.value if f else (top.text if top else None),
               top_fid=f.fid if f else None, top_text=top.text if top else None)
    if q.check == "refinement":
        # Both live (the detail neither superseded its fact nor was refused as a repeat), and the
        # detail reachable: among the hits, or (a tree) in the branch of the top hit.
        live = backend.live(case, q.text)
        both = q.base_fid in live and q.detail_fid in live
        in_hits = q.detail_fid in [h.fid for h in hits]
        walked = backend.reachable(case, top, q.detail_fid)
        rec.update(correct=both and (in_hits or bool(walked)), both_live=both, detail_in_hits=in_hits,
                   detail_top1=f is not None and f.fid == q.detail_fid, walk_reachable=walked, stale=False)
        return rec
    correct = f is not None and same_key and _same(f.value, expected)
    versions = {normalise(x.value) for x in facts.values() if (x.subject, x.relation) == (q.subject, q.relation)}
    stale = bool(f is not None and same_key and not correct and normalise(f.value) in versions)
    rec.update(correct=correct, stale=stale and q.asked == "now", wrong_epoch=stale and q.asked != "now")
    if q.check == "duplicate":
        copies = [x for x in backend.live(case, q.text) if x is not None and facts[x].subject == q.subject
                  and facts[x].relation == q.relation and _same(facts[x].value, expected)]
        rec.update(live_copies=len(copies), top1_correct=correct, correct=correct and len(copies) == 1)
        return rec
    loop = _loop(backend, case, q, hits)
    approved_fact = facts.get(loop["fid"]) if loop["fid"] else None
    loop["correct"] = bool(approved_fact and (approved_fact.subject, approved_fact.relation) == (q.subject, q.relation)
                           and _same(approved_fact.value, expected))
    loop["false_approve"] = loop["outcome"] == "approved" and not loop["correct"]
    rec["loop"] = loop
    return rec


def _pct(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


def summarise(records: Sequence[dict[str, Any]], backends: Sequence[Any]) -> dict[str, Any]:
    """Per kind x phrasing x backend, per backend, per behaviour; and fabric's bar."""
    by: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in records:
        by.setdefault((r["backend"], r["kind"], r["phrasing"]), []).append(r)
    rows = []
    for b in backends:
        for kind, phrasing in [(k, p) for p in PHRASINGS for k in KINDS]:
            rs = by.get((b.name, kind, phrasing), [])
            if not rs:
                continue
            now = [r for r in rs if r["asked"] == "now"]
            asof = [r for r in rs if r["asked"] != "now"]
            loops = [r["loop"] for r in rs if "loop" in r]
            rows.append({
                "backend": b.name, "kind": kind, "phrasing": phrasing, "queries": len(rs),
                "correct": sum(r["correct"] for r in rs),
                "accuracy": _pct(sum(r["correct"] for r in rs), len(rs)),
                "now_queries": len(now), "stale": sum(bool(r.get("stale")) for r in now),
                "stale_rate": _pct(sum(bool(r.get("stale")) for r in now), len(now)),
                "asof_queries": len(asof), "asof_accuracy": _pct(sum(r["correct"] for r in asof), len(asof)),
                "wrong_epoch": sum(bool(r.get("wrong_epoch")) for r in asof),
                "loops": len(loops), "escalations": sum(x["outcome"] == "escalated" for x in loops),
                "escalation_rate": _pct(sum(x["outcome"] == "escalated" for x in loops), len(loops)),
                "false_approvals": sum(bool(x.get("false_approve")) for x in loops),
                "retries": sum(x["retries"] for x in loops),
                "consistency": (_pct(sum(bool(r.get("consistent")) for r in rs), len(rs))
                                if kind == "multi_hop" else None),
            })
    per_backend = {}
    for b in backends:
        rs = [r for r in records if r["backend"] == b.name]
        now = [r for r in rs if r["asked"] == "now"]
        asof = [r for r in rs if r["asked"] != "now"]
        loops = [r["loop"] for r in rs if "loop" in r]
        stale_loops = [r["loop"] for r in rs if "loop" in r and r["kind"] == "staleness"]
        st, lat = b.stats, b.stats.latencies_ms
        per_backend[b.name] = {
            "queries": len(rs), "accuracy": _pct(sum(r["correct"] for r in rs), len(rs)),
            "stale_returned": sum(bool(r.get("stale")) for r in now),
            "stale_rate": _pct(sum(bool(r.get("stale")) for r in now), len(now)),
            "asof_accuracy": _pct(sum(r["correct"] for r in asof), len(asof)),
            "escalations": sum(x["outcome"] == "escalated" for x in loops),
            "escalation_rate": _pct(sum(x["outcome"] == "escalated" for x in loops), len(loops)),
            "escalation_rate_staleness": _pct(sum(x["outcome"] == "escalated" for x in stale_loops),
                                              len(stale_loops)),
            "false_approvals": sum(bool(x.get("false_approve")) for x in loops),
            "writes": st.writes,
            "validator_calls_per_write": (_pct(st.validator_calls, st.writes)
                                          if b.name.startswith("fabric") else None),
            "llm_calls_per_write": _pct(st.llm_calls, st.writes) if getattr(b, "llm", False) else None,
            "llm_ms_per_call": (sum(st.llm_ms) / len(st.llm_ms)) if st.llm_ms else None,
            "decisions": dict(sorted(st.decisions.items())), "validators": dict(sorted(st.validators.items())),
            "ingest_ms_per_write": _pct(st.ingest_s * 1000, st.writes),
            "accept_ms_per_write": _pct(st.accept_s * 1000, st.writes),
            "query_p50_ms": percentile(lat, 50) if lat else None,
            "query_p95_ms": percentile(lat, 95) if lat else None,
            "query_calls": len(st.latencies_ms),
        }
    behaviours = []
    for name, kinds, meaning in BEHAVIOURS:
        scores = {}
        for b in backends:
            rs = [r for r in records if r["backend"] == b.name and r["kind"] in kinds]
            scores[b.name] = _pct(sum(r["correct"] for r in rs), len(rs))
        behaviours.append({"behaviour": name, "kinds": list(kinds), "meaning": meaning, "accuracy": scores})
    bar = {}
    for b in backends:
        if not b.name.startswith("fabric"):
            continue
        failures = [f"{r['kind']} ({r['phrasing']}): {r['correct']}/{r['queries']} right" for r in rows
                    if r["backend"] == b.name and r["kind"] in MUST_KINDS and r["correct"] != r["queries"]]
        pb = per_backend[b.name]
        if pb["stale_returned"]:
            failures.append(f"{pb['stale_returned']} stale fact(s) returned as current")
        if pb["escalations"]:
            failures.append(f"{pb['escalations']} loop escalation(s)")
        bar[b.name] = {"ok": not failures, "failures": failures}
    return {"by_kind": rows, "by_backend": per_backend, "behaviours": behaviours, "bar": bar}


# --------------------------------------------------------------------------- conversational stream

# A chat about the same few people and things. Each turn states a distinct fact: single-valued
# topics are used at most once per person; multi-valued ones (places visited, languages, offices
# opened, books recommended) repeat with other values, which is what a collapsing validator gets
# wrong. Written the way people talk, not in the shape of any validator.
STREAM_PEOPLE = ("Maren Holt", "Teodor Vass", "Ines Carvalho", "Kwabena Osei", "Lotte Brandt", "Ravi Iyer")
STREAM_COMPANIES = ("Fernhill Labs", "Castor Shipping", "Quaymark Foods")
STREAM_PROJECTS = ("Atlas", "Bluebird", "Harrow")
STREAM_SINGLE: tuple[str, ...] = (
    "{p} is learning to play the {instrument}.",
    "{p}'s sister is called {name}.",
    "{p} is allergic to {food}.",
    "{p} prefers tea over coffee in the morning.",
    "{p}'s birthday dinner is booked at {restaurant}.",
    "{p} drives a {car}.",
    "{p} keeps a {pet} at home.",
    "The desk of {p} is by the window on the third floor.",
)
STREAM_MULTI: tuple[str, ...] = (
    "{p} has visited {city}.",
    "{p} speaks {language}.",
    "{p} recommended the book {book} to {q}.",
    "{p} is mentoring {q}.",
    "{p} asked {q} to review the {project} design document.",
    "{p} fixed a bug in the {project} {module} module.",
    "{p} and {q} are planning a hiking trip to {place}.",
    "{c} opened an office in {city}.",
    "{c} signed a supply contract with {c2}.",
    "{p} presented the {project} roadmap to {c}.",
    "{q} thanked {p} for the help with {project}.",
)
# Relations that read the same both ways: "A signed a contract with B" is "B signed one with A".
STREAM_SYMMETRIC = frozenset(("{c} signed a supply contract with {c2}.",
                              "{p} and {q} are planning a hiking trip to {place}."))
STREAM_FILL: dict[str, tuple[str, ...]] = {
    "instrument": ("cello", "banjo", "trumpet", "piano", "oboe", "harp"),
    "name": ("Hedda", "Mirela", "Signe", "Yasmin", "Odile", "Priya"),
    "food": ("walnuts", "shellfish", "sesame", "kiwi", "celery", "mustard"),
    "restaurant": ("Casa Lume", "the Blue Heron", "Osteria Nove", "Kin Khao", "the Copper Pot", "Maison Fleur"),
    "car": ("green Skoda Octavia", "white Fiat Panda", "grey Volvo V60", "red Mazda 3", "black Golf", "blue Kia Ceed"),
    "pet": ("tortoise", "parrot", "ginger cat", "border collie", "pair of rabbits", "corn snake"),
    "city": ("Lisbon", "Riga", "Porto", "Ghent", "Tallinn", "Bologna", "Seville", "Krakow", "Aarhus", "Split",
             "Lyon", "Graz"),
    "language": ("Portuguese", "Finnish", "Japanese", "Swahili", "Greek", "Polish", "Dutch", "Korean"),
    "book": ("The Glass Orchard", "Salt and Iron", "A Map of Rivers", "The Last Lighthouse", "Quiet Engines",
             "Northern Letters", "The Paper Garden"),
    "module": ("billing", "search", "export", "login", "reporting", "upload"),
    "place": ("the Tatra mountains", "the Dolomites", "the Picos de Europa", "Snowdonia", "the Julian Alps"),
}


def conversation_turns(seed: int, turns: int) -> list[str]:
    """`turns` distinct facts about the same cast, reproducible from `seed`."""
    rng = random.Random(f"conversation-{seed}")
    seen: set[str] = set()
    used_single: set[tuple[str, str]] = set()
    out: list[str] = []
    while len(out) < turns:
        single = rng.random() < 0.3 and len(used_single) < len(STREAM_SINGLE) * len(STREAM_PEOPLE)
        template = rng.choice(STREAM_SINGLE if single else STREAM_MULTI)
        p, q = rng.sample(STREAM_PEOPLE, 2)
        c, c2 = rng.sample(STREAM_COMPANIES, 2)
        if single and (template, p) in used_single:
            continue
        fill = {k: rng.choice(v) for k, v in STREAM_FILL.items()}
        project = rng.choice(STREAM_PROJECTS)
        text = template.format(p=p, q=q, c=c, c2=c2, project=project, **fill)
        if text in seen:
            continue
        seen.add(text)
        if template in STREAM_SYMMETRIC:  # the same fact with the two names swapped is no distinct turn
            seen.add(template.format(p=q, q=p, c=c2, c2=c, project=project, **fill))
        if single:
            used_single.add((template, p))
        out.append(text)
    return out


def measure_stream(fab: Any, texts: Sequence[str], *, org: str, run_id: str,
                   source: str = "bench-conversation", wait_timeout: float = WAIT_TIMEOUT) -> dict[str, Any]:
    """Write `texts` as text-only memories in `org` (a day apart) and count the collapsed turns: refused
    as a duplicate, or superseded by a later turn (each text is meant as a distinct fact). A turn the
    worker parks is counted apart, not collapsed. `collapsed_turns` holds every collapse with the turn's
    index in `texts`."""
    start = EPOCH + timedelta(days=3000)
    started = time.perf_counter()
    receipts = fab.write_many([dict(content=t, org=org, valid_from=start + timedelta(days=n),
                                    source=source, metadata={"bench_run": run_id})
                               for n, t in enumerate(texts)])
    placed: list[tuple[int, str, Any]] = []
    parked = []
    for n, (r, t) in enumerate(zip(receipts, texts)):
        try:
            placed.append((n, t, fab.wait(r, timeout=wait_timeout)))
        except PlacementParked as exc:
            parked.append({"index": n, "turn": t, "error": exc.error})
    seconds = time.perf_counter() - started
    live = {m.id for m in fab.belief_state(org=org)}
    text_of = {p.memory_id: t for _, t, p in placed if p.decision != "duplicate"}
    forked_by = {p.target_id: (t, p.reason) for _, t, p in placed if p.decision == "contradiction_fork"}
    decisions: dict[str, int] = {}
    collapsed = []
    for n, t, p in placed:
        decisions[p.decision] = decisions.get(p.decision, 0) + 1
        if p.decision == "duplicate":
            collapsed.append({"index": n, "turn": t, "how": "refused as a duplicate of",
                              "other": text_of.get(p.memory_id), "reason": p.reason})
        elif p.memory_id not in live:
            by, reason = forked_by.get(p.memory_id, (None, None))
            collapsed.append({"index": n, "turn": t, "how": "superseded by", "other": by, "reason": reason})
    calls = sum(p.validator not in (None, "pregate") for _, _, p in placed)
    llm_ms = [d.latency_ms for d in fab.decisions(org=org, action="place", limit=10000)
              if d.validator == "llm" and d.latency_ms is not None]
    # the model's answers its guards refused (kept as new branches): what the guards saved
    refused = [{"turn": t, "reason": p.reason} for _, t, p in placed
               if p.validator == "llm" and " not applied: " in (p.reason or "")]
    return {"turns": len(texts), "collapsed": len(collapsed), "collapsed_share": len(collapsed) / len(texts),
            "duplicates": decisions.get("duplicate", 0),
            "superseded": sum(c["how"] == "superseded by" for c in collapsed), "parked": len(parked),
            "decisions": dict(sorted(decisions.items())), "validator_calls_per_write": calls / len(texts),
            "llm_calls_per_write": sum(p.validator == "llm" for _, _, p in placed) / len(texts),
            "llm_ms_per_call": sum(llm_ms) / len(llm_ms) if llm_ms else None,
            "validators": sorted({p.validator or "?" for _, _, p in placed}), "seconds": round(seconds, 2),
            "collapsed_turns": collapsed, "parked_turns": parked, "llm_refused": refused}


def conversation(fab: Any, *, run_id: str, seed: int = 0, turns: int = TURNS_FULL,
                 tag: str = "conversation", wait_timeout: float = WAIT_TIMEOUT) -> dict[str, Any]:
    """The generated stream (`conversation_turns`) through `measure_stream`, in an org of its own."""
    out = measure_stream(fab, conversation_turns(seed, turns), org=f"bench-{run_id}-{tag}", run_id=run_id,
                         wait_timeout=wait_timeout)
    collapsed = out.pop("collapsed_turns")
    out.pop("parked_turns")
    out["examples"] = [{k: v for k, v in c.items() if k != "index"} for c in collapsed]
    return out


# -------------------------------------------------------------------------------------------- run


def parse_backends(spec: str | Sequence[str] | None) -> list[str]:
    if spec is None:
        return list(ALL_BACKENDS)
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    aliases = {"fabric": ["fabric-keys", "fabric-text"], "flat": ["pgvector", "chroma"], "all": list(ALL_BACKENDS),
               "llm": list(LLM_BACKENDS)}
    known = ALL_BACKENDS + LLM_BACKENDS
    out: list[str] = []
    for n in names:
        for m in aliases.get(n, [n]):
            if m not in known:
                raise ValidationError("backends", f"unknown backend {m!r}; choose from {', '.join(known)}"
                                      " (or fabric, flat, llm, all)")
            if m not in out:
                out.append(m)
    if not out:
        raise ValidationError("backends", "empty")
    return out


def parse_phrasing(spec: str) -> tuple[str, ...]:
    if spec == "both":
        return PHRASINGS
    if spec not in PHRASINGS:
        raise ValidationError("phrasing", f"{spec!r}: choose same, rephrased or both")
    return (spec,)


@dataclass(frozen=True, slots=True)
class LLMEndpoint:
    """An OpenAI-compatible chat endpoint for the LLM backends (e.g. `scripts/local_llm.py serve`)."""

    base_url: str
    model: str
    api_key: str = "local"  # a local server takes any non-empty key


def llm_endpoint(base_url: str | None, model: str | None, api_key: str | None = None) -> LLMEndpoint:
    """The endpoint from options or settings; a clear error naming what is missing."""
    if not base_url:
        raise ValidationError("llm-url", "the LLM backends need an endpoint: pass --llm-url (or set "
                                         "OPENAI_BASE_URL), e.g. from scripts/local_llm.py serve")
    if not model:
        raise ValidationError("llm-model", "the LLM backends need a model name: pass --llm-model (or set "
                                           "FABRIC_LLM_MODEL)")
    return LLMEndpoint(base_url, model, api_key or "local")


def llm_fabric(fab: Any, endpoint: LLMEndpoint, run_id: str) -> Any:
    """A second Fabric on fab's database and Redis whose writes go to a queue of their own, placed by
    a worker of its own that uses the LLM validator (rules first). fab's worker keeps the rules, so
    both columns come from one run. Close it after (that stops its worker)."""
    from ..api import Fabric

    # A job places up to FABRIC_EMBED_BATCH_SIZE writes one model call at a time: with a local model
    # at a minute per call, the default 300 s job timeout cut jobs short (measured 2026-12-01).
    llm = Fabric.connect(fab.database_url, fab.redis_url, auto_migrate=False, run_worker=True,
                         job_timeout=max(fab.settings.job_timeout, int(LLM_WAIT_TIMEOUT)),
                         data_dir=fab.settings.data_dir, queue_name=f"{fab.settings.queue_name}-llm-{run_id}",
                         validator="llm", openai_base_url=endpoint.base_url, openai_api_key=endpoint.api_key,
                         llm_model=endpoint.model)
    llm._embedder = fab.embedder  # the bench process needs the model loaded once, not twice
    return llm


def run(fab: Any, *, quick: bool = False, seed: int = 0, backends: str | Sequence[str] | None = None,
        out: str | Path | None = "bench-results", per_kind: int | None = None,
        phrasings: Sequence[str] = PHRASINGS, turns: int | None = None,
        progress: Callable[[str], None] | None = None, llm: LLMEndpoint | None = None,
        stream_only: bool = False) -> dict[str, Any]:
    """Run the benchmark on an open Fabric (with a placement worker) and return every result.
    The LLM backends need `llm` (their worker is started here). `stream_only`: no cases, only the
    conversational stream of the text backends (minutes instead of an hour with a local model).

    Writes `temporal.json`, `temporal.png` and `temporal.md` into `out` (None: write nothing)."""
    say = progress or (lambda msg: log.info(msg))
    names = parse_backends(backends)
    if llm is None and any(n in LLM_BACKENDS for n in names):
        raise ValidationError("llm-url", f"{', '.join(n for n in names if n in LLM_BACKENDS)} need(s) an LLM "
                                         "endpoint: pass --llm-url and --llm-model (or set OPENAI_BASE_URL "
                                         "and FABRIC_LLM_MODEL)")
    per_kind = per_kind or (CASES_QUICK if quick else CASES_FULL)
    run_id = f"{utcnow():%y%m%d%H%M%S}{secrets.token_hex(2)}"
    started_at, t0 = utcnow(), time.perf_counter()
    cases = [] if stream_only else generate(seed, per_kind, distractors=DISTRACTORS_QUICK if quick else
                                            DISTRACTORS_FULL, phrasings=phrasings)
    turns = turns if turns is not None else (TURNS_QUICK if quick else TURNS_FULL)
    if stream_only and not turns:
        raise ValidationError("turns", "--stream-only runs only the conversational stream: --turns must be above 0")
    if stream_only and not {"fabric-text", "fabric-text-llm"} & set(names):
        raise ValidationError("backends", "--stream-only needs fabric-text or fabric-text-llm (the stream is "
                                          "written text-only)")
    say(f"run {run_id}: {len(cases)} cases ({per_kind} per kind, seed {seed}), "
        f"{sum(len(c.queries) for c in cases)} questions, backends {', '.join(names)}")

    notes: dict[str, str] = {}
    active: list[Any] = []
    shared_conn = None
    fab_llm = llm_fabric(fab, llm, run_id) if llm is not None and any(n in LLM_BACKENDS for n in names) else None
    if fab_llm is not None and llm is not None:
        notes["llm"] = f"the LLM backends' validator: {llm.model} at {llm.base_url} (rules first)"
    for name in names:
        if name in ("fabric-keys", "fabric-text"):
            active.append(FabricBackend(fab, keyed=name == "fabric-keys", run_id=run_id))
        elif name in LLM_BACKENDS:
            active.append(FabricBackend(fab_llm, keyed=name == "fabric-keys-llm", run_id=run_id, llm=True))
        elif name == "pgvector":
            backend, shared_conn = pgvector_backend(fab, run_id)
            active.append(backend)
        elif name == "chroma":
            from .flat import ChromaFlat, chroma_available

            ok, note = chroma_available()
            if not ok:
                notes["chroma"] = f"skipped: {note}"
                say(f"chroma skipped: {note}")
                continue
            dim = fab.embedder.dim
            def chroma_table(n: str, d: int = dim) -> ChromaFlat:
                return ChromaFlat(n, dim=d)

            active.append(FlatBackend("chroma", chroma_table, fab.embedder, run_id=run_id))

    records: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    try:
        fab.embedder.embed(["warm up"])  # load the model before any timing
        # and let each worker load its own
        for f in {id(b.fab): b.fab for b in active if isinstance(b, FabricBackend)}.values():
            f.wait(f.write("Warm-up note for the benchmark.", org=f"bench-{run_id}-warmup"), timeout=WAIT_TIMEOUT)
        for b in active if cases else ():
            bt = time.perf_counter()
            for phase in range(1, LAST_PHASE + 1):
                b.ingest(phase, cases)
            ingest_done = time.perf_counter()
            if isinstance(b, FabricBackend) and b.llm:
                b.read_llm_latency(cases)
            for c in cases:
                for q in c.queries:
                    records.append(evaluate(b, c, q))
            timings[b.name] = time.perf_counter() - bt
            rs = [r for r in records if r["backend"] == b.name]
            say(f"{b.name}: {b.stats.writes} writes ingested in {ingest_done - bt:.1f}s, "
                f"{sum(r['correct'] for r in rs)}/{len(rs)} right ({time.perf_counter() - bt:.1f}s)")
        stream = stream_llm = None
        if turns and "fabric-text" in names:
            stream = conversation(fab, run_id=run_id, seed=seed, turns=turns)
            say(f"conversational stream: {stream['collapsed']}/{stream['turns']} distinct facts collapsed "
                f"({stream['seconds']:.1f}s)")
        if turns and fab_llm is not None and "fabric-text-llm" in names:
            # a local model on a loaded machine takes minutes per call: the writes queued behind them wait
            stream_llm = conversation(fab_llm, run_id=run_id, seed=seed, turns=turns, tag="conversation-llm",
                                      wait_timeout=LLM_WAIT_TIMEOUT)
            say(f"conversational stream (LLM): {stream_llm['collapsed']}/{stream_llm['turns']} distinct facts "
                f"collapsed ({stream_llm['seconds']:.1f}s)")
    finally:
        for b in active:
            b.close()
        if shared_conn is not None:
            shared_conn.close()
        if fab_llm is not None:
            fab_llm.close()

    summary = summarise(records, active)
    results = {
        "benchmark": "temporal", "format": 1, "run_id": run_id, "seed": seed, "quick": quick,
        "cases_per_kind": per_kind, "distractors_per_relation": DISTRACTORS_QUICK if quick else DISTRACTORS_FULL,
        "kinds": list(KINDS), "must_kinds": list(MUST_KINDS), "phrasings": list(phrasings), "top_k": TOP_K,
        "max_retries": MAX_RETRIES, "backends": [b.name for b in active], "notes": notes,
        "embedder": getattr(fab.embedder, "name", "?"), "started_at": started_at.isoformat(),
        "stream_only": stream_only,
        "elapsed_s": round(time.perf_counter() - t0, 2),
        "backend_seconds": {k: round(v, 2) for k, v in timings.items()},
        **summary,
        "conversation": stream,
        "conversation_llm": stream_llm,
        "placements": {b.name: b.stats.placements for b in active if b.name.startswith("fabric")},
        "queries": records,
        "cases": [c.to_dict() for c in cases],
    }
    if out is not None:
        from .report import write_outputs

        results["files"] = write_outputs(results, Path(out))
    return results
