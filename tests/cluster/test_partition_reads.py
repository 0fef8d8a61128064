"""Reads survive a partition: a host's NATS node cut off from its two peers (each node in a
network namespace of its own, ops/netns.py; the cut both ways, while the host's own
clients still reach it) keeps answering searches from the host's read model, at once and
marked `stale` with how far they reach, instead of failing; writes through it are still
refused (nothing is acknowledged that the majority did not store), and after the heal the
same searches are fresh again and find what the majority wrote meanwhile. The host's
worker, given every node, is on its own (engine/_connect.py puts a node of this machine
first). Skipped, with the reason, where network namespaces cannot be made."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from engine import BusError, Client, connect
from functions.kernel.records import EVENTS_STREAM, Observation
from functions.kernel.store import MemoryStore
from ops.cluster.nodes import NatsCluster, NodePorts, free_ports
from ops.netns import Lab, available
from tests.fixtures import ROOT, eventually

OK, WHY = available()
pytestmark = [pytest.mark.skipif(not OK, reason=WHY or "ok"), pytest.mark.timeout(300)]
CUT = 2
"""The node cut off (with the search worker of its host)."""


def _obs(i: int, word: str) -> Observation:
    return Observation(
        id=f"obs_part{i}", session_id="s", project="p", hook_type="post_tool_use",
        timestamp="2026-12-01T10:00:00.000Z", title=f"ran the {word}", narrative=f"{word} output",
    )  # fmt: skip


async def _publish(store: MemoryStore, i: int, word: str, timeout: float = 5.0) -> bool:
    # False from add_observation is a retry of a write that was stored: a success too
    await asyncio.wait_for(store.add_observation(_obs(i, word)), timeout)
    return True


async def _search(client: Client, word: str) -> dict[str, Any]:
    out: dict[str, Any] = await client.call(
        "mem::search", {"query": word, "format": "compact", "project": "p"}, timeout=5
    )
    return out


def _clients_of(cluster: NatsCluster, k: int) -> list[str]:
    """Names of the client connections node k serves (its monitoring endpoint)."""
    node = cluster.nodes[k]
    url = f"http://{node.host}:{node.monitor_port}/connz"
    with urllib.request.urlopen(url, timeout=5) as r:
        return [str(c.get("name", "")) for c in json.loads(r.read()).get("connections", [])]


async def _not_leading(client: Client, node: str) -> None:
    """MEM_EVENTS led by another node than `node` (a leader cut off goes on answering
    reads as leader until it notices it lost its peers: here the cut node is a follower)."""
    js = client.nc.jetstream()

    async def elsewhere() -> bool:
        info = await js.stream_info(EVENTS_STREAM)
        leader = info.cluster.leader if info.cluster else None
        if leader == node:
            await client.nc.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{EVENTS_STREAM}", b"")
            return False
        return leader is not None

    await eventually(elsewhere, timeout=30, interval=0.5, what="MEM_EVENTS led elsewhere")


async def _scenario(cluster: NatsCluster, lab: Lab, tmp: Path) -> None:
    # The host is given every node, as a cluster host is; it talks to its own first.
    env = dict(os.environ, PYTHONPATH=str(ROOT), ENGINE_NATS_URL=cluster.url,
               ENGINE_REPLICAS="3", ENGINE_LOG_LEVEL="WARNING", EMBEDDING_PROVIDER="none",
               AGENTMEMORY_DATA_DIR=str(tmp / "host"))  # fmt: skip
    worker = subprocess.Popen(lab.exec_argv(CUT, [sys.executable, "-m", "workers.search"]),
                              env=env, cwd=ROOT, stderr=subprocess.PIPE)  # fmt: skip
    assert worker.stderr is not None
    try:
        for raw in worker.stderr:
            if b"ENGINE_WORKER_READY" in raw:
                break
        else:
            raise RuntimeError("the search worker did not start")
        assert "search" in _clients_of(cluster, CUT), "the host's worker is on its own node"
        host = Client(await connect(cluster.urls[CUT]), replicas=3)  # the cut host's own
        majority = Client(await connect(cluster.urls[0]), replicas=3)
        majority_store = await MemoryStore(majority).open()  # before the cut: all three nodes
        host_store = await MemoryStore(host).open()
        await _not_leading(majority, cluster.nodes[CUT].server_name)
        try:
            await _publish(majority_store, 1, "wombatizer")
            before = await eventually(lambda: _search(host, "wombatizer"), timeout=30,
                                      what="the first write found")  # fmt: skip
            assert [h["id"] for h in before["results"]] == ["obs_part1"]
            assert "stale" not in before

            for j in range(3):
                if j != CUT:
                    lab.blackhole(CUT, j)
                    lab.blackhole(j, CUT)
            began = time.monotonic()
            cut = await _search(host, "wombatizer")
            took = time.monotonic() - began
            assert [h["id"] for h in cut["results"]] == ["obs_part1"], cut
            assert cut["stale"] is True and cut["indexedSeq"] >= 1, cut
            assert cut["indexedAt"].startswith("20"), cut
            assert took < 2.0, took  # the reach bound, not the fence's whole wait

            # Writes keep their guarantee: through the cut node nothing is acknowledged.
            with pytest.raises((BusError, TimeoutError)):
                await _publish(host_store, 2, "quokkaflow", timeout=4)
            await eventually(lambda: _publish(majority_store, 3, "quokkaflow"), timeout=30,
                             what="the majority writing")  # fmt: skip
            # Searches on the cut host go on answering, stale, for the whole cut.
            for _ in range(3):
                again = await _search(host, "wombatizer")
                assert again["stale"] is True and again["results"], again
        finally:
            for j in range(3):
                if j != CUT:
                    lab.unblackhole(CUT, j)
                    lab.unblackhole(j, CUT)

        async def fresh_and_found() -> bool:
            out = await _search(host, "quokkaflow")
            return "stale" not in out and "obs_part3" in [h["id"] for h in out["results"]]

        await eventually(fresh_and_found, timeout=60, what="fresh again after the heal")
        await host.nc.close()
        await majority.nc.close()
    finally:
        worker.kill()
        worker.wait()


def test_a_cut_off_host_answers_searches_stale_and_refuses_writes(tmp_path: Path) -> None:
    lab = Lab(3, tag="reads").start()
    try:
        p = free_ports(3)
        cluster = NatsCluster(
            tmp_path / "nats",
            [NodePorts(p[0], p[1], p[2]) for _ in range(3)],
            addresses=[lab.addr(k) for k in range(3)],
            wraps=[lab.exec_argv(k, []) for k in range(3)],
        )

        def run() -> None:
            cluster.start()
            try:
                asyncio.run(_scenario(cluster, lab, tmp_path))
            finally:
                cluster.kill()

        lab.run_in_hub(run)
    finally:
        lab.close()
