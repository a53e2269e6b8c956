"""The local, deterministic validator: keys first, then the facts sentences state, then sentence
frames, then similarity.

It reads the structured key when the write has one (the same key and value restated with added
detail is a child update: `adds_detail`). Without keys, it reads the (subject, relation, value)
each sentence states (facts.py: names, a relation lexicon of synonym groups, grammatical roles) and
compares the write's with each neighbour's: the same subject and relation with the same value is a
duplicate (or a child update with more detail), with another value a contradiction; another
subject or attribute keeps that neighbour out of the rest. Where the lexicon does not read both
sentences, their names and values are aligned instead (align.py: relations no word list names,
compared by stemmed words and the real embedding model), and the alignment's structural guards
(a qualifier or noun swapped in one frame, a relative, another unit, "also") overrule a lexicon
contradiction. A decision on a text-only write carries the key its sentence states. Sentences
neither reads fall back to word sequences ("frames") of close neighbours:
- the same words                                  -> duplicate
- the old words, in order, plus more              -> child update (added detail), or a
  contradiction when what is added is a negation ("is open" -> "is not open")
- for keyed writes only, the same frame with one span swapped in a value position -> contradiction:
  the span ends the sentence or sits in its second half, or it follows the sentence's leading
  name and a word of the frame and holds a name or number on both sides
  ("Meridian Bio has Jonathan Hale as its CEO" -> "... has Priya Nair as its CEO"); for text the
  alignment reads values ("has a spa" -> "has a rooftop bar" is no correction)
- the same names and numbers, high similarity     -> duplicate (a paraphrase), unless one text
  negates and the other does not, or the two hold the same words in another order (a role
  swap: "A reports to B" / "B reports to A")
otherwise a new branch. A swapped span in the leading name is another subject, never a
correction. A duplicate of a memory valid from later than the write is that fact's history
(`in_time`)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from functools import lru_cache
from difflib import SequenceMatcher
from typing import Any, Sequence

from . import attributes, restate, samefact, swap
from .align import RELATIVES, Aligned, canonical, clauses, compare_aligned, read, relation_similarity, single_key
from .attributes import unread
from .keys import borrow_key, note_key, plain_key, same_attribute, title_key
from .states import state, title
from .facts import RELATIONS, Fact, _numeric, compare, extract, keyable, shared_relation, value_key
from .validator import Candidate, Decision, IncomingWrite, normalise, words

_TOKEN = re.compile(r"\w+", re.UNICODE)
_STOP_CAPS = {"the", "a", "an", "it", "this", "that", "these", "those", "there", "our", "their", "his", "her"}


_NEGATION = re.compile(r"\b(not|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n['’]t\b",
                       re.IGNORECASE)


def _is_name(i: int, tok: str, lowercase: set[str]) -> bool:
    """A digit, or a capitalised word that is not a sentence-initial article or common word."""
    if tok[0].isdigit():
        return True
    if not tok[0].isupper():
        return False
    # Sentence-initial capitals are grammar, not names, for an article or for a word written in
    # lowercase elsewhere ("Frozen goods are stored ..." beside "... stores frozen goods").
    return not (i == 0 and (tok.lower() in _STOP_CAPS or tok.casefold() in lowercase))


def _lowercase_words(*texts: str) -> set[str]:
    return {t for text in texts for t in _TOKEN.findall(text) if t[:1].islower()}


def entities(text: str, *, lowercase: set[str] | None = None) -> set[str]:
    """Names and numbers: capitalised words (a sentence-initial article excluded) and digits.

    `lowercase`: words seen in lowercase (in this or a compared text); a sentence-initial word
    among them is not a name."""
    low = _lowercase_words(text) | (lowercase or set())
    return {tok.casefold() for i, tok in enumerate(_TOKEN.findall(text)) if _is_name(i, tok, low)}


def leading_name(text: str) -> int:
    """How many words the sentence's leading name spans ("Meridian Bio has ..." -> 2); 0 when the
    sentence does not open with a name (e.g. "The chief executive of ...")."""
    toks = _TOKEN.findall(text)
    start = 1 if toks and toks[0].lower() in _STOP_CAPS else 0
    n = 0
    for tok in toks[start:]:
        if not (tok[0].isupper() or tok[0].isdigit()):
            break
        n += 1
    return start + n if n else 0


def negates(text: str) -> bool:
    return _NEGATION.search(text) is not None


def is_paraphrase(old_text: str, new_text: str, similarity: float, threshold: float) -> bool:
    """Close in meaning by the embedding, with the same names and numbers, neither negating alone,
    and not the same words merely reordered (that swaps roles: "A reports to B" / "B reports to A")."""
    if similarity < threshold or negates(old_text) != negates(new_text):
        return False
    old_words, new_words = words(old_text), words(new_text)
    if sorted(old_words) == sorted(new_words) and old_words != new_words:
        return False
    low = _lowercase_words(old_text, new_text)
    return entities(old_text, lowercase=low) == entities(new_text, lowercase=low)


def value_position(old_text: str, new_text: str, sub: tuple[int, int, int, int]) -> bool:
    """Is a single swapped span (from `single_substitution`) where a value sits, not the subject?"""
    i1, i2, j1, j2 = sub
    n = len(words(old_text))
    if i1 * 2 > n or i2 == n:  # the span ends the sentence or sits in its second half
        return True
    old_toks, new_toks = _TOKEN.findall(old_text), _TOKEN.findall(new_text)
    if len(old_toks) != n or len(new_toks) != len(words(new_text)):
        return False  # tokenisations disagree (unusual characters): stay cautious
    lead = leading_name(old_text)
    if lead == 0 or i1 <= lead or leading_name(new_text) != lead:
        return False  # no leading name, or the span touches it: maybe another subject

    def named(toks: list[str]) -> bool:
        return any(t[0].isupper() or t[0].isdigit() for t in toks)

    return named(old_toks[i1:i2]) and named(new_toks[j1:j2])


def is_extension(old: list[str], new: list[str]) -> bool:
    """True when the new words contain all the old words in order, and more."""
    if len(new) <= len(old):
        return False
    it = iter(new)
    return all(w in it for w in old)


def single_substitution(old: list[str], new: list[str]) -> tuple[int, int, int, int] | None:
    """If `new` is `old` with exactly one span replaced, return (old_start, old_end, new_start, new_end)."""
    ops = [op for op in SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    shared = len(old) - (i2 - i1)
    if shared * 2 < len(old) or (i2 - i1) > 5 or (j2 - j1) > 5:
        return None
    return i1, i2, j1, j2


@dataclass(frozen=True, slots=True)
class Statement:
    """What two sentences were found to say about one fact, however it was read."""

    subject: str
    relation: str
    old_value: str
    new_value: str
    how: str                      # "lexicon" or the alignment's reason
    keyable: bool                 # may the new version carry the key
    negated: bool = False
    fact: Fact | None = None      # the new sentence's fact, when the lexicon read it

    @classmethod
    def from_facts(cls, old: Fact, new: Fact) -> Statement:
        return cls(old.subject, shared_relation(old, new) or new.relation, old.value, new.value, "lexicon",
                   keyable(new), new.negated, new)

    @classmethod
    def from_alignment(cls, aligned: Aligned, c: Candidate) -> Statement:
        relation = c.relation if c.subject and normalise(c.subject) == normalise(aligned.subject) and c.relation \
            else aligned.relation
        # no shared name (a subject in lower-case words: "the billing service"): no key
        return cls(aligned.subject, relation, aligned.old_value, aligned.new_value, aligned.why, bool(aligned.subject))

    def key(self, near: Candidate) -> tuple[str, str]:
        if self.fact is not None:
            return canonical_key(self.fact, near, self.relation, spelled=self.subject)
        if near.subject and near.relation and normalise(near.subject) == normalise(self.subject):
            return near.subject, near.relation
        return self.subject, self.relation


class RuleValidator:
    name = "rule"
    model = None

    def __init__(self, *, near_similarity: float = 0.55, duplicate_similarity: float = 0.92,
                 second_opinion: bool = False):
        self.near_similarity = near_similarity
        self.duplicate_similarity = duplicate_similarity
        self.second_opinion = second_opinion  # learned.py looks again at what is left a new branch
        # The last text-only write's verdict on each neighbour (`_by_fact`), for `reconsider` to reuse: pure
        # readings of the two texts, so a stale entry can only be another write's, which the id tells apart.
        self._verdicts: tuple[uuid.UUID | None, dict[uuid.UUID, str]] = (None, {})

    def decide(self, write: IncomingWrite, candidates: Sequence[Candidate]) -> Decision:
        new_words = words(write.content)
        keyed = [c for c in candidates if c.key_match]
        if write.keyed and keyed and write.value is not None:
            decision = self._by_key(write, new_words, keyed)
            if decision:
                return in_time(write, decision, candidates)
        near = sorted((c for c in candidates if c.similarity >= self.near_similarity or c.key_match),
                      key=lambda c: -c.similarity)
        separate: set[uuid.UUID] = set()
        if not write.keyed:  # every neighbour: a restatement may be far from the old words in embedding space
            decision, separate = self._by_fact(write, sorted(candidates, key=lambda c: -c.similarity))
            if decision:
                return in_time(write, decision, candidates)
        for c in near:
            if c.id in separate:
                continue  # the same kind of sentence about another subject or attribute: not a version
            decision = self._by_frame(write, new_words, c)
            if decision:
                return with_text_keys(write, in_time(write, decision, candidates), candidates)
        best = near[0].similarity if near else 0.0
        return with_text_keys(write, Decision("new_branch", None, f"no frame match among {len(near)} near memories "
                                              f"(best similarity {best:.2f})", 0.6, self.name), candidates)

    def _by_fact(self, write: IncomingWrite, near: Sequence[Candidate]
                 ) -> tuple[Decision | None, set[uuid.UUID]]:
        """Compare the (subject, relation, value) read from the write with each neighbour's: by the lexicon
        where it reads both sentences, else by aligning their names and values (align.py). Returns a
        decision, if a neighbour states the same fact, and the neighbours that state another one."""
        found: list[tuple[str, Candidate, Statement]] = []
        separate: set[uuid.UUID] = set()
        verdicts: dict[uuid.UUID, str] = {}
        self._verdicts = (write.id, verdicts)
        for c in near:
            verdict, stated = self._compare(c, write)
            verdicts[c.id] = verdict
            if verdict == "separate":
                separate.add(c.id)
            elif verdict != "unknown" and stated is not None:
                found.append((verdict, c, stated))
        if not found:
            return None, separate
        rank = {"duplicate": 0, "child_update": 1, "contradiction_fork": 2}
        verdict, c, st = min(found, key=lambda f: (rank[f[0]], -f[1].valid_from.timestamp(), -f[1].similarity))
        subject, relation = st.key(c)
        what = f"({subject}, {relation})" if subject else f"({relation})"
        if verdict == "duplicate":
            return Decision("duplicate", c.id, f"the same fact {what} = {st.new_value!r}, reworded ({st.how})",
                            0.85, self.name), separate
        if verdict == "child_update":  # the parent holds the key: a detail valid from later must not take it over
            return Decision("child_update", c.id, f"the same fact {what} = {st.new_value!r}, with more detail "
                            f"({st.how})", 0.8, self.name), separate
        keys: dict[str, Any] = dict(subject=subject, relation=relation, value=st.new_value) if st.keyable else {}
        if st.negated:
            return Decision("contradiction_fork", c.id, f"the fact {what} = {st.old_value!r} is negated", 0.75,
                            self.name), separate
        return Decision("contradiction_fork", c.id, f"the same fact {what} restated with another value: "
                        f"{st.old_value!r} -> {st.new_value!r} ({st.how})", 0.85, self.name, **keys), separate

    def reconsider(self, write: IncomingWrite, decision: Decision, candidates: Sequence[Candidate]) -> Decision:
        """The learned second opinion (learned.py) on a text-only write placed as a new branch, by these rules or
        by the pre-gate's "nothing near": the neighbour it reads most surely as a version becomes the target. The
        decision keeps who made the first one (the pre-gate's stays the pre-gate's: no validator was called)."""
        if not self.second_opinion or write.keyed or decision.kind != "new_branch" or not candidates \
                or decision.reason.startswith("exact repeat"):
            return decision
        from .learned import second_opinion

        seen_for, seen = self._verdicts
        known = seen if seen_for == write.id else {}
        opinion = second_opinion(write.content, [(c, known.get(c.id) or self.verdict(write, c)) for c in candidates])
        if opinion is None:
            return decision
        found = Decision(opinion.kind, opinion.target.id, f"{decision.reason}; the learned second opinion reads a "
                         f"{opinion.kind} (p {opinion.probability:.2f})", 0.6, decision.validator)
        return with_text_keys(write, in_time(write, found, candidates), candidates)

    def verdict(self, write: IncomingWrite, c: Candidate) -> str:
        """How the write's statement stands to one neighbour's, as `_by_fact` reads it ("duplicate",
        "child_update", "contradiction_fork", "separate" or "unknown"). The LLM validator asks its model
        only where these readings do not settle the write."""
        return self._compare(c, write)[0]

    def _compare(self, c: Candidate, write: IncomingWrite) -> tuple[str, Statement | None]:
        """`_read`, with a value said more fully kept as a refinement: "drives a Skoda" -> "drives a grey 2019
        Skoda Octavia" is the same car, in more words, not another one (a title so lengthened is a promotion:
        "Product Manager" -> "Group Product Manager")."""
        verdict, stated = self._read(c, write)
        if verdict in ("duplicate", "unknown", "separate"):  # a value in ordinary words swapped: never a rewording
            swapped = swap.breakup(c.content, write.content) or swap.compare(c.content, write.content)
            if (swapped == swap.APART or swap.stopped(c.content, write.content)) and verdict != "separate":
                return "separate", None
            if isinstance(swapped, attributes.Same):
                return swapped.verdict, _generic(swapped, stated.relation if stated else "")
        if verdict == "duplicate" and (restate.one_word_swapped(c.content, write.content)
                                       or restate.unsaid(c.content, write.content)):
            return "unknown", None  # "sings alto" / "sings soprano", "used to run": never a repeat
        if verdict == "contradiction_fork" and stated is not None and not stated.negated \
                and stated.relation != "job_title" and fuller_value(stated.old_value, stated.new_value):
            return "child_update", replace(stated, how=f"{stated.how}; the old value said more fully")
        return verdict, stated

    def _read(self, c: Candidate, write: IncomingWrite) -> tuple[str, Statement | None]:
        """The lexicon's verdict where it reads both sentences; the alignment's where it does not, and the
        alignment's structural guards over the lexicon (a qualifier swapped, a relative, another unit)."""
        was, now = state(c.content), state(write.content)
        if was and now and was.attribute == now.attribute and was.value != now.value \
                and (was.lower_case or now.lower_case):  # "Jonas Pike moved to Bergen": the lexicon's
            qualified = was.qualifier and now.qualifier and was.qualifier != now.qualifier  # "in the morning"
            if (was.read and now.read and was.subject == now.subject and not qualified
                    and not (negates(c.content) and not was.chosen) and not (negates(write.content) and not now.chosen)
                    and not read(write.content, c.content).also):
                return "contradiction_fork", Statement(spelled(write.content, now.subject), now.attribute, was.value,
                                                       now.value, "a state in words", True)
            return "separate", None  # another holder ("her sister is vegan"), a noun ("vegan cakes"), "not"
        held, holds = title(canonical(c.content)), title(canonical(write.content))
        if held and holds and held.subject == holds.subject and (held.org == holds.org or not held.org
                                                                 or not holds.org):
            if held.title != holds.title:  # "head of data at Monzo" -> "Monzo made her its VP of Analytics"
                return "contradiction_fork", Statement(holds.written, "job_title", held.title, holds.title,
                                                       "a job title", True)
            if held.org == holds.org:
                return "duplicate", Statement(holds.written, "job_title", held.title, holds.title, "a job title",
                                              True)
        new, old = extract(write.content, c.content), extract(c.content, write.content)
        verdict = compare(old, new) if new is not None and old is not None else "unknown"
        if verdict == "separate":
            replaced = samefact.compare(c.content, write.content)  # "sold the Cupra and drives a Leaf"
            if replaced is not None and replaced.verdict == "contradiction_fork":
                return "contradiction_fork", _generic(replaced, "")
            if new is not None and restate.restatement(c.content, write.content) == "duplicate":
                return "duplicate", _restated("duplicate", new.subject, new.relation)  # "my car's a Jazz"
            return verdict, None
        aligned = compare_aligned(c.content, write.content, relation_similarity, c.similarity)
        if verdict != "unknown" and new is not None and old is not None:  # (the lexicon read both)
            if aligned.veto and (verdict == "contradiction_fork" or _POSSESSED_RELATIVE.search(c.content + " " +
                                                                                           write.content)) \
                    and not _relative_is_relation(c.content, write.content, old, new):
                return "separate", None  # (a duplicate too: "X's wife works at Y" repeats nothing of "X works at Y")
            if verdict == "contradiction_fork" and read(write.content, c.content).also:
                return "separate", None  # "X also joined the Search team": one more value, said outright
            if verdict == "duplicate" and adds_detail(c.content, write.content):
                verdict = "child_update"  # ", for its soundtrack": one detail word, in a clause of its own
            if verdict == "contradiction_fork" and restate.restatement(c.content, write.content) == "duplicate":
                verdict = "duplicate"  # the value read in other spans: "a 2019 Toyota Yaris" / "a Toyota Yaris (2019)"
            return verdict, Statement.from_facts(old, new)
        if verdict == "unknown":  # the same content in other words, or all of it and more (restate.py)
            restated = restate.restatement(c.content, write.content)
            if restated is not None:
                return ("duplicate" if restated == "duplicate" else "child_update"), _restated(
                    restated, aligned.subject, aligned.relation)
        if verdict == "unknown" and unread(aligned):  # no shared relation read, no reason seen to separate
            same = attributes.compare(c.content, write.content)
            if same is not None:
                kind = "child_update" if same.verdict == "duplicate" and adds_detail(c.content, write.content) \
                    else same.verdict
                return kind, Statement(same.subject, same.attribute, same.old_value, same.new_value, same.why,
                                               True)
        if verdict == "unknown" and aligned.verdict in ("unknown", "separate", "child_update"):
            generic = samefact.compare(c.content, write.content)  # no relation read: one subject, one value
            if generic is not None:
                kind = "child_update" if generic.verdict == "duplicate" and _more_detail(generic, c.content,
                                                                                         write.content) \
                    else generic.verdict
                return kind, _generic(generic, aligned.relation)
            if aligned.verdict != "child_update" and samefact.refines(c.content, write.content):
                return "child_update", Statement(aligned.subject, aligned.relation, "", "",
                                                 "all the old sentence says, and more", False)
        if aligned.verdict == "contradiction_fork" and samefact.same_value(aligned.old_value, aligned.new_value):
            aligned = replace(aligned, verdict="duplicate", why=f"{aligned.why}; the same value written otherwise")
        return aligned.verdict, Statement.from_alignment(aligned, c)

    def _by_key(self, write: IncomingWrite, new_words: list[str], keyed: Sequence[Candidate]) -> Decision | None:
        differing = [c for c in keyed if c.value is not None and value_key(c.value) != value_key(write.value or "")]
        if differing:
            target = max(differing, key=lambda c: (c.valid_from, c.similarity))
            return Decision("contradiction_fork", target.id,
                            f"same key ({write.subject}, {write.relation}) with a different value: "
                            f"{target.value!r} -> {write.value!r}", 0.95, self.name)
        for c in sorted(keyed, key=lambda c: -c.similarity):
            if is_extension(words(c.content), new_words) or adds_detail(c.content, write.content):
                return Decision("child_update", c.id, "same key and value; the text adds detail", 0.85, self.name)
        target = max(keyed, key=lambda c: c.similarity)
        return Decision("duplicate", target.id,
                        f"same key ({write.subject}, {write.relation}) and value {write.value!r}", 0.9, self.name)

    def _by_frame(self, write: IncomingWrite, new_words: list[str], c: Candidate) -> Decision | None:
        old_words = words(c.content)
        if old_words == new_words:
            return Decision("duplicate", c.id, "same words", 1.0, self.name)
        if c.subject and normalise(c.subject) not in normalise(write.content):
            return None  # a keyed neighbour about another subject is not this write's business
        if is_extension(old_words, new_words):
            if negates(write.content) and not negates(c.content):  # "... is open" -> "... is not open"
                return Decision("contradiction_fork", c.id, "the same statement, negated", 0.7, self.name)
            return Decision("child_update", c.id, "extends the existing memory with more detail", 0.8, self.name)
        sub = single_substitution(old_words, new_words) if write.keyed else None  # text: the alignment reads values
        other_key = (write.keyed and c.subject is not None
                     and (normalise(c.subject), c.relation) != (normalise(write.subject or ""), write.relation))
        if sub is not None and not other_key:  # a different structured key is another fact, not a correction
            i1, i2, j1, j2 = sub
            if value_position(c.content, write.content, sub):
                value = _span(write.content, j1, j2)
                return Decision(
                    "contradiction_fork", c.id,
                    f"same frame, value changed: {' '.join(old_words[i1:i2])!r} -> {' '.join(new_words[j1:j2])!r}",
                    0.8, self.name,
                    subject=c.subject if c.subject else None,
                    relation=c.relation if c.subject else None,
                    value=value if c.subject else None)
            # Otherwise the swapped span is the subject (another fact) or a rewording (maybe a paraphrase).
        if is_paraphrase(c.content, write.content, c.similarity, self.duplicate_similarity) \
                and not _other_figure(c.content, write.content) \
                and not restate.one_word_swapped(c.content, write.content) \
                and not restate.unsaid(c.content, write.content):
            return Decision("duplicate", c.id, f"paraphrase (similarity {c.similarity:.2f}, same names and numbers)",
                            0.7, self.name)
        return None


def _more_detail(same: attributes.Same, old_text: str, new_text: str) -> bool:
    """`adds_detail` with the value written one way on both sides: "+44 7700 900218" for "07700 900 218" is
    the same number, no detail."""
    return adds_detail(canonical(old_text).replace(same.old_value, "the value"),
                       canonical(new_text).replace(same.new_value, "the value"))


def fuller_value(old: str, new: str) -> bool:
    """Is the new value the old one with more words ("Skoda" -> "2019 Skoda Octavia", "Dr Hassan" -> "Dr Leila
    Hassan")? Names and words only: another figure is another value ("5" -> "5 500")."""
    was, now = _value_words(old), _value_words(new)
    return bool(was) and was < now and not any(w.isdigit() for w in was)


def _value_words(value: str) -> set[str]:
    return {w for w in normalise(value).split() if w not in _STOP_CAPS}


def _restated(kind: str, subject: str, relation: str) -> Statement:
    """A statement restate.py read: the same content (a duplicate) or all of it and more (a refinement); no key."""
    return Statement(subject, relation, "", "", f"the same content{'' if kind == 'duplicate' else ', and more'} "
                     "in other words", False)


def _generic(same: attributes.Same, relation: str) -> Statement:
    """A statement the generic path read: no relation named, so no key for the new version."""
    return Statement(same.subject, relation, same.old_value, same.new_value, same.why, False)


# "X's wife", "X's son": a relative who holds the fact (not "lives there with his partner": a detail)
_POSSESSED_RELATIVE = re.compile(r"['’]s\s+(?:[a-z-]+\s+)?(?:" + "|".join(sorted(RELATIVES)) + r")\b")


def _relative_is_relation(old_text: str, new_text: str, old: Fact, new: Fact) -> bool:
    """Is the relative the alignment vetoes for the lexicon's relation word itself ("Nell's husband is ..."
    beside "Nell is married to ...": her spouse, not a fact about her husband)?"""
    relatives = read(old_text, new_text).relatives ^ read(new_text, old_text).relatives
    if not relatives or old.relations != new.relations or len(new.relations) != 1:
        return False  # "Milo's wife works at ...": the relative is not what the lexicon read
    relation = next(r for r in RELATIONS if r.name in new.relations)
    return all(relation.words.search(w) for w in relatives) and old.subject_key == new.subject_key


def _other_figure(old_text: str, new_text: str) -> bool:
    """The old sentence states a figure of a named attribute (a budget, a price, a headcount) that the new one
    does not name: the same number may measure something else ("has spent €250,000 so far")."""
    old = extract(old_text, new_text)
    if old is None or not _numeric(old.relation):
        return False
    new = extract(new_text, old_text)
    return new is None or not new.relations & old.relations


def adds_detail(old_text: str, new_text: str) -> bool:
    """Does a restatement of the same fact (same key and value) add detail, in whatever words it restates
    it: two or more content words besides the relation's ("... as a data engineer"), a name or number the
    old text lacks, or a clause of its own (", for its soundtrack")?"""
    old, new = extract(old_text), extract(new_text)
    if old is not None and new is not None and len(new.detail - old.detail) >= 2:
        return True
    ro, rn = read(old_text, new_text), read(new_text, old_text)
    if {samefact.day(a.key) for a in rn.anchors} - {samefact.day(a.key) for a in ro.anchors}:
        return True  # (a name or number the old text lacks; "Saturday" is in "on Saturdays")
    added = set(rn.words) - set(ro.words)
    if (old is None or new is None) and len(added) >= 2 and len(rn.words) >= len(ro.words) + 2:
        return True  # the lexicon does not read them: more words, and two of them new
    return clauses(rn) > clauses(ro) and bool(added)


def _span(text: str, start: int, end: int) -> str:
    """The original-case words [start:end) of text, as tokenised by `words`."""
    toks = normalise(text).split()
    lowered = " ".join(toks[start:end])
    # Recover original casing by matching the normalised span inside the original tokens.
    original = _TOKEN.findall(text)
    norm = [normalise(t) for t in original]
    n = end - start
    for i in range(len(norm) - n + 1):
        if " ".join(norm[i:i + n]) == lowered:
            return " ".join(original[i:i + n])
    return lowered


def canonical_key(fact: Fact, near: Candidate | None, relation: str, *, spelled: str | None = None
                  ) -> tuple[str, str]:
    """One name per attribute and per subject: a neighbour that already carries this fact's key
    lends its spelling of the subject and its relation name; otherwise the lexicon's group name,
    and the subject as `spelled` in the neighbour's text (or as this write spells it)."""
    if near is not None and near.subject and near.relation and normalise(near.subject) == fact.subject_key:
        old = extract(near.content)
        if old is None or fact.relations & old.relations:
            return near.subject, near.relation
    return spelled or fact.subject, relation


def spelled(text: str, words_: str) -> str:
    """The words as the text writes them ("nikhil rao" -> "Nikhil Rao"), or the words."""
    m = re.search(r"\b" + r"\W+".join(map(re.escape, words_.split())) + r"\b", canonical(text), re.IGNORECASE)
    return m.group() if m else words_


def state_key(text: str) -> tuple[str, str, str] | None:
    """The key a sentence's state or job title gives (subject, attribute, value), when it tells one of its
    subject alone, now ("Nikhil Rao went fully vegan" -> (Nikhil Rao, diet, vegan))."""
    now = state(text)
    # (the words before the state are its subject: a modal there makes it a maybe, "X said she might go vegan")
    if now is not None and now.read and now.lower_case and (now.chosen or not negates(text)) \
            and not attributes._HYPOTHETICAL.search(now.subject):
        return spelled(text, now.subject), now.attribute, now.value
    held = title(canonical(text))
    return (held.written, "job_title", held.title) if held else None


def with_text_keys(write: IncomingWrite, decision: Decision, candidates: Sequence[Candidate]) -> Decision:
    """A text-only write placed in the tree as a fact of its own (a new branch, a correction) gets the key
    its sentence states, when it reads one, spelled as its org already spells that subject and attribute
    (keys.borrow_key). A refinement does not: its parent holds the key."""
    if write.keyed or decision.kind in ("duplicate", "child_update"):
        return decision
    if decision.subject is not None:
        return _borrowed(decision, decision.subject, decision.relation, decision.value, candidates)
    target = next((c for c in candidates if c.id == decision.target_id), None)
    read_key = written_key(write.content, target.content if target else None)
    return _borrowed(decision, *read_key, candidates) if read_key else decision


def written_key(text: str, other: str | None = None) -> tuple[str, str, str] | None:
    """The (subject, relation, value) a text-only write is stored under, before its org's spelling: the
    sentence's (`sentence_key`), or a labelled note's ("Mayor of Marrowby: Yusra Pemberton"), whose layout
    says which name is the subject and which the value where the grammar reads the same attribute
    ("odalys fennimore - employer: Harrowgate Bank (started 4 Nov 2024)")."""
    read_key = sentence_key(text, other)
    noted = note_key(text)
    if noted and (read_key is None or same_attribute(noted[1], read_key[1])):
        return noted
    return read_key


def sentence_key(text: str, other: str | None = None) -> tuple[str, str, str] | None:
    """The (subject, relation, value) a sentence states, when it may key a memory: the lexicon's reading
    (facts.extract, beside `other`, the memory it is compared with); outside the lexicon a state or a job
    title in words, a key only where the grammar marks the subject, else the attribute the sentence means
    (attributes.key: the names other wordings of it get)."""
    fact = extract(text, other)
    if fact is None or fact.loose and not (fact.lexical or fact.negated or fact.past):
        return state_key(text) or single_key(text) or attributes.key(text) or plain_key(text) or title_key(text)
    if not keyable(fact):
        return None
    subject, relation = canonical_key(fact, None, fact.relation)
    return subject, relation, fact.value


@lru_cache(maxsize=4096)
def text_key(text: str) -> tuple[str | None, str | None]:
    """The (subject, relation) a text-only write is about, as `written_key` reads it (the lexicon, then the
    states, titles, notes and the attribute classifier), or (None, None). Placement gathers every memory
    believed under it, so an old version worded far from the new one is a candidate whatever its
    similarity ("Hollis Agyeman is 34" / "Hollis Agyeman turned thirty-five today")."""
    found = written_key(text)
    return (found[0], found[1]) if found else (None, None)


def _borrowed(decision: Decision, subject: str, relation: str | None, value: str | None,
              candidates: Sequence[Candidate]) -> Decision:
    if relation is None:
        return decision
    subject, relation = borrow_key(subject, relation, candidates)
    return replace(decision, subject=subject, relation=relation, value=value)


def in_time(write: IncomingWrite, decision: Decision, candidates: Sequence[Candidate]) -> Decision:
    """A repeat of a fact from before the memory it repeats starts is that fact's history, not a duplicate:
    "Contoso" from 2020 beside "Contoso" from 2024 tells what was true in 2020-2024 too."""
    if decision.kind != "duplicate":
        return decision
    target = next((c for c in candidates if c.id == decision.target_id), None)
    if target is None or write.valid_from >= target.valid_from:
        return decision
    history = replace(decision, kind="contradiction_fork",
                      reason=f"{decision.reason}; valid from {write.valid_from:%Y-%m-%d}, before the memory it "
                             f"repeats ({target.valid_from:%Y-%m-%d}): kept as history")
    return with_text_keys(write, history, candidates)
