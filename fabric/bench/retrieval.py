"""`fabric bench retrieval`: vector vs lexical vs hybrid retrieval, quality and latency.

Quality. A seeded generator writes facts about people whose names are near-twins (shared first
names, shared surnames, surnames one letter apart: Lindqvist / Lindquist), ten relations, each with
four phrasings of the fact and three of the question, so a question rarely shares its wording with
the fact it asks about and always shares it with facts about other people. Each question is
labelled with the one memory that answers it. The facts are loaded with embeddings of their real
text (the configured embedder); the questions are embedded the same way and asked through
`Fabric.search` in each mode. Reported: top-1, recall@5, and how often a fact about a different
person outranks the labelled one ("twin ahead"), with the vector-only baseline in the same run.

Latency. Corpora of 10k and 100k memories are bulk-loaded straight into fabric's tables (COPY, the
indexes rebuilt after the load with the migration's own definitions) -- placing 100k writes through
the worker would take far longer than the search it measures. Their text comes from the same
generator; their embeddings are real embeddings of a few hundred generated facts, perturbed with
Gaussian noise (cosine ~0.9 to their base), because embedding 100k texts on this machine takes
minutes. Each question is asked in each mode, interleaved, on one pooled connection: p50 / p95 of
the database round trip (the query embedding, shared by both, is timed apart). EXPLAIN ANALYZE of
one hybrid query shows the HNSW and GIN index scans.

Everything runs in a scratch database created on the configured server and dropped afterwards."""

from __future__ import annotations

import logging
import random
import statistics
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
import psycopg

from .measure import percentile

if TYPE_CHECKING:
    from ..db import Conn

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------- data

FIRST_NAMES = ["Corin", "Maren", "Ilse", "Tobias", "Anya", "Soren", "Leila", "Dario", "Nadia", "Emil",
               "Priya", "Jonas"]
# Surnames in near-twin groups: spelled one or two letters apart.
SURNAMES = ["Lindqvist", "Lindquist", "Lindström", "Galloway", "Calloway", "Galway", "Okafor", "Okoro",
            "Abara", "Abera", "Moreau", "Moreno", "Petrov", "Petrova", "Haddad", "Hadid", "Fischer",
            "Fisher", "Nakamura", "Nakagawa", "Varga", "Vargas", "Brandt", "Brand"]


@dataclass(frozen=True)
class Relation:
    name: str
    values: tuple[str, ...]
    facts: tuple[str, ...]      # phrasings of the fact: {s} subject, {v} value
    questions: tuple[str, ...]  # phrasings of the question: {s} subject


RELATIONS: tuple[Relation, ...] = (
    Relation("programming_language",
             ("Julia", "Scala", "Rust", "Go", "Haskell", "Kotlin", "Elixir", "OCaml", "Ruby", "Swift", "Clojure"),
             ("{s} prefers {v} for programming.", "The preferred programming language of {s} is {v}.",
              "{s} reaches for {v} when writing code.", "When {s} writes software, it is usually in {v}."),
             ("Which programming language does {s} prefer?", "What language does {s} like to code in?",
              "What does {s} write code in?")),
    Relation("city",
             ("Oslo", "Lisbon", "Tallinn", "Porto", "Ghent", "Lyon", "Krakow", "Bergen", "Turin", "Leeds", "Graz"),
             ("{s} lives in {v}.", "{s} has made a home in {v}.", "The city {s} calls home is {v}.",
              "{s} rents a flat in {v}."),
             ("Where does {s} live?", "Which city is {s} based in?", "What town is home for {s}?")),
    Relation("employer",
             ("Northwind", "Initech", "Globex", "Hooli", "Vandelay", "Tyrell Systems", "Acme Robotics",
              "Wayne Analytics", "Stark Freight", "Umbrella Labs"),
             ("{s} works at {v}.", "{s} is employed by {v}.", "The employer of {s} is {v}.",
              "{s} joined {v} and still works there."),
             ("Who does {s} work for?", "Which company employs {s}?", "Where does {s} have a job?")),
    Relation("instrument",
             ("cello", "violin", "piano", "trumpet", "oboe", "banjo", "harp", "drums", "clarinet", "accordion"),
             ("{s} plays the {v}.", "{s} practises the {v} every evening.", "The instrument {s} plays is the {v}.",
              "{s} has played the {v} since childhood."),
             ("What instrument does {s} play?", "Which musical instrument does {s} practise?",
              "What does {s} play in the evenings?")),
    Relation("pet",
             ("beagle", "tabby cat", "parrot", "tortoise", "husky", "ferret", "goldfish", "greyhound", "iguana",
              "rabbit"),
             ("{s} owns a {v}.", "{s} has a pet {v}.", "{s} shares a flat with a {v}.",
              "The family pet of {s} is a {v}."),
             ("What pet does {s} have?", "What animal lives with {s}?", "Which pet belongs to {s}?")),
    Relation("sport",
             ("climbing", "rowing", "fencing", "squash", "cycling", "judo", "surfing", "curling", "badminton",
              "handball"),
             ("{s} is keen on {v}.", "The favourite sport of {s} is {v}.", "{s} trains for {v} three times a week.",
              "{s} competes in {v} at club level."),
             ("What sport does {s} do?", "Which sport is {s} into?", "How does {s} keep fit?")),
    Relation("allergy",
             ("peanuts", "shellfish", "penicillin", "pollen", "gluten", "latex", "bee stings", "dairy", "sesame"),
             ("{s} is allergic to {v}.", "{s} has an allergy to {v}.", "{s} must avoid {v} because of an allergy.",
              "Exposure to {v} gives {s} an allergic reaction."),
             ("What is {s} allergic to?", "What allergy does {s} have?", "What must {s} avoid for health reasons?")),
    Relation("drink",
             ("espresso", "green tea", "oat latte", "kombucha", "rooibos", "matcha", "cold brew", "chai"),
             ("{s} drinks {v} every morning.", "The favourite drink of {s} is {v}.", "{s} always orders {v}.",
              "A cup of {v} is how {s} starts the day."),
             ("What does {s} like to drink?", "What is the usual drink of {s}?", "What does {s} order at the cafe?")),
    Relation("birth_month",
             ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December"),
             ("{s} was born in {v}.", "The birthday of {s} is in {v}.", "{s} celebrates a birthday every {v}.",
              "{s} turns a year older each {v}."),
             ("When is the birthday of {s}?", "In which month was {s} born?", "When does {s} celebrate a birthday?")),
    Relation("car",
             ("Volvo", "Skoda", "Subaru", "Tesla", "Fiat", "Mazda", "Renault", "Saab"),
             ("{s} drives a {v}.", "The car {s} owns is a {v}.", "{s} commutes in a {v}.",
              "{s} bought a {v} last year."),
             ("What car does {s} drive?", "Which car brand does {s} own?", "What does {s} commute in?")),
)


@dataclass(frozen=True)
class Fact:
    id: uuid.UUID
    subject: str
    relation: str
    value: str
    text: str


@dataclass(frozen=True)
class Question:
    text: str
    answer: uuid.UUID      # the memory that answers it
    subject: str
    relation: str
    style: str             # "named" (names capitalised) or "lowercase"


@dataclass
class Corpus:
    facts: list[Fact]
    questions: list[Question]
    seed: int
    entities: list[str] = field(default_factory=list)


def generate(*, entities: int = 80, relations_per_entity: int = 6, questions: int = 240, lowercase: float = 0.2,
             seed: int = 7, first_names: Sequence[str] = FIRST_NAMES, surnames: Sequence[str] = SURNAMES) -> Corpus:
    """A reproducible corpus of near-twin facts and labelled questions (same seed, same corpus)."""
    rng = random.Random(seed)
    pairs = [(f, s) for f in first_names for s in surnames]
    if entities > len(pairs):
        raise ValueError(f"at most {len(pairs)} entities from these names")
    people = [f"{f} {s}" for f, s in rng.sample(pairs, entities)]
    facts: list[Fact] = []
    for person in people:
        for rel in rng.sample(RELATIONS, relations_per_entity):
            value = rng.choice(rel.values)
            text = rng.choice(rel.facts).format(s=person, v=value)
            facts.append(Fact(uuid.UUID(int=rng.getrandbits(128), version=4), person, rel.name, value, text))
    by_rel = {r.name: r for r in RELATIONS}
    asked = rng.sample(facts, min(questions, len(facts)))
    qs = []
    for fact in asked:
        text = rng.choice(by_rel[fact.relation].questions).format(s=fact.subject)
        style = "lowercase" if rng.random() < lowercase else "named"
        if style == "lowercase":
            text = text.lower()
        qs.append(Question(text, fact.id, fact.subject, fact.relation, style))
    return Corpus(facts, qs, seed, people)


# ---------------------------------------------------------------------------------------------- loading

_MEMORY_COPY = ("COPY fabric.memories (org, id, root_id, depth, content, subject, relation, value, placement, "
                "embedding, created_at) FROM STDIN WITH (FORMAT BINARY)")
_VERSION_COPY = ("COPY fabric.memory_versions (org, memory_id, version, valid_from, valid_to, state, decision_id, "
                 "recorded_at) FROM STDIN WITH (FORMAT BINARY)")
_BULK_INDEXES = ["ix_memories_embedding_hnsw", "ix_memories_search_text"]


@dataclass(frozen=True)
class Row:
    """A memory to bulk-load: one root, live, holding from `valid_from` until `valid_to`."""

    id: uuid.UUID
    content: str
    key: tuple[str, str, str] | None = None
    valid_to: datetime | None = None


def bulk_load(conn: Conn, org: str, rows: Sequence[Row], vectors: np.ndarray, *,
              recorded_at: datetime, valid_from: datetime) -> None:
    """COPY memories and their first versions straight into fabric's tables (one decision row for all)."""
    did = uuid.uuid4()
    conn.execute("INSERT INTO fabric.orgs (org) VALUES (%s) ON CONFLICT DO NOTHING", (org,))
    conn.execute("INSERT INTO fabric.decisions (org, id, action, kind, validator, reason, created_at) "
                 "VALUES (%s, %s, 'place', 'new_branch', 'bench', 'bulk load (fabric bench retrieval)', %s)",
                 (org, did, recorded_at))
    with conn.cursor() as cur:
        with cur.copy(_MEMORY_COPY) as copy:
            copy.set_types(["text", "uuid", "uuid", "int4", "text", "text", "text", "text", "text", "vector",
                            "timestamptz"])
            for row, vec in zip(rows, vectors):
                s, r, v = row.key if row.key else (None, None, None)
                copy.write_row((org, row.id, row.id, 0, row.content, s, r, v, "new_branch", vec, recorded_at))
        with cur.copy(_VERSION_COPY) as copy:
            copy.set_types(["text", "uuid", "int4", "timestamptz", "timestamptz", "text", "uuid", "timestamptz"])
            for row in rows:
                copy.write_row((org, row.id, 1, valid_from, row.valid_to, "live", did, recorded_at))


@contextmanager
def indexes_dropped(conn: Conn) -> Iterator[None]:
    """Drop the HNSW and GIN indexes for a bulk load; rebuild them after from their own definitions."""
    from psycopg import sql

    defs = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'fabric' "
                        "AND indexname = ANY(%s)", (_BULK_INDEXES,)).fetchall()
    defs = [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in defs]
    for name, _ in defs:
        conn.execute(sql.SQL("DROP INDEX fabric.{}").format(sql.Identifier(name)))
    yield
    conn.execute("SET maintenance_work_mem = '1GB'")
    for _, definition in defs:
        conn.execute(sql.SQL(definition))  # the catalogue's own DDL
    conn.execute("RESET maintenance_work_mem")
    conn.execute("ANALYZE fabric.memories")
    conn.execute("ANALYZE fabric.memory_versions")


@contextmanager
def scratch_database(url: str, *, keep: bool = False) -> Iterator[str]:
    """A new, migrated database on the server `url` points to; dropped afterwards unless `keep`."""
    from psycopg import conninfo, sql

    from ..db import migrate

    name = f"fabric_bench_{uuid.uuid4().hex[:10]}"
    admin = conninfo.make_conninfo(url, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    target = conninfo.make_conninfo(url, dbname=name)
    try:
        migrate(target)
        yield target
    finally:
        if keep:
            log.info("kept scratch database", extra={"action": "bench_keep", "database": name})
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


# ---------------------------------------------------------------------------------------------- quality

MODES = ("vector", "lexical", "hybrid")


@dataclass
class QualityRow:
    mode: str
    questions: int
    top1: float
    recall5: float
    twin_ahead: float     # share of questions where a fact about another person outranks the answer
    by_style: dict[str, dict[str, float]] = field(default_factory=dict)


def _score(results: list[list[Any]], corpus: Corpus, subjects: dict[uuid.UUID, str], mode: str) -> QualityRow:
    stats: dict[str, list[int]] = {}
    for q, ids in zip(corpus.questions, results):
        pos = ids.index(q.answer) if q.answer in ids else len(ids)
        hit1, hit5 = int(pos == 0), int(pos < 5)
        twin = int(any(subjects.get(i) != q.subject for i in ids[:pos]))
        for style in ("all", q.style):
            s = stats.setdefault(style, [0, 0, 0, 0])
            s[0] += 1
            s[1] += hit1
            s[2] += hit5
            s[3] += twin
    def ratios(s: list[int]) -> dict[str, float]:
        return {"questions": s[0], "top1": s[1] / s[0], "recall5": s[2] / s[0], "twin_ahead": s[3] / s[0]}
    total = ratios(stats.pop("all"))
    return QualityRow(mode, int(total["questions"]), total["top1"], total["recall5"], total["twin_ahead"],
                      {k: ratios(v) for k, v in sorted(stats.items())})


def run_quality(fab: Any, corpus: Corpus, *, org: str, keyed: bool = False) -> list[QualityRow]:
    """Load the corpus (real embeddings of its text) into `org`; ask every question in every mode."""
    now = datetime.now(timezone.utc)
    vectors = fab.embedder.embed([f.text for f in corpus.facts])
    facts = [Row(f.id, f.text, (f.subject, f.relation, f.value) if keyed else None) for f in corpus.facts]
    with fab.pool.connection() as conn:
        bulk_load(conn, org, facts, vectors, recorded_at=now - timedelta(days=1), valid_from=now - timedelta(days=30))
        conn.execute("ANALYZE fabric.memories")
        conn.execute("ANALYZE fabric.memory_versions")
    subjects = {f.id: f.subject for f in corpus.facts}
    out = []
    for mode in MODES:
        results = [[m.id for m in fab.search(q.text, org=org, k=5, mode=mode)] for q in corpus.questions]
        out.append(_score(results, corpus, subjects, mode))
    # The ablation: plain reciprocal rank fusion, without ordering by the names the query capitalises.
    from ..read.search import search

    qvecs = fab.embedder.embed([q.text for q in corpus.questions])
    results = []
    with fab.pool.connection() as conn:
        for q, vec in zip(corpus.questions, qvecs):
            rows = search(conn, org=org, text=q.text, vector=vec, mode="hybrid", k=5, valid_at=now, known_at=now,
                          ef_search=fab.settings.ef_search, names=False)
            conn.commit()
            results.append([r["id"] for r in rows])
    out.append(_score(results, corpus, subjects, "hybrid, RRF only"))
    return out


# ---------------------------------------------------------------------------------------------- latency

_MORE_FIRST = ["Ada", "Bruno", "Clara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jun", "Kasia", "Lars",
               "Mira", "Nils", "Olga", "Pavel", "Rosa", "Sami", "Tara", "Ugo", "Vera", "Wim", "Yara", "Zeno",
               "Alma", "Ben", "Cleo", "Dev", "Edda", "Finn", "Gale", "Hana", "Ivo", "Jana", "Kai", "Lena", "Milo",
               "Noor", "Otto", "Pia", "Rafe", "Sia"]
_PREFIXES = ["Lind", "Gall", "Ok", "Ab", "Mor", "Petr", "Hadd", "Fisch", "Nak", "Varg", "Brand", "Berg", "Holm",
             "Kov", "Sand", "Ost", "Rein", "Dahl", "Kall", "Marr"]
_SUFFIXES = ["qvist", "quist", "oway", "afor", "ara", "eau", "ov", "ova", "ad", "er", "amura", "agawa", "a", "t",
             "ström", "berg", "sen", "ino", "elli", "ski"]


def names_for(n_entities: int, rng: random.Random) -> list[str]:
    """Distinct full names in a seeded order: the first n of a larger draw are the names of a smaller one."""
    firsts = FIRST_NAMES + _MORE_FIRST
    lasts = sorted({p + s for p in _PREFIXES for s in _SUFFIXES})
    pairs = [(f, s) for f in firsts for s in lasts]
    if n_entities > len(pairs):
        raise ValueError(f"at most {len(pairs)} entities")
    rng.shuffle(pairs)
    return [f"{f} {s}" for f, s in pairs[:n_entities]]


@dataclass(frozen=True)
class SyntheticCorpus:
    rows: list[Row]
    vectors: np.ndarray
    facts: list[tuple[str, int]]   # (person, relation index) of each row

    def questions(self, upto: int, n: int, seed: int) -> list[str]:
        """n questions about facts among the first `upto` rows (another phrasing than the fact's)."""
        rng = random.Random(seed)
        picks = [self.facts[rng.randrange(min(upto, len(self.facts)))] for _ in range(n)]
        return [rng.choice(RELATIONS[r].questions).format(s=person) for person, r in picks]


def synthetic_corpus(size: int, *, seed: int, embedder: Any, bases: int = 400, cosine: float = 0.9,
                     expired_share: float = 0.1) -> SyntheticCorpus:
    """`size` facts with generated text; embeddings = real embeddings of `bases` generated facts of the same
    relation and phrasing, perturbed to cosine ~`cosine`. A share of them stopped holding a day ago
    (valid_to in the past), so the time filter has work to do. Prefix-stable: the first n rows of a
    larger corpus (same seed) are the rows of a corpus of size n."""
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    per_entity = 6
    people = names_for(-(-size // per_entity), rng)
    combos = [(r, t) for r in range(len(RELATIONS)) for t in range(len(RELATIONS[r].facts))]
    base_people = names_for(bases, random.Random(seed + 1))
    base_texts, base_combo = [], []
    for i, person in enumerate(base_people):
        r, t = combos[i % len(combos)]
        rel = RELATIONS[r]
        base_texts.append(rel.facts[t].format(s=person, v=rng.choice(rel.values)))
        base_combo.append((r, t))
    base_vecs = embedder.embed(base_texts)
    by_combo: dict[tuple[int, int], list[int]] = {}
    for i, c in enumerate(base_combo):
        by_combo.setdefault(c, []).append(i)
    now = datetime.now(timezone.utc)
    rows: list[Row] = []
    picks: list[int] = []
    facts: list[tuple[str, int]] = []
    for person in people:
        for r in rng.sample(range(len(RELATIONS)), per_entity):
            if len(rows) == size:
                break
            rel = RELATIONS[r]
            t = rng.randrange(len(rel.facts))
            mid = uuid.UUID(int=rng.getrandbits(128), version=4)
            expired = rng.random() < expired_share
            rows.append(Row(mid, rel.facts[t].format(s=person, v=rng.choice(rel.values)),
                            valid_to=now - timedelta(days=1) if expired else None))
            picks.append(rng.choice(by_combo[(r, t)]))
            facts.append((person, r))
    base = base_vecs[np.array(picks)]
    noise = nprng.normal(size=base.shape).astype(np.float32)
    noise -= (noise * base).sum(axis=1, keepdims=True) * base
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    vectors = cosine * base + np.sqrt(1 - cosine * cosine) * noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return SyntheticCorpus(rows, vectors.astype(np.float32), facts)


@dataclass
class LatencyRow:
    size: int
    mode: str
    queries: int
    p50_ms: float
    p95_ms: float
    mean_ms: float


def time_modes(conn: Conn, *, org: str, questions: Sequence[str], vectors: np.ndarray, k: int,
               ef_search: int, modes: Sequence[str] = MODES, warmup: int = 10) -> dict[str, list[float]]:
    """Ask every question in every mode, interleaved (the order rotates per question), on one connection.
    Times the database round trip of `fabric.read.search.search` in milliseconds."""
    from ..read.search import search

    now = datetime.now(timezone.utc)
    times: dict[str, list[float]] = {m: [] for m in modes}
    for i, (text, vec) in enumerate(zip(questions, vectors)):
        order = list(modes[i % len(modes):]) + list(modes[:i % len(modes)])
        for mode in order:
            t0 = time.perf_counter()
            search(conn, org=org, text=text, vector=vec, mode=mode, k=k, valid_at=now, known_at=now,
                   ef_search=ef_search)
            dt = (time.perf_counter() - t0) * 1000
            conn.commit()
            if i >= warmup:
                times[mode].append(dt)
    return times


def explain_hybrid(conn: Conn, *, org: str, text: str, vector: np.ndarray, k: int,
                   ef_search: int) -> list[str]:
    """EXPLAIN ANALYZE of one hybrid search, as `search` runs it (same settings, same parameters)."""
    from ..read.search import HYBRID_POOL, SEARCH_SQL, search_params, session_settings

    now = datetime.now(timezone.utc)
    params = search_params(org=org, text=text, vector=vector, mode="hybrid", k=k, valid_at=now, known_at=now,
                           pool=max(k, HYBRID_POOL))
    for stmt, args in session_settings(ef_search=max(ef_search, params["pool"])):
        conn.execute(stmt, args)
    plan = [r["QUERY PLAN"] if isinstance(r, dict) else r[0]
            for r in conn.execute("EXPLAIN (ANALYZE, COSTS OFF) " + SEARCH_SQL, params).fetchall()]
    conn.rollback()
    return plan


def index_lines(plan: Sequence[str]) -> list[str]:
    """The plan lines that use fabric's vector or text index (with their conditions), dedented."""
    out = []
    for i, line in enumerate(plan):
        if any(ix in line for ix in _BULK_INDEXES):
            out.append(line.rstrip())
            nxt = plan[i + 1] if i + 1 < len(plan) else ""
            if nxt.strip().startswith(("Index Cond", "Order By")):
                out.append(nxt.rstrip() if len(nxt) < 120 else nxt[:117].rstrip() + "...")
    indent = min((len(x) - len(x.lstrip()) for x in out), default=0)
    return [x[indent:] for x in out]


# ---------------------------------------------------------------------------------------------- the run

@dataclass
class Report:
    quality: list[QualityRow]
    latency: list[LatencyRow]
    explain: dict[int, list[str]]
    facts: int
    questions: int
    embed_ms_p50: float
    load_average: tuple[float, float, float]
    settings: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict
        return {"quality": [asdict(r) for r in self.quality], "latency": [asdict(r) for r in self.latency],
                "explain": {str(k): v for k, v in self.explain.items()}, "facts": self.facts,
                "questions": self.questions, "embed_ms_p50": self.embed_ms_p50,
                "load_average": list(self.load_average), "settings": self.settings}

    def both_indexes_used(self) -> bool:
        return all(any("ix_memories_embedding_hnsw" in line for line in lines)
                   and any("ix_memories_search_text" in line for line in lines) for lines in self.explain.values())

    def named_twin_ahead(self, mode: str = "hybrid") -> float:
        row = next(r for r in self.quality if r.mode == mode)
        return row.by_style.get("named", {}).get("twin_ahead", 0.0)


def run(*, database_url: str | None = None, quick: bool = False, seed: int = 7, sizes: Sequence[int] | None = None,
        questions: int | None = None, latency_queries: int | None = None, keep: bool = False,
        progress: Any = None) -> Report:
    """The whole benchmark in a scratch database on the server of `database_url` (default: DATABASE_URL,
    else the embedded PostgreSQL in FABRIC_DATA_DIR)."""
    import os

    from .. import servers
    from ..api import Fabric
    from ..config import Settings

    say = progress or (lambda msg: log.info(msg))
    settings = Settings.from_env()
    server = database_url or settings.database_url or servers.postgres_url(settings.data_dir)
    sizes = sorted(sizes or ([2000] if quick else [10_000, 100_000]))
    n_questions = questions or (100 if quick else 240)
    n_latency = latency_queries or (40 if quick else 200)
    entities = max(20, -(-n_questions // 3))
    with scratch_database(server, keep=keep) as url:
        fab = Fabric.connect(url, settings.redis_url, run_worker=False)
        try:
            corpus = generate(entities=entities, relations_per_entity=6, questions=n_questions, seed=seed)
            say(f"quality: {len(corpus.facts)} facts about {entities} near-twin people, {len(corpus.questions)} "
                f"questions")
            quality = run_quality(fab, corpus, org="bench-quality")
            say(f"latency: building a {sizes[-1]}-memory synthetic corpus")
            big = synthetic_corpus(sizes[-1], seed=seed + 4, embedder=fab.embedder)
            latency, plans = [], {}
            loaded = 0
            embed_times = []
            for size in sizes:
                say(f"latency: loading {size - loaded} memories (indexes rebuilt after), then timing")
                with fab.pool.connection() as conn:
                    with indexes_dropped(conn):
                        bulk_load(conn, "bench-latency", big.rows[loaded:size], big.vectors[loaded:size],
                                  recorded_at=datetime.now(timezone.utc) - timedelta(days=2),
                                  valid_from=datetime.now(timezone.utc) - timedelta(days=30))
                loaded = size
                texts = big.questions(size, n_latency + 10, seed + size)
                for t in texts[:20]:
                    t0 = time.perf_counter()
                    fab.embedder.embed([t])
                    embed_times.append((time.perf_counter() - t0) * 1000)
                vecs = fab.embedder.embed(texts)
                with fab.pool.connection() as conn:
                    times = time_modes(conn, org="bench-latency", questions=texts, vectors=vecs, k=10,
                                       ef_search=fab.settings.ef_search, warmup=10)
                    plan = explain_hybrid(conn, org="bench-latency", text=texts[0], vector=vecs[0], k=10,
                                          ef_search=fab.settings.ef_search)
                plans[size] = [line if len(line) <= 200 else line[:197] + "..." for line in plan]
                for mode in MODES:
                    ts = times[mode]
                    latency.append(LatencyRow(size, mode, len(ts), statistics.median(ts), percentile(ts, 95),
                                              statistics.fmean(ts)))
        finally:
            fab.close()
    from ..read.search import DF_CAP, HYBRID_POOL, RRF_K

    return Report(quality, latency, plans, len(corpus.facts), len(corpus.questions),
                  statistics.median(embed_times) if embed_times else 0.0, os.getloadavg(),
                  {"seed": seed, "sizes": list(sizes), "rrf_k": RRF_K, "pool": HYBRID_POOL, "df_cap": DF_CAP,
                   "ef_search": settings.ef_search, "quick": quick})
