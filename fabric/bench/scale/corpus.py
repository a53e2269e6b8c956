"""The synthetic corpus: many orgs, trees of varied depth, versions across valid and transaction time."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

import numpy as np

from ...errors import ValidationError
from .config import (BELIEF_ORG, BELIEF_SIZE, DIM, EMBEDDINGS_NOTE, EPOCH, LARGE_ORG, MEDIUM_ORG_INDEX, NEVER,
                     QUICK_SIZE, SUBTREE_SIZE, US_PER_DAY, K, Progress)

# --------------------------------------------------------------------------------------------------
# the corpus


RELATIONS = ("ceo", "plan tier", "owner", "status", "office", "deadline", "budget", "language",
             "timezone", "manager", "supplier", "headcount", "price", "region", "lead", "on call")
NOUNS = ("account", "project", "customer", "vendor", "team", "service", "contract", "product", "site",
         "repository", "campaign", "ticket")
WORDS = tuple("""agent alpha amber apply archive audit backlog badge balance beta billing board branch
bridge budget buffer cache cadence calendar canary capacity carbon cargo cascade catalog channel
checkpoint client cluster cobalt commit compass compliance console contract copper cursor dashboard
delta deploy desk digest domain draft echo edge embargo engine escrow estimate event falcon fiscal
fleet forecast freight gateway glacier granite harbor helix horizon incident index insight invoice
journal kernel ledger lens lumen manifest margin marker meadow metric migration mirror module monitor
north notice onboarding orbit outage packet parcel patch pilot pipeline pivot plaza policy portal
prism quarter queue quota radar ratio relay release renewal replica report review roadmap router
runway sample schema sector segment sensor shard signal sprint staging summit survey switch
tangent tariff template tenant thread ticket timeline token topaz tracker transit trend tunnel
umbrella update upgrade vector vendor venture version vertex voucher wallet warehouse window yield
zenith zone""".split())
VALUE_WORDS = ("Alice Martin", "Bruno Costa", "Chen Wei", "Dana Okafor", "Elena Petrova", "Farah Khan",
               "Gustav Berg", "Hana Sato", "Ivan Novak", "Julia Rossi", "gold", "silver", "bronze",
               "enterprise", "starter", "active", "paused", "closed", "Berlin", "Lisbon", "Osaka",
               "Toronto", "Nairobi", "Q1", "Q2", "Q3", "Q4", "English", "Portuguese", "Japanese")
SOURCES = ("crm", "slack", "email", "docs", "tickets")
CHAIN_P = np.array([0.78, 0.12, 0.06, 0.025, 0.015])  # chain lengths 1..5: ~27% superseded
KIND_CODES = ("new_branch", "child_update", "contradiction_fork")


@dataclass
class Corpus:
    """Every generated row, as arrays indexed by memory (and by version)."""

    n: int
    now_us: int
    orgs: list[str]
    org_t0: np.ndarray              # per org: start of its history (us)
    org_of: np.ndarray              # per memory: org index
    ids: np.ndarray                 # (n, 16) uint8: memory ids
    write_ids: np.ndarray
    decision_ids: np.ndarray
    parent: np.ndarray              # -1 = root
    root: np.ndarray
    depth: np.ndarray
    kind: np.ndarray                # index into KIND_CODES
    target: np.ndarray              # decision target (-1 none)
    rec: np.ndarray                 # recorded_at of version 1 = created_at
    vf: np.ndarray                  # valid_from
    wvt: np.ndarray                 # valid_to given by the write (NEVER = none)
    retracted_at: np.ndarray        # NEVER = not retracted
    keyed: np.ndarray               # bool
    chain: np.ndarray               # per memory: global chain id
    chain_pos: np.ndarray
    content: list[str]
    subject: list[str | None]
    relation: list[str | None]
    value: list[str | None]
    source: list[str | None]
    vectors: np.ndarray             # (n, DIM) float32, unit norm
    # versions
    v_mem: np.ndarray
    v_no: np.ndarray
    v_vf: np.ndarray
    v_vt: np.ndarray
    v_rec: np.ndarray
    v_exp: np.ndarray
    v_state: np.ndarray             # 0 live, 1 superseded
    v_sup: np.ndarray               # superseded_by memory (-1)
    v_dec: np.ndarray               # decision: memory index whose place decision made this version
    # landmarks
    large_org: int = 0
    belief_org: int = 0
    small_org: int = 0
    subtree_root: int = 0
    org_sizes: dict[int, int] = field(default_factory=dict)

    def uid(self, arr: np.ndarray, i: int) -> uuid.UUID:
        return uuid.UUID(bytes=arr[i].tobytes())

    def mem_uuid(self, i: int) -> uuid.UUID:
        return self.uid(self.ids, int(i))

    def org_versions(self, org: int) -> np.ndarray:
        cache = self.__dict__.setdefault("_ov", {})
        if org not in cache:
            cache[org] = np.flatnonzero(self.org_of[self.v_mem] == org)
        return cache[org]

    def org_memories(self, org: int) -> np.ndarray:
        cache = self.__dict__.setdefault("_om", {})
        if org not in cache:
            cache[org] = np.flatnonzero(self.org_of == org)
        return cache[org]

    def qualifying(self, org: int, valid_at: int, known_at: int) -> np.ndarray:
        """Memories of `org` that hold at (valid_at, known_at): fabric_api.holds, in numpy. The last
        answer is kept: the current-state cases ask the same question each time (at 1M, ~1 s each in
        the large org)."""
        last = self.__dict__.get("_last_qualifying")
        if last is not None and last[0] == (org, valid_at, known_at):
            return last[1]
        rec, exp, vf, vt, pos = self._org_version_columns(org)
        m = (rec <= known_at) & (known_at < exp) & (vf <= valid_at) & (valid_at < vt)
        members = self.org_memories(org)
        hit = np.zeros(len(members), dtype=bool)
        hit[pos[m]] = True
        out = members[hit]
        self.__dict__["_last_qualifying"] = ((org, valid_at, known_at), out)
        return out

    def _org_version_columns(self, org: int) -> tuple[np.ndarray, ...]:
        """The org's version columns gathered once (recorded, expired, valid from, valid to, and the
        position of each version's memory among org_memories): a qualifying set is then four
        comparisons and a scatter, not four gathers and a sort of the large org's ~800k versions per
        case (6 min of the 1M run's case generation)."""
        cache = self.__dict__.setdefault("_ovc", {})
        if org not in cache:
            v = self.org_versions(org)
            cache[org] = (self.v_rec[v], self.v_exp[v], self.v_vf[v], self.v_vt[v],
                          np.searchsorted(self.org_memories(org), self.v_mem[v]))
        return cache[org]

    def exact_tops(self, org: int, candidate_sets: Sequence[np.ndarray], queries: Sequence[np.ndarray],
                   k: int = K) -> list[np.ndarray]:
        """The exact cosine top-k of each query among its candidates (a subset of the org's memories),
        best first: one matrix product over the org's vectors for 64 queries at a time, not a pass over
        them per query (at 1M, minutes of the run)."""
        members = self.org_memories(org)   # sorted: every candidate set is a subset
        vectors = self.vectors[members]
        out: list[np.ndarray] = []
        for lo in range(0, len(queries), 64):   # bounded memory: (org size x 64) similarities at a time
            sims = vectors @ np.stack(queries[lo:lo + 64]).T
            for j, cands in enumerate(candidate_sets[lo:lo + 64]):
                if len(cands) == 0:
                    out.append(cands)
                    continue
                s = sims[np.searchsorted(members, cands), j]
                kk = min(k, len(cands))
                part = np.argpartition(-s, kk - 1)[:kk]
                out.append(cands[part[np.argsort(-s[part])]])
        return out

    def stats(self) -> dict[str, Any]:
        current = np.zeros(self.n, bool)
        now = self.now_us
        m = (self.v_rec <= now) & (now < self.v_exp) & (self.v_vf <= now) & (now < self.v_vt)
        current[self.v_mem[m]] = True
        sizes = np.array(sorted(self.org_sizes.values()))
        return {
            "memories": self.n, "versions": int(len(self.v_mem)), "orgs": len(self.orgs),
            "large_org": self.orgs[self.large_org], "large_org_memories": self.org_sizes[self.large_org],
            "small_org": self.orgs[self.small_org], "small_org_memories": self.org_sizes[self.small_org],
            "median_org_memories": int(np.median(sizes)),
            "medium_org_memories": self.org_sizes[MEDIUM_ORG_INDEX],
            "not_current_fraction": round(float(1 - current.mean()), 3),
            "superseded_fraction": round(float(np.mean(self.v_state == 1) * len(self.v_mem) / self.n), 3),
            "retracted_fraction": round(float(np.mean(self.retracted_at < NEVER)), 4),
            "keyed_fraction": round(float(self.keyed.mean()), 3),
            "max_depth": int(self.depth.max()),
            "mean_depth": round(float(self.depth.mean()), 2),
            "time_span_years": round(float((now - self.org_t0.min()) / US_PER_DAY / 365.25), 1),
            "embeddings": EMBEDDINGS_NOTE,
        }


def _uuids(rng: np.random.Generator, n: int) -> np.ndarray:
    b = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    b[:, 6] = (b[:, 6] & 0x0F) | 0x40
    b[:, 8] = (b[:, 8] & 0x3F) | 0x80
    return b


class _LiveSet:
    """A set of ints with O(1) add, remove and uniform random choice."""

    def __init__(self) -> None:
        self.items: list[int] = []
        self.pos: dict[int, int] = {}

    def add(self, x: int) -> None:
        self.pos[x] = len(self.items)
        self.items.append(x)

    def remove(self, x: int) -> None:
        i = self.pos.pop(x, None)
        if i is None:
            return
        last = self.items.pop()
        if last != x:
            self.items[i] = last
            self.pos[last] = i


def _gen_org(rng: np.random.Generator, n: int, t0: int, now: int, *, org_tag: str, single_root: bool,
             first_chain: int, topics: np.ndarray) -> dict[str, Any]:
    """One org's memories as sequential placement events (times, tree, chains, keys, topics)."""
    # chain lengths summing to n
    lens = list(rng.choice(5, size=n, p=CHAIN_P) + 1)
    if single_root:
        lens[0] = 1  # the subtree root: never superseded
    total, out_lens = 0, []
    for L in lens:
        L = min(int(L), n - total)
        if L <= 0:
            break
        out_lens.append(L)
        total += L
    n_ch = len(out_lens)
    span = now - t0
    starts = t0 + (rng.random(n_ch) * 0.92 * span).astype(np.int64)
    if single_root:
        starts[0] = t0
    events = []  # (rec, chain, pos)
    for c, L in enumerate(out_lens):
        t = int(starts[c])
        for p in range(L):
            if p:
                t += int(rng.exponential(0.08 * span)) + 1
            events.append((min(t, now - (L - p) * 1000), c, p))
    events.sort()
    # ensure per-chain recorded order survives the clipping
    m_chain = np.empty(n, np.int64)
    m_pos = np.empty(n, np.int64)
    rec = np.empty(n, np.int64)
    parent = np.full(n, -1, np.int64)
    root = np.empty(n, np.int64)
    depth = np.zeros(n, np.int64)
    kind = np.zeros(n, np.int8)
    target = np.full(n, -1, np.int64)
    vf = np.empty(n, np.int64)
    wvt = np.full(n, NEVER, np.int64)
    retracted = np.full(n, NEVER, np.int64)
    chain_topic = np.empty(n_ch, np.int64)
    chain_keyed = rng.random(n_ch)
    chain_members: list[list[int]] = [[] for _ in range(n_ch)]
    live = _LiveSet()
    last_placed = -1
    lags = rng.exponential(3 * US_PER_DAY, size=n).astype(np.int64)
    u = rng.random((n, 4))
    for i, (t, c, p) in enumerate(events):
        m_chain[i], m_pos[i] = c, p
        if p:
            prev = chain_members[c][-1]
            t = max(t, int(rec[prev]) + 1)
        rec[i] = t
        vf[i] = max(t - int(lags[i]), t0)
        chain_members[c].append(i)
        if p == 0:
            if single_root and i == 0:
                pass  # the root
            elif live.items and (single_root or u[i, 0] < 0.62):
                par = last_placed if (u[i, 1] < 0.2 and last_placed in live.pos) else \
                    live.items[int(u[i, 2] * len(live.items))]
                parent[i], root[i], depth[i] = par, root[par], depth[par] + 1
                kind[i], target[i] = 1, par
            if parent[i] < 0:
                root[i] = i
            # topic: usually the parent's, else one of the org's topics
            if parent[i] >= 0 and u[i, 3] < 0.7:
                chain_topic[c] = chain_topic[m_chain[parent[i]]]
            else:
                chain_topic[c] = topics[int(u[i, 3] * 1e6) % len(topics)]
        else:
            prev = chain_members[c][-2]
            vf[i] = max(vf[i], vf[prev] + 1)
            kind[i], target[i] = 2, prev
            par = parent[prev]
            parent[i] = par
            root[i] = root[prev] if par >= 0 else i
            depth[i] = depth[prev]
            live.remove(prev)
        live.add(i)
        last_placed = i
    # valid_to given by a few writes, and retractions, on single-memory chains (not the subtree root)
    lens_arr = np.array(out_lens)
    single = np.flatnonzero(lens_arr[m_chain] == 1)
    if single_root:
        single = single[single != 0]
    r = rng.random(len(single))
    ends = single[r < 0.03]
    wvt[ends] = vf[ends] + (rng.uniform(7, 400, size=len(ends)) * US_PER_DAY).astype(np.int64)
    gone = single[(r >= 0.03) & (r < 0.045)]
    retracted[gone] = rec[gone] + (rng.random(len(gone)) * (now - rec[gone])).astype(np.int64) + 1
    # keys and text
    keyed = np.zeros(n, bool)
    subject: list[str | None] = [None] * n
    relation: list[str | None] = [None] * n
    value: list[str | None] = [None] * n
    content: list[str] = [""] * n
    words = rng.integers(0, len(WORDS), size=(n, 16))
    nwords = rng.integers(5, 15, size=n)
    vals = rng.integers(0, len(VALUE_WORDS), size=n)
    rels = rng.integers(0, len(RELATIONS), size=n_ch)
    nouns = rng.integers(0, len(NOUNS), size=n_ch)
    for c, members in enumerate(chain_members):
        is_keyed = chain_keyed[c] < (0.7 if len(members) > 1 else 0.4)
        subj = f"{NOUNS[nouns[c]]} {org_tag}-{first_chain + c}"
        rel = RELATIONS[rels[c]]
        filler = " ".join(WORDS[w] for w in words[members[0], :nwords[members[0]]])
        for j, i in enumerate(members):
            val = f"{VALUE_WORDS[vals[i]]} {j + 1}"
            if is_keyed:
                keyed[i] = True
                subject[i], relation[i], value[i] = subj, rel, val
                content[i] = f"The {rel} of {subj} is {val}. {filler}"
            else:
                content[i] = f"{subj.capitalize()}: {filler} {val}"
    return dict(n=n, rec=rec, vf=vf, wvt=wvt, retracted=retracted, parent=parent, root=root, depth=depth,
                kind=kind, target=target, chain=m_chain + first_chain, chain_pos=m_pos, n_chains=n_ch,
                chain_topic=chain_topic, keyed=keyed, subject=subject, relation=relation, value=value,
                content=content)


def build_corpus(n: int, seed: int = 7, progress: Progress | None = None) -> Corpus:
    """Generate a corpus of exactly `n` memories (deterministic for a seed and size)."""
    if n < QUICK_SIZE:
        raise ValidationError("sizes", f"the smallest size is {QUICK_SIZE}")
    rng = np.random.default_rng([seed, n])
    now = int((datetime.now(timezone.utc) - EPOCH) / timedelta(microseconds=1))
    year = 365 * US_PER_DAY
    # org sizes: one large org (60%), three medium (4% each), the 1,000-memory org, many small
    large = int(n * 0.6)
    medium = [int(n * 0.04)] * 3
    rest = n - large - sum(medium) - BELIEF_SIZE
    small: list[int] = []
    while rest > 0:
        s = int(np.clip(rng.lognormal(np.log(150), 0.8), 20, 2000))
        s = min(s, rest)
        if rest - s < 20 and rest - s > 0:
            s = rest
        small.append(s)
        rest -= s
    sizes = [large, *medium, BELIEF_SIZE, *small]
    names = [LARGE_ORG, *(f"scale-medium-{i}" for i in range(3)), BELIEF_ORG,
             *(f"scale-small-{i:05d}" for i in range(len(small)))]
    n_topics = max(64, n // 500)
    centers = rng.standard_normal((n_topics, DIM), dtype=np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)

    parts: list[tuple[int, dict[str, Any]]] = []
    org_t0 = np.empty(len(sizes), np.int64)
    chain_base = 0
    for o, size in enumerate(sizes):
        t0 = now - (5 * year if o == 0 else int(rng.uniform(0.5, 4.5) * year))
        org_t0[o] = t0
        pool = rng.choice(n_topics, size=min(n_topics, max(4, size // 100)), replace=False)
        if o == 0:
            # the large org: its own history plus a 1,000-node subtree under one root
            main = _gen_org(rng, size - SUBTREE_SIZE, t0, now, org_tag=f"o{o}", single_root=False,
                            first_chain=chain_base, topics=pool)
            chain_base += main["n_chains"]
            parts.append((o, main))
            sub = _gen_org(rng, SUBTREE_SIZE, t0, now, org_tag=f"o{o}s", single_root=True,
                           first_chain=chain_base, topics=pool)
            chain_base += sub["n_chains"]
            parts.append((o, sub))
        else:
            part = _gen_org(rng, size, t0, now, org_tag=f"o{o}", single_root=False, first_chain=chain_base,
                            topics=pool)
            chain_base += part["n_chains"]
            parts.append((o, part))
        if progress and o % 500 == 0 and o:
            progress(f"  generated {o}/{len(sizes)} orgs")

    # concatenate with offsets
    def cat(key: str, offset_refs: bool = False) -> np.ndarray:
        arrs, base = [], 0
        for _, p in parts:
            a = p[key]
            if offset_refs:
                a = np.where(a >= 0, a + base, a)
            arrs.append(a)
            base += p["n"]
        return np.concatenate(arrs)

    org_of = np.concatenate([np.full(p["n"], o, np.int32) for o, p in parts])
    subtree_root = parts[0][1]["n"]  # first memory of the second part
    chain = cat("chain")
    chain_topic = np.concatenate([p["chain_topic"] for _, p in parts])
    # embeddings: centre -> chain base -> member
    n_chains = chain_base
    vectors = np.empty((n, DIM), np.float32)
    chain_vec = np.empty((n_chains, DIM), np.float32)
    step = 50_000
    for s in range(0, n_chains, step):
        e = min(s + step, n_chains)
        v = centers[chain_topic[s:e]] + rng.standard_normal((e - s, DIM), dtype=np.float32) * (0.9 / DIM ** 0.5)
        chain_vec[s:e] = v / np.linalg.norm(v, axis=1, keepdims=True)
    for s in range(0, n, step):
        e = min(s + step, n)
        v = chain_vec[chain[s:e]] + rng.standard_normal((e - s, DIM), dtype=np.float32) * (0.35 / DIM ** 0.5)
        vectors[s:e] = v / np.linalg.norm(v, axis=1, keepdims=True)
    del chain_vec

    def catlist(key: str) -> list:
        out: list = []
        for _, p in parts:
            out.extend(p[key])
        return out

    c = Corpus(
        n=n, now_us=now, orgs=names, org_t0=org_t0, org_of=org_of,
        ids=_uuids(rng, n), write_ids=_uuids(rng, n), decision_ids=_uuids(rng, n),
        parent=cat("parent", True), root=cat("root", True), depth=cat("depth"), kind=cat("kind"),
        target=cat("target", True), rec=cat("rec"), vf=cat("vf"), wvt=cat("wvt"),
        retracted_at=cat("retracted"), keyed=cat("keyed"), chain=chain, chain_pos=cat("chain_pos"),
        content=catlist("content"), subject=catlist("subject"), relation=catlist("relation"),
        value=catlist("value"), source=[SOURCES[i % len(SOURCES)] if i % 7 else None for i in range(n)],
        vectors=vectors,
        v_mem=np.empty(0, np.int64), v_no=np.empty(0, np.int16), v_vf=np.empty(0, np.int64),
        v_vt=np.empty(0, np.int64), v_rec=np.empty(0, np.int64), v_exp=np.empty(0, np.int64),
        v_state=np.empty(0, np.int8), v_sup=np.empty(0, np.int64), v_dec=np.empty(0, np.int64),
        large_org=0, belief_org=4, subtree_root=subtree_root,
        org_sizes={o: s for o, s in enumerate(sizes)},
    )
    small_ids = list(range(5, len(sizes)))
    c.small_org = min(small_ids, key=lambda o: abs(sizes[o] - 200)) if small_ids else 1
    _build_versions(c)
    return c


def _build_versions(c: Corpus) -> None:
    """Version rows: a superseded memory has v1 (live, expired at the supersession) and v2
    (superseded, valid_to closed at the successor's valid_from); a retracted one has v1 expired."""
    n = c.n
    # the successor of each memory in its chain (memories of a chain are contiguous in time order
    # within an org part, but not necessarily adjacent in the array): map (chain, pos) -> index
    order = np.lexsort((c.chain_pos, c.chain))
    ch, pos = c.chain[order], c.chain_pos[order]
    nxt = np.full(n, -1, np.int64)
    same = (ch[1:] == ch[:-1]) & (pos[1:] == pos[:-1] + 1)
    nxt[order[:-1][same]] = order[1:][same]
    sup = nxt >= 0
    idx = np.arange(n)
    # version 1 of every memory
    v1_exp = np.where(sup, c.rec[np.maximum(nxt, 0)], c.retracted_at)
    v1 = dict(mem=idx, no=np.ones(n, np.int16), vf=c.vf, vt=c.wvt, rec=c.rec, exp=v1_exp,
              state=np.zeros(n, np.int8), sup=np.full(n, -1, np.int64), dec=idx)
    s = idx[sup]
    succ = nxt[sup]
    v2 = dict(mem=s, no=np.full(len(s), 2, np.int16), vf=c.vf[s], vt=c.vf[succ], rec=c.rec[succ],
              exp=np.full(len(s), NEVER, np.int64), state=np.ones(len(s), np.int8), sup=succ, dec=succ)
    c.v_mem = np.concatenate([v1["mem"], v2["mem"]])
    c.v_no = np.concatenate([v1["no"], v2["no"]])
    c.v_vf = np.concatenate([v1["vf"], v2["vf"]])
    c.v_vt = np.concatenate([v1["vt"], v2["vt"]])
    c.v_rec = np.concatenate([v1["rec"], v2["rec"]])
    c.v_exp = np.concatenate([v1["exp"], v2["exp"]])
    c.v_state = np.concatenate([v1["state"], v2["state"]])
    c.v_sup = np.concatenate([v1["sup"], v2["sup"]])
    c.v_dec = np.concatenate([v1["dec"], v2["dec"]])
