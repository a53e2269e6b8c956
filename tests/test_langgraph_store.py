"""The LangGraph store (issue 12). LangGraph has no conformance suite for stores; its docs say to test
against `InMemoryStore`. So every case of the first part runs against `InMemoryStore` and against
`FabricStore` (the `store` fixture) and expects the same answers; the second part holds the temporal
cases only fabric passes; the last test compiles a real LangGraph graph on a FabricStore."""

from __future__ import annotations

import time
from typing import TypedDict

import pytest
from langgraph.store.base import GetOp, Item, PutOp, SearchItem
from langgraph.store.memory import InMemoryStore

from fabric.integrations.langgraph import FabricStore, ReadOnlyView
from fabric.sql import q
from fabric.types import utcnow


@pytest.fixture
def fabric_store(fab, org) -> FabricStore:
    return FabricStore(fab, org=org)


@pytest.fixture(params=["InMemoryStore", "FabricStore"])
def store(request, fab, afab, org):
    if request.param == "InMemoryStore":
        # The same embedding model fabric uses, so semantic search compares like with like.
        embed = lambda texts: [list(map(float, v)) for v in fab.embedder.embed(list(texts))]  # noqa: E731
        return InMemoryStore(index={"dims": fab.settings.embedding_dim, "embed": embed, "fields": ["text"]})
    return FabricStore(fab, afabric=afab, org=org, index=["text"])  # batch on Fabric, abatch on AsyncFabric


def keys(items) -> list[str]:
    return sorted(i.key for i in items)


# ---------------------------------------------------------------- the same answers as InMemoryStore

def test_put_get_non_ascii(store):
    ns = ("users", "zoë", "記憶")
    store.put(ns, "préférences", {"text": "Zoë préfère le thé vert 🍵", "n": 1})
    item = store.get(ns, "préférences")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (ns, "préférences", {"text": "Zoë préfère le thé vert 🍵", "n": 1})
    assert store.get(ns, "missing") is None
    assert store.get(("users", "zoe", "記憶"), "préférences") is None


def test_put_twice_then_get_the_newer(store):
    ns = ("profile", "ada")
    store.put(ns, "city", {"text": "Ada lives in Paris."})
    first = store.get(ns, "city")
    time.sleep(0.01)
    store.put(ns, "city", {"text": "Ada lives in Rome."})
    item = store.get(ns, "city")
    assert item.value == {"text": "Ada lives in Rome."}
    assert item.updated_at > first.updated_at
    assert [i.value["text"] for i in store.search(ns)] == ["Ada lives in Rome."]


def test_delete_then_get(store):
    ns = ("notes",)
    store.put(ns, "a", {"text": "The spare key is under the mat."})
    store.put(ns, "b", {"text": "The boiler is serviced in May."})
    store.delete(ns, "a")
    assert store.get(ns, "a") is None
    assert keys(store.search(ns)) == ["b"]
    assert keys(store.search(ns, query="where is the spare key")) == ["b"]


def test_batch_reads_see_the_store_before_its_puts(store):
    ns = ("batch",)
    store.put(ns, "x", {"text": "old"})
    results = store.batch([GetOp(ns, "x"), PutOp(ns, "x", {"text": "new"}), GetOp(ns, "x"), GetOp(ns, "y"),
                           PutOp(ns, "y", {"text": "first"}), PutOp(ns, "y", {"text": "second"})])
    assert len(results) == 6
    assert results[0].value == {"text": "old"} and results[2].value == {"text": "old"}
    assert results[1] is None and results[3] is None and results[4] is None and results[5] is None
    assert store.get(ns, "x").value == {"text": "new"}
    assert store.get(ns, "y").value == {"text": "second"}  # the last put of a key wins


def test_namespace_boundaries_are_whole_labels(store):
    store.put(("alice",), "k", {"text": "alice's own"})
    store.put(("alice", "notes"), "k", {"text": "alice's notes"})
    store.put(("alicex",), "k", {"text": "someone else"})
    store.put(("bob", "alice"), "k", {"text": "bob's"})
    got = store.search(("alice",))
    assert sorted(i.namespace for i in got) == [("alice",), ("alice", "notes")]
    assert [i.namespace for i in store.search(("alice", "notes"))] == [("alice", "notes")]
    assert len(store.search(())) == 4


@pytest.mark.parametrize("label,twin", [("a_b", "axb"), ("a%", "abc"), ("50%_off", "50xyoff"),
                                        ("back\\slash", "back\\\\slash")])
def test_like_metacharacters_in_labels_match_literally(store, label, twin):
    store.put(("meta", label), "k", {"text": "the real one"})
    store.put(("meta", twin), "k", {"text": "a lookalike"})
    assert [i.namespace for i in store.search(("meta", label))] == [("meta", label)]
    assert [i.namespace for i in store.search(("meta", label), query="the real one")] == [("meta", label)]


def test_filters(store):
    ns = ("items",)
    for i, colour in enumerate(["red", "green", "blue", "red"]):
        store.put(ns, f"i{i}", {"text": f"item {i}", "colour": colour, "size": i})
    assert keys(store.search(ns, filter={"colour": "red"})) == ["i0", "i3"]
    assert keys(store.search(ns, filter={"colour": {"$eq": "green"}})) == ["i1"]
    assert keys(store.search(ns, filter={"colour": {"$ne": "red"}})) == ["i1", "i2"]
    assert keys(store.search(ns, filter={"size": {"$gt": 1}})) == ["i2", "i3"]
    assert keys(store.search(ns, filter={"size": {"$gte": 1, "$lt": 3}})) == ["i1", "i2"]
    assert keys(store.search(ns, filter={"size": {"$lte": 0}})) == ["i0"]
    assert keys(store.search(ns, filter={"colour": "red", "size": {"$gt": 0}})) == ["i3"]
    assert store.search(ns, filter={"colour": "purple"}) == []
    assert keys(store.search(ns, query="item", filter={"colour": "red"})) == ["i0", "i3"]


def test_pagination(store):
    ns = ("pages",)
    for i in range(7):
        store.put(ns, f"k{i}", {"text": f"page item {i}"})
    pages = [store.search(ns, limit=3, offset=o) for o in (0, 3, 6)]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert keys(i for p in pages for i in p) == [f"k{i}" for i in range(7)]
    assert store.search(ns, limit=3, offset=9) == []
    ranked = [store.search(ns, query="page item", limit=2, offset=o) for o in (0, 2, 4, 6)]
    assert keys(i for p in ranked for i in p) == [f"k{i}" for i in range(7)]
    assert all(isinstance(i, SearchItem) and i.score is not None for p in ranked for i in p)


def test_semantic_search_ranks_the_match_first(store):
    ns = ("kb",)
    store.put(ns, "tea", {"text": "Green tea is brewed at 80 degrees for two minutes."})
    store.put(ns, "bike", {"text": "The bicycle tyres need 4 bar of pressure."})
    store.put(ns, "fern", {"text": "The fern on the balcony needs water every Tuesday."})
    assert store.search(ns, query="how long should I steep green tea", limit=1)[0].key == "tea"
    assert store.search(ns, query="tyre pressure for the bike", limit=1)[0].key == "bike"


def test_list_namespaces(store):
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
               ("x", "c", "f")]:
        store.put(ns, "k", {"text": "x"})
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"),
                                                                      ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("x", "c", "f")]
    assert store.list_namespaces(prefix=("*", "c")) == [("a", "c", "f"), ("x", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "d")) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("a",), suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    everything = store.list_namespaces()
    assert len(everything) == 6 and everything == sorted(everything)
    assert store.list_namespaces(limit=2, offset=1) == everything[1:3]


def test_abatch_answers_as_batch(store, loop_runner):
    ns = ("async",)
    loop_runner.run(store.aput(ns, "k", {"text": "written by aput"}))
    got = loop_runner.run(store.aget(ns, "k"))
    assert got.value == {"text": "written by aput"}
    assert keys(loop_runner.run(store.asearch(ns, query="written"))) == ["k"]
    loop_runner.run(store.adelete(ns, "k"))
    assert loop_runner.run(store.aget(ns, "k")) is None


# ---------------------------------------------------------------- what only fabric answers

def test_as_of_answers_the_past(fabric_store):
    ns = ("company", "meridian")
    fabric_store.put(ns, "ceo", {"text": "Meridian Bio's CEO is Jonathan Hale."})
    between = utcnow()
    fabric_store.put(ns, "ceo", {"text": "Meridian Bio's CEO is Priya Nair."})
    assert fabric_store.get(ns, "ceo").value["text"].endswith("Priya Nair.")
    then = fabric_store.as_of(valid_at=between, known_at=between)
    assert then.get(ns, "ceo").value["text"].endswith("Jonathan Hale.")
    assert [i.value["text"] for i in then.search(ns, query="who is the CEO")] == \
        ["Meridian Bio's CEO is Jonathan Hale."]
    assert then.list_namespaces() == [ns]
    # Valid then, as known now: still Hale (Nair's term starts later); as known then: Hale as well.
    assert fabric_store.as_of(valid_at=between).get(ns, "ceo").value["text"].endswith("Jonathan Hale.")
    with pytest.raises(ReadOnlyView):
        then.put(ns, "ceo", {"text": "rewriting history"})


def test_created_at_is_the_first_put(fabric_store):
    """InMemoryStore gives an updated item a new created_at; fabric keeps the key's first one (as
    LangGraph's PostgresStore does)."""
    fabric_store.put(("c",), "k", {"text": "one"})
    first = fabric_store.get(("c",), "k")
    fabric_store.put(("c",), "k", {"text": "two"})
    second = fabric_store.get(("c",), "k")
    assert second.created_at == first.created_at and second.updated_at > first.updated_at


def test_delete_keeps_history(fabric_store, fab, org):
    ns = ("prefs",)
    fabric_store.put(ns, "theme", {"text": "dark"})
    before = utcnow()
    fabric_store.delete(ns, "theme")
    assert fabric_store.get(ns, "theme") is None
    assert fabric_store.list_namespaces() == []  # InMemoryStore keeps listing the emptied namespace
    assert fabric_store.as_of(valid_at=before, known_at=before).get(ns, "theme").value == {"text": "dark"}
    assert fabric_store.as_of(valid_at=before).get(ns, "theme").value == {"text": "dark"}  # it held then
    assert [d.action for d in fab.decisions(org=org, action="delete")] == ["delete"]
    fabric_store.put(ns, "theme", {"text": "light"})
    assert fabric_store.get(ns, "theme").value == {"text": "light"}


def test_ttl_is_refused_clearly(fabric_store):
    assert fabric_store.supports_ttl is False
    with pytest.raises(NotImplementedError, match="TTL"):
        fabric_store.put(("t",), "k", {"text": "x"}, ttl=5)


def test_bad_value_names_the_field(fabric_store):
    from fabric.errors import ValidationError

    with pytest.raises(ValidationError, match="^value: "):
        fabric_store.batch([PutOp(("t",), "k", ["not", "a", "dict"])])  # type: ignore[arg-type]


def test_store_is_one_org(fab, org):
    mine, theirs = FabricStore(fab, org=org), FabricStore(fab, org=f"{org}-other")
    mine.put(("shared", "name"), "k", {"text": "only mine"})
    assert theirs.get(("shared", "name"), "k") is None
    assert theirs.search(("shared",)) == [] and theirs.list_namespaces() == []


def test_prefix_filter_is_an_index_range(fab, org, pg):
    """fabric_api.under(subject, prefix) with a constant prefix is a range scan on the subject pattern
    index (migration 0004), chosen by the planner in an org of 3,000 keyed memories, in the store's
    listing query as well."""
    from psycopg import sql

    dim = fab.settings.embedding_dim
    pg.execute("INSERT INTO fabric.orgs (org) VALUES (%s) ON CONFLICT DO NOTHING", (org,))
    pg.execute("""
        INSERT INTO fabric.memories (org, id, root_id, content, subject, relation, placement, embedding, created_at)
        SELECT %(org)s, id, id, 'note', 'ns' || (i %% 300) || '.sub', 'k' || i, 'new_branch',
               array_fill(0.1, ARRAY[%(dim)s])::vector, now()
        FROM (SELECT gen_random_uuid() AS id, i FROM generate_series(1, 3000) i) s""", {"org": org, "dim": dim})
    decision = pg.execute("INSERT INTO fabric.decisions (org, id, action) VALUES (%s, gen_random_uuid(), 'place') "
                          "RETURNING id", (org,)).fetchone()[0]
    pg.execute("""
        INSERT INTO fabric.memory_versions (org, memory_id, version, valid_from, state, decision_id, recorded_at)
        SELECT org, id, 1, now() - interval '1 hour', 'live', %s, now() - interval '1 hour'
        FROM fabric.memories WHERE org = %s""", (decision, org))
    pg.execute("ANALYZE fabric.memories")
    pg.execute("ANALYZE fabric.memory_versions")
    plan = "\n".join(r[0] for r in pg.execute(sql.SQL(
        "EXPLAIN SELECT id FROM fabric.memories WHERE org = {} AND fabric_api.under(subject, {})").format(
        sql.Literal(org), sql.Literal("ns7"))).fetchall())
    assert "ix_memories_org_subject_pattern" in plan and "~>=~" in plan, plan
    store_plan = "\n".join(r[0] for r in pg.execute(sql.SQL("EXPLAIN " + q("store_items").replace(
        "%(org)s", "{org}").replace("%(prefix)s", "{prefix}").replace(
        "%(valid_at)s", "now()").replace("%(known_at)s", "now()")).format(
        org=sql.Literal(org), prefix=sql.Literal("ns7"))).fetchall())
    assert "ix_memories_org_subject_pattern" in store_plan, store_plan
    get_plan = "\n".join(r[0] for r in pg.execute(sql.SQL("EXPLAIN " + q("store_get").replace(
        "%(org)s", "{org}").replace("%(subjects)s", "{subjects}").replace(
        "%(relations)s", "{relations}").replace("%(valid_at)s", "now()").replace("%(known_at)s", "now()")).format(
        org=sql.Literal(org), subjects=sql.Literal(["ns7.sub", "ns8.sub"]),
        relations=sql.Literal(["k7", "k8"]))).fetchall())
    assert "ix_memories_key" in get_plan and "Seq Scan on memories" not in get_plan, get_plan
    got = {r[0] for r in pg.execute("SELECT DISTINCT subject FROM fabric.memories "
                                    "WHERE org = %s AND fabric_api.under(subject, 'ns7')", (org,))}
    assert got == {"ns7.sub"}  # not ns70.sub ... ns79.sub


# ---------------------------------------------------------------- a real graph

def test_langgraph_graph_writes_and_searches_through_fabric(fab, org):
    from langgraph.config import get_store
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        user: str
        fact: str
        found: list[str]

    def remember(state: State) -> dict:
        get_store().put(("memories", state["user"]), "fact", {"text": state["fact"]})
        return {}

    def recall(state: State) -> dict:
        hits = get_store().search(("memories", state["user"]), query="what does the user drink")
        return {"found": [h.value["text"] for h in hits]}

    graph = (StateGraph(State).add_node("remember", remember).add_node("recall", recall)
             .add_edge(START, "remember").add_edge("remember", "recall").add_edge("recall", END)
             .compile(store=FabricStore(fab, org=org)))
    out = graph.invoke({"user": "ada", "fact": "Ada drinks her coffee black.", "found": []})
    assert out["found"] == ["Ada drinks her coffee black."]
    out = graph.invoke({"user": "ada", "fact": "Ada drinks oat-milk lattes.", "found": []})
    assert out["found"] == ["Ada drinks oat-milk lattes."]  # the same key: the new value replaced the old
    assert fab.current_value("memories.ada", "fact", org=org).content == "Ada drinks oat-milk lattes."
    assert len(fab.belief_state(org=org)) == 1


def test_keys_compare_case_insensitively(fabric_store):
    """A documented difference from InMemoryStore: fabric normalises relations (lower case, trimmed)."""
    fabric_store.put(("case",), "Colour", {"text": "blue"})
    item = fabric_store.get(("case",), "colour")
    assert item is not None and item.key == "Colour" and item.value == {"text": "blue"}
    fabric_store.put(("case",), "colour", {"text": "green"})
    assert [(i.key, i.value["text"]) for i in fabric_store.search(("case",))] == [("colour", "green")]
