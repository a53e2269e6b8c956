"""The MCP server (issue 13): a real MCP client from the SDK against `fabric mcp` over stdio and
streamable HTTP on loopback. Every tool, bad arguments (a tool error, nothing written), tenancy."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402  (the mcp SDK's HTTP client)
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from .fix_services import free_port  # noqa: E402

FABRIC = str(Path(sys.executable).parent / "fabric")  # the venv's `fabric` command
TOOLS = {"remember", "write_status", "search_memory", "current_value", "memory_history", "belief_state",
         "walk_memory", "retract_memory", "list_decisions", "revert_decision"}


@pytest.fixture
def server_env(fab, database_url, redis_url, data_dir) -> dict[str, str]:
    """The server process talks to the test services; the session worker places its writes."""
    env = dict(os.environ, DATABASE_URL=database_url, REDIS_URL=redis_url, FABRIC_DATA_DIR=str(data_dir),
               FABRIC_QUEUE_NAME=fab.settings.queue_name, FABRIC_RUN_WORKER="false")
    env.pop("FABRIC_ORG", None)
    env.pop("FABRIC_MCP_TOKENS", None)
    return env


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool}: {result.content}"
    return result.structured_content


async def refused(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} should have been refused: {result.structured_content}"
    return " ".join(c.text for c in result.content)


def count_writes(pg, org: str) -> int:
    return pg.execute("SELECT count(*) FROM fabric.writes WHERE org = %s", (org,)).fetchone()[0]


async def exercise_every_tool(client: Client, pg, org: str) -> None:
    listed = await client.list_tools()
    by_name = {t.name: t for t in listed.tools}
    assert set(by_name) == TOOLS
    for name in ("write_status", "search_memory", "current_value", "memory_history", "belief_state",
                 "walk_memory", "list_decisions"):
        assert by_name[name].annotations.read_only_hint is True, name
    for name in ("retract_memory", "revert_decision"):
        assert by_name[name].annotations.destructive_hint is True and not by_name[name].annotations.read_only_hint
    assert by_name["remember"].annotations.destructive_hint is False
    assert "valid_from" in by_name["remember"].input_schema["properties"]

    first = await call(client, "remember", content="Ada Moreau works at Northwind.", subject="Ada Moreau",
                       relation="employer", value="Northwind", valid_from="2021-03-01T00:00:00Z", source="hr")
    assert first["status"] == "placed" and first["decision"] == "new_branch" and first["write_id"]
    refine = await call(client, "remember", content="Ada Moreau works at Northwind on the payments team.",
                        subject="Ada Moreau", relation="employer", value="Northwind",
                        valid_from="2021-03-01T00:00:00+00:00")
    assert refine["decision"] == "child_update" and refine["target_id"] == first["memory_id"]
    dup = await call(client, "remember", content="Ada Moreau works at Northwind.", subject="Ada Moreau",
                     relation="employer", value="Northwind", valid_from="2021-03-01T00:00:00Z")
    assert dup["status"] == "duplicate" and dup["memory_id"] == first["memory_id"]
    fork = await call(client, "remember", content="Ada Moreau works at Contoso.", subject="Ada Moreau",
                      relation="employer", value="Contoso", valid_from="2024-06-01T00:00:00Z")
    assert fork["decision"] == "contradiction_fork"
    status = await call(client, "write_status", write_id=fork["write_id"])
    assert status["status"] == "placed" and status["memory_id"] == fork["memory_id"]

    now = await call(client, "current_value", subject="Ada Moreau", relation="employer")
    assert now["memory"]["value"] == "Contoso"
    then = await call(client, "current_value", subject="Ada Moreau", relation="employer",
                      valid_at="2022-01-01T00:00:00Z")
    assert then["memory"]["value"] == "Northwind"
    before_fork = await call(client, "current_value", subject="Ada Moreau", relation="employer",
                             known_at="2000-01-01T00:00:00Z")
    assert before_fork == {"found": False, "memory": None}

    hits = await call(client, "search_memory", query="Where does Ada Moreau work?", k=3)
    assert hits["memories"][0]["value"] == "Contoso"
    assert all(m["value"] != "Northwind" for m in hits["memories"]), "a superseded version leaked into search"
    old_hits = await call(client, "search_memory", query="Where does Ada Moreau work?", k=3,
                          valid_at="2022-01-01T00:00:00Z", context=1)
    assert {m["value"] for m in old_hits["memories"]} == {"Northwind"}
    history = await call(client, "memory_history", memory_id=fork["memory_id"])
    assert [m["value"] for m in history["memories"]][-1] == "Contoso" and len(history["memories"]) >= 2
    belief = await call(client, "belief_state", valid_at="2022-01-01T00:00:00Z")
    assert {m["id"] for m in belief["memories"]} == {first["memory_id"], refine["memory_id"]}
    walked = await call(client, "walk_memory", root_id=first["memory_id"], include_superseded=True)
    assert {m["id"] for m in walked["memories"]} >= {first["memory_id"], refine["memory_id"]}
    decisions = await call(client, "list_decisions", kind="contradiction_fork")
    assert [d["id"] for d in decisions["decisions"]] == [fork["decision_id"]]

    reverted = await call(client, "revert_decision", decision_id=fork["decision_id"], reason="test: wrong")
    assert reverted["decision_id"]
    again = await call(client, "current_value", subject="Ada Moreau", relation="employer")
    assert again["memory"]["value"] == "Northwind"
    retracted = await call(client, "retract_memory", memory_id=refine["memory_id"], reason="test: wrong team")
    assert retracted["decision_id"]
    after = await call(client, "belief_state")
    assert refine["memory_id"] not in {m["id"] for m in after["memories"]}

    # Bad arguments: a clear tool error naming the field, and nothing written.
    written = count_writes(pg, org)
    naive = await refused(client, "remember", content="Ada Moreau works at Initech.", subject="Ada Moreau",
                          relation="employer", value="Initech", valid_from="2025-01-01T00:00:00")
    assert "valid_from" in naive and "no timezone" in naive
    assert "subject" in await refused(client, "remember", content="Ada works somewhere.", relation="employer")
    assert "content" in await refused(client, "remember", content="   ")
    assert "plan_tier" in await refused(client, "remember", content="Ada is on Pro.", kind="plan_tier")
    assert count_writes(pg, org) == written
    assert "write_id" in await refused(client, "write_status", write_id="not-an-id")
    assert "valid_at" in await refused(client, "search_memory", query="Ada", valid_at="yesterday")
    assert "k" in await refused(client, "search_memory", query="Ada", k=0)
    assert "not found" in await refused(client, "memory_history", memory_id="00000000-0000-0000-0000-000000000000")


def test_stdio_every_tool_and_bad_arguments(server_env, org, pg):
    params = StdioServerParameters(command=FABRIC, args=["mcp", "--org", org], env=server_env)

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await exercise_every_tool(client, pg, org)

    asyncio.run(main())


@pytest.fixture
def http_server(server_env, org, tmp_path):
    """`fabric mcp --transport http` with two orgs, each with its own token."""
    port = free_port()
    tokens = {org: "token-a-" + "x" * 24, org + "-b": "token-b-" + "y" * 24}
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(tokens))
    log = open(tmp_path / "mcp-http.log", "wb")
    proc = subprocess.Popen([FABRIC, "mcp", "--transport", "http", "--port", str(port), "--tokens-file", str(path)],
                            env=server_env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, (tmp_path / "mcp-http.log").read_text()
        assert time.monotonic() < deadline, "the HTTP server did not come up"
        time.sleep(0.2)
    yield url, tokens
    proc.terminate()
    proc.wait(15)
    log.close()


@asynccontextmanager
async def http_client(url: str, token: str | None, host: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if host:
        headers["Host"] = host
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with Client(streamable_http_client(url + "/mcp", http_client=http), read_timeout_seconds=120) as c:
            yield c


def test_http_every_tool_tenancy_and_refusals(http_server, org, pg):
    url, tokens = http_server
    other = org + "-b"

    async def main() -> None:
        async with http_client(url, tokens[org]) as a:
            await exercise_every_tool(a, pg, org)
            mine = await call(a, "remember", content="Bo Lind owns a red kayak.", subject="Bo Lind",
                              relation="boat", value="red kayak")
            assert mine["status"] == "placed"
        async with http_client(url, tokens[other]) as b:
            # Org B sees nothing of org A: not by search, key, belief state, id, or decision.
            assert (await call(b, "search_memory", query="Ada Moreau Bo Lind kayak employer"))["memories"] == []
            assert (await call(b, "current_value", subject="Bo Lind", relation="boat"))["found"] is False
            assert (await call(b, "belief_state"))["memories"] == []
            assert (await call(b, "list_decisions"))["decisions"] == []
            assert "not found" in await refused(b, "write_status", write_id=mine["write_id"])
            assert "not found" in await refused(b, "memory_history", memory_id=mine["memory_id"])
            assert "not found" in await refused(b, "revert_decision", decision_id=mine["decision_id"])
            assert "not found" in await refused(b, "retract_memory", memory_id=mine["memory_id"], reason="x")
            own = await call(b, "remember", content="Bo Lind owns a blue canoe.", subject="Bo Lind",
                             relation="boat", value="blue canoe")
            assert own["decision"] == "new_branch", "org A's memory must not be a candidate for org B's write"
        async with http_client(url, tokens[org]) as a:
            boat = await call(a, "current_value", subject="Bo Lind", relation="boat")
            assert boat["memory"]["value"] == "red kayak"

    asyncio.run(main())
    # Refused before any tool runs: no token, a wrong token, a Host not on the allow-list.
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    assert httpx.post(url + "/mcp", json=init, headers=accept).status_code == 401
    wrong = httpx.post(url + "/mcp", json=init, headers={**accept, "Authorization": "Bearer nope-" + "z" * 20})
    assert wrong.status_code == 401 and "unknown token" in wrong.json()["error"]
    rebound = httpx.post(url + "/mcp", json=init, headers={**accept, "Authorization": f"Bearer {tokens[org]}",
                                                           "Host": "evil.example:80"})
    assert rebound.status_code == 421
    ok = httpx.post(url + "/mcp", json=init, headers={**accept, "Authorization": f"Bearer {tokens[org]}"})
    assert ok.status_code == 200
    assert httpx.get(url + "/health").json() == {"status": "ok"}


def test_remember_without_a_worker_answers_pending_with_the_write_id(server_env, org, pg):
    """Never a bare "queued": the write is durable, and its id lets the model follow it up."""
    env = dict(server_env, FABRIC_QUEUE_NAME=f"nobody-listens-{org}")
    params = StdioServerParameters(command=FABRIC, args=["mcp", "--org", org, "--remember-timeout", "1"], env=env)

    async def main() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=120) as client:
            answer = await call(client, "remember", content="Uma Sato plays the oboe.")
            assert answer["status"] == "pending" and answer["decision"] is None
            assert "write_status" in answer["message"] and "no worker is listening" in answer["message"]
            later = await call(client, "write_status", write_id=answer["write_id"])
            assert later["status"] == "pending" and later["write_id"] == answer["write_id"]
            return answer

    try:
        answer = asyncio.run(main())
        stored = pg.execute("SELECT content, status FROM fabric.writes WHERE org = %s AND id = %s",
                            (org, answer["write_id"])).fetchone()
        assert stored == ("Uma Sato plays the oboe.", "pending")
    finally:
        pg.execute("DELETE FROM fabric.writes WHERE org = %s", (org,))


@pytest.mark.parametrize("args, says", [
    (["--transport", "http", "--host", "0.0.0.0", "--org", "acme"], "without tokens"),
    (["--transport", "carrier-pigeon"], "use stdio or http"),
    (["--transport", "http", "--org", "acme"], "drop --org"),
])
def test_unsafe_or_wrong_configurations_are_refused(server_env, args, says):
    env = dict(server_env, FABRIC_MCP_TOKENS=json.dumps({"acme": "t" * 20}) if "drop --org" in says else "")
    done = subprocess.run([FABRIC, "mcp", *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and says in " ".join(done.stderr.split()), done.stderr
