"""Knowledge graph at scale: feed throughput and `mem::graph-query` latency over a
deterministic synthetic graph built through the real feed path.

    .venv/bin/python -m ops.bench.graph --quick     # 6,000 observations (under a minute)
    .venv/bin/python -m ops.bench.graph             # 50,000 observations

A real nats-server (temp store) and the real lifecycle worker: N observations stored as the
write path stores them (not measured), `mem::digest-events` folds them into `mem_graph` (feed
events/s), then `mem::graph-query` is timed for the top-nodes listing, a text query and
walks of depth 2 and 3 from the best connected nodes, in pages of 50 (the MCP tool's
default; the top listing also at upstream's default page of 500: `top500_p50_ms`). The peer, in the same run, is the
floor: the same edges read once into a Python dict and walked breadth-first in memory
(same depth, live edges only). `ratio` = walk p50 over in-memory walk p50.

The last line is one JSON object (walk_p50_ms, walk_p99_ms, top_p50_ms, query_p50_ms,
feed_events_per_s, nodes, edges, inmem_walk_p50_ms, ratio, ...).
"""

# ruff: noqa: E402

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere, as the README shows

from engine import Client, FunctionError, connect
from engine.server import NatsServer
from functions.kernel.clock import iso
from functions.kernel.records import GRAPH_BUCKET, GraphEdge, Observation
from functions.kernel.store import MemoryStore
from ops.bench.harness import emit, pct, spawn_python

T0 = datetime(2026, 3, 1, tzinfo=UTC)
FILES = [f"src/pkg{m}/mod{n}.py" for m in range(60) for n in range(20)]
CONCEPTS = [f"topic{n}" for n in range(300)]
PROJECTS = ("alpha", "beta")
LIMIT = 50
"""Page size of the timed queries: the MCP tool's default."""


def _zipf(rng: random.Random, pool: list[str], k: int) -> list[str]:
    """k distinct picks, skewed: a few files and topics are hubs, most are rare (as in a
    real code base), so the graph has high-degree nodes to walk from."""
    out: list[str] = []
    while len(out) < k:
        x = pool[min(len(pool) - 1, int(rng.paretovariate(0.3)) - 1)]
        if x not in out:
            out.append(x)
    return out


def observation(i: int, rng: random.Random) -> Observation:
    files = _zipf(rng, FILES, rng.randint(2, 4))
    return Observation(
        id="obs_" + hashlib.sha256(f"graph-bench/{i}".encode()).hexdigest()[:24],
        session_id=f"gb-{i // 100:05d}",
        project=PROJECTS[(i // 100) % len(PROJECTS)],
        hook_type="post_tool_use",
        timestamp=iso(T0 + timedelta(seconds=i)),
        type="file_edit",
        title=f"Edited {files[0]}",
        files=files,
        concepts=_zipf(rng, CONCEPTS, 2),
    )


async def publish(store: MemoryStore, n: int) -> None:
    rng = random.Random(n)
    items = [observation(i, rng) for i in range(n)]
    for i in range(0, n, 500):  # acked writes, 500 in flight; not what is measured
        await asyncio.gather(*(store.add_observation(o) for o in items[i : i + 500]))


async def feed(client: Client, n: int) -> float:
    """Seconds until the worker folded all n events (a cron run may hold the lease: then
    wait for the cursor rather than count its work twice)."""
    life = await client.bucket("mem_lifecycle")
    t = time.perf_counter()
    while True:
        try:
            await client.call("mem::digest-events", {}, timeout=900)
        except FunctionError as err:
            if err.code != "CONFLICT":
                raise
            await asyncio.sleep(0.1)
        cur: int | None = await life.get("cursor.graph", int)
        if (cur or 0) >= n:
            return time.perf_counter() - t


async def timed(call: Callable[[], Awaitable[Any]], reps: int) -> tuple[list[float], Any]:
    out: list[float] = []
    last: Any = None
    for _ in range(reps):
        t = time.perf_counter()
        last = await call()
        out.append((time.perf_counter() - t) * 1000)
    return out, last


def inmem_walk(adj: dict[str, list[tuple[str, str]]], start: str, depth: int) -> int:
    """The floor: breadth-first over live edges held in a dict (what the query computes)."""
    seen = {start}
    edges: set[str] = set()
    frontier = [start]
    for _ in range(depth):
        nxt: list[str] = []
        for node in frontier:
            for other, key in adj.get(node, ()):
                edges.add(key)
                if other not in seen:
                    seen.add(other)
                    nxt.append(other)
        frontier = nxt
        if not frontier:
            break
    return len(seen)


def ms(values: list[float], p: float) -> float:
    return round(pct(values, p), 2)


async def measure(n: int, reps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        srv = NatsServer(store_dir=Path(tmp) / "js").start()
        worker = None
        try:
            nc = await connect(srv.url)
            client = Client(nc)
            store = await MemoryStore(client).open()
            t = time.perf_counter()
            await publish(store, n)
            print(f"published {n} events in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            worker = spawn_python(
                ["-m", "workers.lifecycle"],
                env={"ENGINE_NATS_URL": srv.url},
                ready_mark="ENGINE_WORKER_READY",
            )
            feed_s = await feed(client, n)
            print(f"fed in {feed_s:.1f} s", file=sys.stderr)

            def q(body: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
                return lambda: client.call("mem::graph-query", body, timeout=120)

            stats = await client.call("mem::graph-stats", {})
            # Pages of LIMIT, as the MCP tool asks; the top listing also at upstream's
            # default page (500 nodes and every edge among them: a big answer).
            top_ms, top = await timed(q({"limit": LIMIT}), reps)
            top500_ms, _ = await timed(q({}), max(1, reps // 5))
            query_ms, found = await timed(q({"query": "pkg1/", "limit": LIMIT}), reps)
            starts = [x["id"] for x in top["nodes"][:5]]
            walk2: list[float] = []
            walk3: list[float] = []
            walked: list[int] = []
            for s in starts:
                got, res = await timed(
                    q({"startNodeId": s, "maxDepth": 2, "limit": LIMIT}), max(1, reps // 5)
                )
                walk2 += got
                got, res = await timed(
                    q({"startNodeId": s, "maxDepth": 3, "limit": LIMIT}), max(1, reps // 5)
                )
                walk3 += got
                walked.append(res["totalNodes"])

            # The peer: every live edge read once into a dict, then walked in memory.
            adj: dict[str, list[tuple[str, str]]] = defaultdict(list)
            graph = await client.bucket(GRAPH_BUCKET)
            async for key, e in graph.scan("e.>", GraphEdge):
                if e.valid_to is None:
                    adj[e.src].append((e.dst, key))
                    adj[e.dst].append((e.src, key))
            mem2: list[float] = []
            mem3: list[float] = []
            for s in starts:
                for _ in range(max(1, reps // 5)):
                    t = time.perf_counter()
                    inmem_walk(adj, s, 2)
                    mem2.append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    inmem_walk(adj, s, 3)
                    mem3.append((time.perf_counter() - t) * 1000)
            await nc.close()
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(30)
            srv.kill()
    walk = walk2 + walk3
    mem = mem2 + mem3
    return {
        "observations": n,
        "nodes": stats["totalNodes"],
        "edges": stats["totalEdges"],
        "feed_s": round(feed_s, 2),
        "feed_events_per_s": round(n / feed_s, 1),
        "top_p50_ms": ms(top_ms, 50),
        "top_p99_ms": ms(top_ms, 99),
        "top500_p50_ms": ms(top500_ms, 50),
        "query_p50_ms": ms(query_ms, 50),
        "query_p99_ms": ms(query_ms, 99),
        "query_matched": found["totalNodes"],
        "walk_p50_ms": ms(walk, 50),
        "walk_p99_ms": ms(walk, 99),
        "walk2_p50_ms": ms(walk2, 50),
        "walk3_p50_ms": ms(walk3, 50),
        "walk3_nodes": max(walked, default=0),
        "inmem_walk_p50_ms": round(pct(mem, 50), 3),
        "inmem_walk3_p50_ms": round(pct(mem3, 50), 3),
        "ratio": round(pct(walk, 50) / max(pct(mem, 50), 1e-6), 1),
    }


async def main(quick: bool) -> None:
    n, reps = (6_000, 10) if quick else (50_000, 30)
    out = await measure(n, reps)
    print(
        f"{out['nodes']} nodes, {out['edges']} edges from {n} observations: feed "
        f"{out['feed_events_per_s']} events/s; top {out['top_p50_ms']} ms, query "
        f"{out['query_p50_ms']} ms, walk p50 {out['walk_p50_ms']} / p99 {out['walk_p99_ms']} ms "
        f"(in memory {out['inmem_walk_p50_ms']} ms, x{out['ratio']})"
    )
    emit({"bench": "graph", "quick": quick, **out})


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="6,000 observations")
    args = ap.parse_args()
    asyncio.run(main(args.quick))
