"""p50 latency of one search through each API on the same data: Fabric.search (the baseline),
AsyncFabric.search, and FabricStore.search (LangGraph store: a namespace-prefix search plus the
item lookup), interleaved query by query so machine load hits all three alike.

    python scripts/bench_api_latency.py [--items 300] [--rounds 60]

Uses DATABASE_URL / REDIS_URL when set, else the embedded servers in a temporary folder."""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from fabric import AsyncFabric, Fabric, servers
from fabric.integrations.langgraph import FabricStore

TOPICS = ["coffee", "cycling", "gardening", "chess", "sailing", "baking", "jazz", "astronomy", "pottery", "hiking"]
QUERIES = ["what does the user like to drink", "which sport do they do on weekends", "plants on the balcony",
           "favourite board game", "boats and the sea", "bread recipes", "music they listen to",
           "stars and telescopes", "clay and ceramics", "mountain trails"]


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def main(items: int, rounds: int) -> None:
    own_dir = not os.environ.get("FABRIC_DATA_DIR")
    data_dir = Path(os.environ.get("FABRIC_DATA_DIR") or tempfile.mkdtemp(prefix="fabric-bench-"))
    org = f"bench-{uuid.uuid4().hex[:8]}"
    fab = await asyncio.to_thread(Fabric.connect, data_dir=data_dir)
    afab = await AsyncFabric.connect(fab.database_url, fab.redis_url, data_dir=data_dir, run_worker=False,
                                     queue_name=fab.settings.queue_name)
    store = FabricStore(fab, afabric=afab, org=org, index=["text"])
    try:
        started = time.perf_counter()
        puts = [((f"user{i % 20}", TOPICS[i % len(TOPICS)]), f"note{i}",
                 {"text": f"User {i % 20} wrote note {i} about {TOPICS[i % len(TOPICS)]}."}) for i in range(items)]
        await asyncio.to_thread(lambda: [store.put(ns, k, v) for ns, k, v in puts])
        print(f"loaded {items} items in {time.perf_counter() - started:.1f} s (org {org})")
        for q in QUERIES:  # warm up: model, pools, plans
            fab.search(q, org=org, k=10)
            await afab.search(q, org=org, k=10)
            store.search((), query=q, limit=10)
        calls = {"Fabric.search (baseline)": lambda q: fab.search(q, org=org, k=10),
                 "AsyncFabric.search": lambda q: afab.search(q, org=org, k=10),
                 "FabricStore.search (batch)": lambda q: store.search((), query=q, limit=10),
                 "FabricStore.asearch (abatch)": lambda q: store.asearch((), query=q, limit=10)}
        samples: dict[str, list[float]] = {name: [] for name in calls}
        cpu0 = time.process_time()
        for r in range(rounds):
            q = QUERIES[r % len(QUERIES)]
            for name, call in calls.items():
                t = time.perf_counter()
                result = call(q)
                if asyncio.iscoroutine(result):
                    await result
                samples[name].append(time.perf_counter() - t)
        cpu = time.process_time() - cpu0
        base = p50_ms(samples["Fabric.search (baseline)"])
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f}; {rounds} rounds; client CPU {cpu:.1f} s")
        print(f"{'call':32} {'p50 ms':>8} {'vs Fabric.search':>17}")
        for name, times in samples.items():
            p = p50_ms(times)
            print(f"{name:32} {p:8.1f} {p - base:+9.1f} ms ({p / base:4.2f}x)")
    finally:
        await afab.close()
        fab.close()
        if own_dir:  # the embedded servers this run started in its temporary folder
            servers.stop_postgres(data_dir)
            servers.stop_redis(data_dir)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args()
    asyncio.run(main(args.items, args.rounds))
