"""Seed 000's four-agent loop on fabric, unchanged: the loop talks to the seed's `Memory` interface
(async write / query / current_value) and fabric's `AsyncFabric` sits behind it (issue 12).

The seed's loop: a planner splits the question into subtasks, a researcher takes the top hit per
subtask from memory, a critic checks each finding against `current_value(entity, relation)` for
staleness (and for grounding), and sends the researcher back up to two times before it escalates; a
synthesiser reports the approved findings. Here the planner and the grounding check are
deterministic (the seed used an 8B LLM for them; its failures there were not memory failures)."""

from __future__ import annotations

import abc
import asyncio
from dataclasses import dataclass

from fabric import AsyncFabric

MAX_RETRIES = 2


# ---------------------------------------------------------------- the seed's interface and loop

@dataclass(frozen=True)
class Finding:
    entity: str
    relation: str
    value: str
    text: str


class Memory(abc.ABC):
    @abc.abstractmethod
    async def write(self, finding: Finding) -> None: ...

    @abc.abstractmethod
    async def query(self, query_text: str, k: int = 5) -> list[Finding]: ...

    @abc.abstractmethod
    async def current_value(self, entity: str, relation: str) -> Finding | None: ...


@dataclass
class Outcome:
    report: list[str]
    escalated: bool
    retries: int


async def run_loop(memory: Memory, subtasks: list[str]) -> Outcome:
    """Researcher -> critic (staleness, grounding) -> retry or escalate -> synthesiser."""
    approved, retries = [], 0
    for subtask in subtasks:
        for attempt in range(MAX_RETRIES + 1):
            hits = await memory.query(subtask, k=5)
            finding = hits[attempt] if attempt < len(hits) else None  # a retry takes the next hit
            if finding is not None and await critic_approves(memory, finding):
                approved.append(finding)
                break
            retries += 1
        else:
            return Outcome(report=[], escalated=True, retries=retries)
    return Outcome(report=[f.text for f in approved], escalated=False, retries=retries)


async def critic_approves(memory: Memory, finding: Finding) -> bool:
    live = await memory.current_value(finding.entity, finding.relation)
    fresh = live is not None and live.value == finding.value
    grounded = finding.value in finding.text
    return fresh and grounded


# ---------------------------------------------------------------- fabric behind the interface

class FabricMemory(Memory):
    def __init__(self, fab: AsyncFabric, org: str):
        self.fab, self.org = fab, org

    async def write(self, finding: Finding) -> None:
        receipt = await self.fab.write(finding.text, org=self.org, subject=finding.entity,
                                       relation=finding.relation, value=finding.value)
        await self.fab.wait(receipt, 60)

    async def query(self, query_text: str, k: int = 5) -> list[Finding]:
        return [_finding(m) for m in await self.fab.search(query_text, org=self.org, k=k) if m.subject]

    async def current_value(self, entity: str, relation: str) -> Finding | None:
        m = await self.fab.current_value(entity, relation, org=self.org)
        return _finding(m) if m else None


def _finding(m) -> Finding:
    return Finding(m.subject, m.relation, m.value, m.content)


# Two versions of each fact, indistinguishable without timestamps (the seed's anti-cheat rule).
STALENESS_CASES = [
    ("Meridian Bio", "ceo", "Jonathan Hale", "Priya Nair", "Meridian Bio's chief executive is {}.",
     "Who is the CEO of Meridian Bio?"),
    ("Cascade Growth Fund", "managing partner", "Thomas Aldrich", "Elena Vasquez",
     "The managing partner of the Cascade Growth Fund is {}.", "Who manages the Cascade Growth Fund?"),
    ("Dana Whitfield", "favourite movie", "Heat", "Arrival", "Dana Whitfield's favourite movie is {}.",
     "What is Dana Whitfield's favourite movie?"),
    ("Northwind Labs", "headquarters", "Oslo", "Lisbon", "Northwind Labs has its headquarters in {}.",
     "Where are Northwind Labs headquartered?"),
    ("Project Heron", "lead", "Mina Ortiz", "Kofi Mensah", "Project Heron is led by {}.", "Who leads Project Heron?"),
]


def test_seed_000_loop_on_fabric_never_escalates_on_stale_facts(afab: AsyncFabric, loop_runner, org):
    async def scenario() -> list[tuple[str, Outcome]]:
        memory = FabricMemory(afab, org)
        for entity, relation, v1, v2, frame, _ in STALENESS_CASES:
            await memory.write(Finding(entity, relation, v1, frame.format(v1)))
            await memory.write(Finding(entity, relation, v2, frame.format(v2)))
        outcomes = await asyncio.gather(*(run_loop(memory, [question]) for *_, question in STALENESS_CASES))
        return [(case[3], out) for case, out in zip(STALENESS_CASES, outcomes)]

    results = loop_runner.run(scenario())
    for v2, out in results:
        assert not out.escalated, f"the loop escalated on a fact fabric holds: {v2}"
        assert out.retries == 0, "the researcher got a stale fact first"
        assert len(out.report) == 1 and v2 in out.report[0]
