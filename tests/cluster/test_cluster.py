"""The product on three simulated hosts over a three-node NATS cluster (ops/cluster): every
stream replicated three times, memory and search on each host, read-your-writes from one
host to another, and cron firing once per tick however many hosts run it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engine import Client, Context, Worker, connect
from ops.cluster.cluster import Cluster, start_on_free_ports
from tests.fixtures import eventually

SECRET = "cluster-test-secret"
AUTH = {"Authorization": f"Bearer {SECRET}"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    env = {
        "HOME": str(root / "home"),
        "AGENTMEMORY_SECRET": SECRET,
        "ENGINE_LOG_LEVEL": "WARNING",
    }
    c = start_on_free_ports(root / "data", env)
    try:
        yield c
    finally:
        c.kill()


async def _client(cluster: Cluster) -> Client:
    return Client(await connect(cluster.nats.url, str(cluster.credentials)))


def _observe_body(word: str) -> dict[str, Any]:
    return {
        "hookType": "post_tool_use",
        "sessionId": "cluster-session",
        "project": "cluster",
        "cwd": "/work/cluster",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "eventId": f"toolu_{word}",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": f"grep -r {word} src"},
            "tool_output": f"src/{word}.py: def {word}(): pass",
        },
    }


def test_each_host_runs_memory_and_search_and_serves_rest(cluster: Cluster) -> None:
    for h in cluster.hosts:
        assert h.worker_pids("workers.memory"), h.name
        assert h.worker_pids("workers.search"), h.name
        assert h.worker_pids("workers.lifecycle"), h.name
        r = httpx.get(f"{h.rest_url}/agentmemory/livez", timeout=5)
        assert r.status_code == 200, h.name
        viewer = httpx.get(f"http://127.0.0.1:{h.port(2)}/healthz", timeout=5)
        assert viewer.status_code == 200, h.name


async def test_a_write_on_one_host_is_found_at_once_from_the_others(cluster: Cluster) -> None:
    hosts = cluster.hosts
    pairs = [(w, r) for w in hosts for r in hosts if w is not r]
    async with httpx.AsyncClient(headers=AUTH, timeout=20) as http:
        for writer, reader in pairs:
            # Under load: the read models have a backlog to apply when the read comes.
            burst = asyncio.gather(
                *(http.post(f"{writer.rest_url}/agentmemory/observe",
                            json=_observe_body(f"numbat{uuid.uuid4().hex[:10]}"))
                  for _ in range(50))
            )  # fmt: skip
            await asyncio.sleep(0.2)
            word = f"quokka{uuid.uuid4().hex[:10]}"
            r = await http.post(f"{writer.rest_url}/agentmemory/observe", json=_observe_body(word))
            assert r.status_code == 201, r.text
            oid = r.json()["observationId"]
            # No wait, no retry: the reader's search sees the acknowledged write.
            found = await http.post(f"{reader.rest_url}/agentmemory/search", json={"query": word})
            assert found.status_code == 200, found.text
            ids = [hit["id"] for hit in found.json()["results"]]
            assert oid in ids, (writer.name, reader.name, found.json())
            got = await http.get(f"{reader.rest_url}/agentmemory/observations/{oid}")
            assert got.status_code == 200, got.text
            replies = await burst
            # 201 stored, or 202: JetStream did not ack in time on this loaded machine and the
            # inbox retries it (acked means stored, or kept to be stored): found once stored
            odd = [
                (x.status_code, x.text[:200]) for x in replies if x.status_code not in (201, 202)
            ]
            assert not odd, odd
            for late in (x.json()["observationId"] for x in replies if x.status_code == 202):

                async def stored(oid: str = late, url: str = writer.rest_url) -> bool:
                    r = await http.get(f"{url}/agentmemory/observations/{oid}")
                    return r.status_code == 200

                await eventually(stored, timeout=60, what=f"retried observation {late} stored")


async def test_cron_fires_once_per_tick_across_the_hosts(cluster: Cluster) -> None:
    calls: Counter[str] = Counter()
    worker = Worker("cluster-ticks")

    @worker.function("cluster_test::tick")
    async def tick(req: Any, ctx: Context) -> None:
        calls[ctx.headers.get("Idempotency-Key", "?")] += 1

    worker.trigger("cron", "cluster_test::tick", schedule="@every 1s")
    client = await _client(cluster)
    try:
        await worker.start(client.nc, client)
        await eventually(lambda: _true(calls), timeout=20, what="a first tick")
        first, started = sum(calls.values()), time.monotonic()
        await eventually(lambda: _true(sum(calls.values()) >= first + 5), timeout=20,
                         what="five more ticks")  # fmt: skip
        elapsed = time.monotonic() - started
        fired = sum(calls.values()) - first
        assert max(calls.values()) == 1, calls  # no tick handled by two hosts
        assert fired <= elapsed + 2, (fired, elapsed)  # one per second, not one per host
    finally:
        await worker.drain()
        await client.nc.close()


async def _true(value: object) -> bool:
    return bool(value)


async def test_every_stream_the_product_made_has_three_replicas(cluster: Cluster) -> None:
    with httpx.Client(headers=AUTH, timeout=10) as http:
        r = http.post(f"{cluster.hosts[0].rest_url}/agentmemory/observe",
                      json=_observe_body("wombat"))  # fmt: skip
        assert r.status_code in (200, 201), r.text
    client = await _client(cluster)
    try:
        streams = await client.nc.jetstream().streams_info()
        assert len(streams) >= 10, [s.config.name for s in streams]
        bad = {}
        for s in streams:
            peers = 1 + len(s.cluster.replicas or []) if s.cluster else 1
            if (s.config.num_replicas, peers) != (3, 3):
                bad[s.config.name] = (s.config.num_replicas, peers)
        assert not bad, f"streams not on three nodes: {bad}"
        names = {s.config.name for s in streams}
        for expected in ("MEM_EVENTS", "KV_mem_observation_index", "KV_engine_triggers", "CRON",
                         "OBJ_mem_search_snapshots", "ENGINE_TRACES"):  # fmt: skip
            assert expected in names
    finally:
        await client.nc.close()
