"""The LLM validator's prompt: the four decisions, stated precisely, with short few-shot turns.

Candidates are shown with short labels (``m1``, ``m2``, ...) rather than UUIDs: a small model
copies a short label reliably, and the validator maps it back to the candidate's id (a label
that is not among the candidates is refused and the model is asked again)."""

from __future__ import annotations

import json
from typing import Any, Sequence

SYSTEM_PROMPT = """\
You maintain an AI agent's long-term memory. A NEW memory arrives; EXISTING memories that look \
similar to it are listed with labels (m1, m2, ...). Decide how the NEW memory relates to them. \
Choose exactly one kind:

- "duplicate": the NEW memory states the same fact as one existing memory, possibly in other \
words (a paraphrase, a synonym, a reordering). It adds no new information. target = that memory.
- "child_update": the NEW memory is about the same thing as one existing memory and ADDS detail \
(a time, a place, a reason, a further qualification), and everything the existing memory says \
is still true. target = that memory.
- "contradiction_fork": the NEW memory gives a DIFFERENT value for the same single-valued \
attribute of the same subject (a new holder of a role, a changed time, date, place, price, \
number, status or preference), so the existing memory is no longer true. target = that memory.
- "new_branch": the NEW memory is about a different subject, or a different attribute of the \
same subject, than every existing memory, even if it shares names or words. target = null.

Rules:
- People restate facts in many ways: "X is the CEO of Y" = "Y is led by chief executive X" = \
"Y's top job is held by X"; "lives in" = "resides in" = "home for ... is"; a number in words = \
the same number in digits; the value may come first ("Porto is where ... lives"). Compare the \
facts, not the wording.
- If one detail is replaced by another (10am becomes 11am, Paris becomes Berlin, Alice becomes \
Bob), it is "contradiction_fork", never "child_update".
- "child_update" only when nothing in the existing memory is negated or replaced.
- Same subject but another attribute (where someone lives vs where they work, the CEO vs the \
CFO) is "new_branch".
- Names must match exactly. A similar name is another subject: "Anna Berg" is not "Anna Borg", \
"Acme" is not "Acme Services" or "Acme Asia". Then it is "new_branch".
- A manager chain is two facts: who X reports to, and who X's manager reports to: "new_branch".
- Some facts have several values at once (places visited, languages, offices, warehouses, \
factories, customers, pets, committees, amenities): another value is "new_branch", not a \
contradiction.
- If you are not sure the NEW memory makes the existing one false, answer "new_branch".
Answer in this order:
- subject, relation, value: the key of the NEW memory: subject (the name of the entity it is \
about, nothing more), relation (the attribute, in snake_case; reuse an existing memory's relation \
when it is the same attribute), value (the attribute's value).
- target: the label of the ONE existing memory about the same attribute of the same subject (for \
example "m1"), or null when there is none.
- target_value: the value the target states for that attribute, as written there (null without \
a target). Compare it with value: the same value (in other words or units) is "duplicate" or \
"child_update"; another value is "contradiction_fork".
- reason: one short sentence. kind: the decision. confidence: a number from 0 to 1.
Answer with the JSON object only."""


def label(i: int) -> str:
    return f"m{i + 1}"


def render_user(new_content: str, existing: Sequence[tuple[str, str, str | None]],
                new_key: tuple[str | None, str | None, str | None] | None = None) -> str:
    """The user turn: the existing memories as (label, content, key text), then the new memory."""
    lines = ["EXISTING memories:"]
    for lab, content, key in existing:
        lines.append(f"[{lab}] {content}" + (f"   (key: {key})" if key else ""))
    lines.append("")
    lines.append(f"NEW memory: {new_content}")
    if new_key and new_key[0] and new_key[1]:
        lines.append(f"NEW memory's key: {new_key[0]} / {new_key[1]} = {new_key[2]}")
    return "\n".join(lines)


def _answer(kind: str, target: str | None, subject: str, relation: str, value: str, reason: str,
            confidence: float, target_value: str | None = None) -> str:
    """A worked answer, its fields in the schema's order (LLMAnswer)."""
    return json.dumps({"subject": subject, "relation": relation, "value": value, "target": target,
                       "target_value": target_value, "reason": reason, "kind": kind, "confidence": confidence})


# Short worked examples, one per decision, and the traps: another attribute of the same subject,
# a name twin, a sister company, a manager chain, a multi-valued fact, a restated correction.
# Their subjects are deliberately unlike the labelled sets in tests/data/placement_pairs*.jsonl,
# and they were chosen looking at the "tune" split only.
FEW_SHOT: list[tuple[str, str]] = [
    (render_user("Marta Ruiz now runs the Lisbon office.", [
        ("m1", "The Lisbon office is run by Tomas Weber.", None),
        ("m2", "The Lisbon office opened in 2019.", None)]),
     _answer("contradiction_fork", "m1", "Lisbon office", "run_by", "Marta Ruiz",
             "The office's manager changed from Tomas Weber to Marta Ruiz.", 0.9, "Tomas Weber")),
    (render_user("The quarterly review is on Friday at 2pm in the boardroom.", [
        ("m1", "The quarterly review is on Friday.", None)]),
     _answer("child_update", "m1", "quarterly review", "scheduled", "Friday at 2pm in the boardroom",
             "Adds the time and room; Friday is unchanged.", 0.85, "Friday")),
    (render_user("Our cat Miso is allergic to chicken.", [
        ("m1", "Miso, the cat, has a chicken allergy.", None),
        ("m2", "Miso is four years old.", None)]),
     _answer("duplicate", "m1", "Miso", "allergy", "chicken", "Same fact in other words.", 0.9, "chicken")),
    (render_user("On Sundays the gym does not open.", [
        ("m1", "The gym is closed on Sundays.", None)]),
     _answer("duplicate", "m1", "gym", "closed_on", "Sundays", "Same fact, reworded.", 0.9, "Sundays")),
    (render_user("Ana's brother works at Deloitte.", [
        ("m1", "Ana works at Deloitte.", None)]),
     _answer("new_branch", None, "Ana's brother", "employer", "Deloitte",
             "A different person: Ana's brother, not Ana.", 0.8)),
    (render_user("The nightly backup job starts at 3am.", [
        ("m1", "The nightly backup job starts at 1am.", None)]),
     _answer("contradiction_fork", "m1", "nightly backup job", "start_time", "3am",
             "The start time changed from 1am to 3am.", 0.9, "1am")),
    (render_user("Priya Nair speaks fluent Japanese.", [
        ("m1", "Priya Nair lives in Osaka.", None)]),
     _answer("new_branch", None, "Priya Nair", "speaks", "Japanese",
             "Same person, but a different attribute: languages, not residence.", 0.8)),
    (render_user("Holloway Press is run by chief executive Dana Kirsch.", [
        ("m1", "The CEO of Holloway Press is Ben Adair.", None),
        ("m2", "Holloway Press prints children's books.", None)]),
     _answer("contradiction_fork", "m1", "Holloway Press", "ceo", "Dana Kirsch",
             "Same role in other words; the CEO changed from Ben Adair to Dana Kirsch.", 0.9, "Ben Adair")),
    (render_user("Mikael Strom lives in Umea.", [
        ("m1", "Mikael Strand lives in Lulea.", None)]),
     _answer("new_branch", None, "Mikael Strom", "home_city", "Umea",
             "Mikael Strom and Mikael Strand are different people.", 0.9)),
    (render_user("Orion Freight Asia is on the Premium plan.", [
        ("m1", "Orion Freight is on the Basic plan.", None)]),
     _answer("new_branch", None, "Orion Freight Asia", "billing_plan", "Premium",
             "Orion Freight Asia is a different company from Orion Freight.", 0.85)),
    (render_user("Lukas Frey reports to Nora Lindahl.", [
        ("m1", "Emil Sanna reports to Lukas Frey.", None)]),
     _answer("new_branch", None, "Lukas Frey", "manager", "Nora Lindahl",
             "A manager chain: this is Lukas Frey's own manager, not Emil Sanna's.", 0.85)),
    (render_user("Kessler Tools has a factory in Brno.", [
        ("m1", "Kessler Tools is headquartered in Pilsen.", None),
        ("m2", "Kessler Tools has a factory in Ostrava.", None)]),
     _answer("new_branch", None, "Kessler Tools", "factory", "Brno",
             "A company can have several factories and a head office; nothing is replaced.", 0.85)),
    (render_user("Departures of the Hvar ferry are now at quarter past ten.", [
        ("m1", "The ferry to Hvar leaves at 9:40.", None)]),
     _answer("contradiction_fork", "m1", "Hvar ferry", "departure_time", "10:15",
             "The departure time changed from 9:40 to 10:15, worded differently.", 0.85, "9:40")),
    (render_user("The support desk is staffed by 11 agents these days.", [
        ("m1", "Nine agents work on the support desk.", None)]),
     _answer("contradiction_fork", "m1", "support desk", "agent_count", "11",
             "The number of agents changed from nine to 11.", 0.85, "nine")),
    (render_user("The Hamids' boat is a 9-metre sailing yacht moored in Split.", [
        ("m1", "The Hamid family owns a boat.", None)]),
     _answer("child_update", "m1", "Hamid family", "boat", "a 9-metre sailing yacht moored in Split",
             "Still their boat; adds its type, size and mooring.", 0.85, "a boat")),
    (render_user("The Maple Street library has a 3D printer.", [
        ("m1", "The Maple Street library has a cafe.", None)]),
     _answer("new_branch", None, "Maple Street library", "amenities", "3D printer",
             "A library has many amenities; a printer does not replace the cafe.", 0.85)),
    (render_user("The billing service is hosted on Azure.", [
        ("m1", "The billing service is written in Go.", None)]),
     _answer("new_branch", None, "billing service", "hosting", "Azure",
             "Same service, another attribute: hosting, not programming language.", 0.85)),
]


def messages(user: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    for u, a in FEW_SHOT:
        out.append({"role": "user", "content": u})
        out.append({"role": "assistant", "content": a})
    out.append({"role": "user", "content": user})
    return out


REASK = ("Your previous answer could not be used: {problem}. Answer again with one JSON object that "
         "follows the schema; target must be one of {labels} or null for new_branch.")
