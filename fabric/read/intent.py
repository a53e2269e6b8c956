"""What a question asks about: the attribute ("Where does Rose Baker work?" asks for `employer`).

Search ranks a memory whose stored `relation` is that attribute (and whose `subject` the question
names) ahead of other memories of the same subject (fabric/sql/search.sql, `attribute`). Without
this, a question is matched by its words and embedding only, and MiniLM pulls "where" toward places:
"Rose Baker lives in Bristol." outranks "KPMG hired Rose Baker as a senior auditor.".

The question is read the way placement reads a statement (fabric/placement/facts.py): its names are
masked and the masked text is matched against the same lexicon of relation synonym groups ("works
at" / "employs" / "employer" -> employer; "chief executive" / "runs" -> ceo; "favourite film" ->
favourite_film; "the mayor of X" -> mayor). A few wordings only questions use are added here
("Where does X work?", "How old is X?"). For attributes outside the lexicon the SQL also matches the
question's content words against the words of each stored relation name ("favourite restaurant" ~
`favourite_restaurant`), so no relation name needs to be known in advance."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from ..placement import facts

# Wordings of a question that no statement uses, each with the attributes it asks about.
# § is a masked name; a lower-case question has no masked names, so § also stands for a few words.
_ANYONE = r"(?:§(?:'s)?|[a-z][\w'’-]*(?: [a-z][\w'’-]*){0,3}?)"
_QUESTION_FRAMES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern.replace("§", _ANYONE)), relations) for pattern, relations in (
        (r"\bwhere (?:does|did|do|is) § (?:work|working)\b|\bwho (?:does|did|do) § work\b|\bemployed\b"
         r"|\bwhich (?:company|firm|employer)\b|(?:'s|\bher|\bhis|\btheir) (?:current )?(?:company|firm)\b",
         ("employer",)),
        (r"\bwhere (?:does|do|did|is|was) § (?:live|living|stay|staying|reside)\b", ("home_city",)),
        (r"\banswers? to\b", ("manager",)),
        (r"\bwho (?:is|'s) in charge of\b|\bwho is at the top of\b", ("ceo", "lead")),
        (r"\bhow old\b", ("age",)),
        (r"\bhow much (?:does|do|did) § (?:earn|make|get paid)\b", ("salary",)),
        (r"\bhow many (?:people|employees|staff|workers)\b", ("headcount",)),
        (r"\bborn\b", ("birthplace",)),
        (r"\bbased\b", ("headquarters", "home_city")),
        (r"\bwhat (?:car|vehicle)\b|\bdrive\b", ("car",)),
        (r"\bstud(?:y|ied)\b|\b(?:school|university|college)\b", ("school",)),
        (r"\bwho (?:is|'s) § married\b", ("spouse",)),
    ))
# A question that asks for a number ("How many seats ...?") or a date ("When ...?"); otherwise numeric
# and dated attributes give way to the others the wording fits.
_ASKS_NUMBER = re.compile(r"\bhow (?:many|much|old|big|large|tall)\b|\b(?:number|amount|size) of\b")
_ASKS_DATE = re.compile(r"\bwhen\b|\bdate\b|\bwhat day\b")


@dataclass(frozen=True, slots=True)
class Question:
    """relations: attribute names of the lexicon the question asks about (may be empty).
    words: the question's words other than its names, for matching stored relation names.
    all_words: every word of the question in lower case, for matching stored subjects ("user" when it
    speaks in the first person)."""

    relations: tuple[str, ...]
    words: str
    all_words: tuple[str, ...]   # every word, lower case ("Okafor's" -> "okafor"): a subject it names


_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})


@lru_cache(maxsize=4096)
def read_question(text: str) -> Question:
    """The attributes `text` asks about, read with placement's lexicon over the masked question."""
    from .search import _OPENERS  # words that open a question or a request, not names ("How", "Tell")

    text = unicodedata.normalize("NFKC", text).strip()
    first = re.match(r"[^\W\d_]+", text)
    if first and first.group().casefold() in _OPENERS:
        text = first.group().lower() + text[first.end():]
    spans = facts.names(text)
    masked, _ = facts._mask(text, spans)
    found, _, _ = facts._relations(masked)
    asks_number, asks_date = bool(_ASKS_NUMBER.search(masked)), bool(_ASKS_DATE.search(masked))
    # "Who employs X?" fits employer and headcount: a question that asks for no number wants the name.
    fitting = [r for r in found if (r.numeric is None or r.numeric == asks_number) and (asks_date or not r.dated)]
    relations = [r.name for r in (fitting if fitting or asks_number else found)]
    for pattern, names in _QUESTION_FRAMES:
        if pattern.search(masked):
            relations += names
    words = " ".join(w for w in re.findall(r"[a-z][a-z-]+", masked))
    tokens = re.findall(r"[^\W_]+", text.casefold())
    all_words = tuple(dict.fromkeys(w for w in tokens if len(w) > 1 and w not in facts._STOP and w not in _OPENERS))
    if _FIRST_PERSON & set(tokens):  # "Where do I work?" names the user: placement keys the first person "User"
        all_words += ("user",)
    return Question(tuple(dict.fromkeys(relations)), words, all_words)
