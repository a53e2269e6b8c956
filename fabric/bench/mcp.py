"""`fabric bench mcp`: the round trip of `search_memory` through a real MCP client, over stdio and
streamable HTTP, against the same search called in-process (the baseline) in the same run."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

from ..api import Fabric

PEOPLE = ["Ada", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kemal", "Lea"]
PLACES = ["Lyon", "Accra", "Osaka", "Quito", "Bergen", "Tunis", "Perth", "Cork", "Brno", "Pune"]
THINGS = ["works at", "lives in", "studies in", "moved to", "opened a shop in", "teaches in"]


def corpus(n: int, seed: int = 13) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(PEOPLE)} {rng.randint(1, 999)} {rng.choice(THINGS)} {rng.choice(PLACES)}."
            for _ in range(n)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _summary(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {"p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 2), "n": len(ordered)}


async def _timed(n: int, call: Callable[[str], Awaitable[Any]], queries: list[str]) -> list[float]:
    await call(queries[0])  # warm up: the embedder and the connection
    out = []
    for i in range(n):
        started = time.perf_counter()
        await call(queries[i % len(queries)])
        out.append((time.perf_counter() - started) * 1000)
    return out


def run(fab: Fabric, *, queries: int = 100, memories: int = 300) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    org = f"bench-mcp-{uuid.uuid4().hex[:8]}"
    fab.write_many([{"content": text, "org": org} for text in corpus(memories)])
    fab.drain(org, timeout=600)
    asked = [f"Where does {p} live?" for p in PEOPLE]
    load_before = os.getloadavg()

    async def in_process(q: str) -> Any:
        return await asyncio.to_thread(fab.search, q, org=org, k=5)

    fabric_cmd = str(Path(sys.executable).parent / "fabric")
    env = dict(os.environ, DATABASE_URL=fab.database_url, REDIS_URL=fab.redis_url, FABRIC_RUN_WORKER="false",
               FABRIC_QUEUE_NAME=fab.settings.queue_name)

    async def over(client: Client) -> list[float]:
        async def call(q: str) -> Any:
            result = await client.call_tool("search_memory", {"query": q, "k": 5})
            if result.is_error:
                raise RuntimeError(f"search_memory failed: {result.content}")
        return await _timed(queries, call, asked)

    async def measure() -> dict[str, list[float]]:
        out = {"in_process": await _timed(queries, in_process, asked)}
        params = StdioServerParameters(command=fabric_cmd, args=["mcp", "--org", org], env=env)
        async with Client(params, read_timeout_seconds=120) as client:
            out["stdio"] = await over(client)
        port = _free_port()
        server = subprocess.Popen([fabric_cmd, "mcp", "--transport", "http", "--org", org, "--port", str(port)],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            await _wait_healthy(url, server)
            async with Client(url + "/mcp", read_timeout_seconds=120) as client:
                out["http"] = await over(client)
        finally:
            server.terminate()
            server.wait(15)
        return out

    samples = asyncio.run(measure())
    result: dict[str, Any] = {"org": org, "memories": memories, "queries": queries,
                              "load_average_before": [round(x, 2) for x in load_before],
                              "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    base = statistics.median(samples["in_process"])
    for name, ms in samples.items():
        result[name] = _summary(ms)
        result[name]["x_in_process"] = round(statistics.median(ms) / base, 2)
    return result


async def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as http:
        while True:
            try:
                if (await http.get(url + "/health", timeout=2)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the MCP HTTP server did not come up")
            await asyncio.sleep(0.2)


def print_report(res: dict[str, Any], console) -> None:
    from rich.table import Table

    table = Table(title=f"search_memory round trip ({res['queries']} queries, {res['memories']} memories, "
                        f"load average {res['load_average_before'][0]} → {res['load_average_after'][0]})")
    for col in ("path", "p50 ms", "p95 ms", "× in-process"):
        table.add_column(col, justify="right" if col != "path" else "left")
    labels = {"in_process": "Fabric.search in-process (baseline)", "stdio": "MCP over stdio",
              "http": "MCP over streamable HTTP"}
    for key, label in labels.items():
        r = res[key]
        table.add_row(label, f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}", f"{r['x_in_process']:.2f}")
    console.print(table)
