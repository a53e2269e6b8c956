"""`fabric demo`: the model in one small story, on the embedded default."""

from __future__ import annotations

from datetime import datetime, timezone

from rich.console import Console
from rich.tree import Tree

from .api import Fabric
from .types import utcnow

SUBJECT, RELATION = "Ada Moreau", "employer"


def _t(y: int, m: int, d: int = 1) -> datetime:
    return datetime(y, m, d, tzinfo=timezone.utc)


STORY = [
    ("a fact", "Ada Moreau works at Northwind as a data engineer.", "Northwind", _t(2021, 3)),
    ("its refinement", "Ada Moreau works at Northwind as a data engineer on the payments team in Lyon.",
     "Northwind", _t(2021, 3)),
    ("a duplicate", "Ada Moreau works at Northwind as a data engineer.", "Northwind", _t(2021, 3)),
    ("a contradiction", "Ada Moreau works at Contoso as a data engineer.", "Contoso", _t(2024, 6)),
    ("a late-arriving older fact", "Ada Moreau works at Fabrikam as a data engineer.", "Fabrikam", _t(2019, 1)),
]


def run_demo(console: Console, fab: Fabric | None = None) -> dict:
    own = fab is None
    fab = fab or Fabric.connect()
    org = "demo-" + utcnow().strftime("%Y%m%d%H%M%S%f")
    try:
        console.rule(f"[bold]fabric demo[/] — org {org}")
        placements, marks = [], []
        for label, text, value, valid_from in STORY:
            receipt = fab.write(text, org=org, subject=SUBJECT, relation=RELATION, value=value,
                                valid_from=valid_from, source="demo")
            p = fab.wait(receipt, timeout=120)
            placements.append(p)
            marks.append(utcnow())
            note = " (out of order: kept as history)" if p.out_of_order else ""
            console.print(f"[cyan]{label:>27}[/]  valid from {valid_from.date()}  →  [bold]{p.decision}[/]{note}"
                          f"  [dim]{p.reason}[/]")

        console.rule("the tree (superseded nodes kept, marked)")
        roots = {m.root_id for m in fab.belief_state(org=org, valid_at=_t(2000, 1), known_at=utcnow())}
        roots |= {fab.get(p.memory_id, org=org).root_id for p in placements if p.decision != "duplicate"}
        trees = [fab.walk(root, org=org, include_superseded=True) for root in roots]
        for nodes in sorted(trees, key=lambda ns: min(n.valid_from for n in ns)):  # the facts' timeline
            console.print(_tree(nodes))

        console.rule("answers")
        now_value = fab.current_value(SUBJECT, RELATION, org=org)
        console.print(f"current_value now:                 [bold green]{now_value.value if now_value else None}[/]")
        for when in (_t(2020, 6), _t(2022, 6)):
            m = fab.current_value(SUBJECT, RELATION, org=org, valid_at=when)
            console.print(f"current_value valid at {when.date()}:   [bold]{m.value if m else None}[/]")
        before_fork, before_late = marks[2], marks[3]
        m = fab.current_value(SUBJECT, RELATION, org=org, known_at=before_fork)
        console.print(f"as the store believed before the contradiction arrived: [bold]{m.value if m else None}[/]")
        m = fab.current_value(SUBJECT, RELATION, org=org, valid_at=_t(2020, 6), known_at=before_late)
        console.print(f"valid 2020-06, as known before the late fact arrived:   [bold]{m.value if m else None}[/]")
        hits = fab.search("Where does Ada Moreau work?", org=org, k=3)
        console.print("search 'Where does Ada Moreau work?' (now):")
        for h in hits:
            console.print(f"   {h.score:.3f}  {h.content}")
        return {"org": org, "placements": placements, "current": now_value.value if now_value else None}
    finally:
        if own:
            fab.close()


def _tree(nodes) -> Tree:
    by_parent: dict = {}
    for n in nodes:
        by_parent.setdefault(n.parent_id, []).append(n)
    ids = {n.id for n in nodes}
    top = [n for n in nodes if n.parent_id not in ids]

    def label(n) -> str:
        span = f"[{n.valid_from.date()}, {n.valid_to.date() if n.valid_to else '∞'})"
        style = "dim strike" if n.state == "superseded" else "bold"
        return f"[{style}]{n.content}[/] {span} {n.placement}" + (" (superseded)" if n.state == "superseded" else "")

    def add(tree: Tree, n) -> None:
        branch = tree.add(label(n))
        for c in by_parent.get(n.id, []):
            add(branch, c)

    root = Tree(label(top[0]) if top else "(empty)")
    for c in by_parent.get(top[0].id, []) if top else []:
        add(root, c)
    return root
