"""Search's freshness fence on a cluster: it waits for acknowledged writes at most
SEARCH_FRESHNESS_SECONDS, also while the event stream has no leader (electing one after
a node died, or without quorum), and then answers from what its replica holds; a replica
whose follower stalled (its consumer's node died) follows the stream again at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from engine import Client, connect
from functions.kernel.records import EVENTS_STREAM, Observation
from functions.kernel.store import MemoryStore
from ops.cluster.nodes import NatsCluster
from tests.fixtures import ROOT, eventually

LOGS: dict[int, list[str]] = {}


def _search_worker(url: str, freshness: str) -> subprocess.Popen[bytes]:
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        ENGINE_NATS_URL=url,
        ENGINE_REPLICAS="3",
        SEARCH_FRESHNESS_SECONDS=freshness,
        ENGINE_LOG_LEVEL="WARNING",
    )
    p = subprocess.Popen([sys.executable, "-m", "workers.search"], env=env, cwd=ROOT,
                         stderr=subprocess.PIPE)  # fmt: skip
    assert p.stderr is not None
    early: list[bytes] = []
    for raw in p.stderr:
        early.append(raw)
        if b"ENGINE_WORKER_READY" in raw:
            break
    else:
        raise RuntimeError("the search worker did not start:\n" + b"".join(early[-30:]).decode())
    lines: list[str] = []
    LOGS[p.pid] = lines
    threading.Thread(target=lambda: [lines.append(x.decode()) for x in p.stderr or []],
                     daemon=True).start()  # fmt: skip
    return p


@pytest.fixture
def search_on_node0(nats_cluster: NatsCluster) -> Iterator[subprocess.Popen[bytes]]:
    p = _search_worker(nats_cluster.urls[0], "1")  # this replica reaches node 0 only
    yield p
    p.kill()
    p.wait()


@pytest.fixture
def search_anywhere(nats_cluster: NatsCluster) -> Iterator[subprocess.Popen[bytes]]:
    p = _search_worker(nats_cluster.url, "3")
    yield p
    p.kill()
    p.wait()


async def test_search_answers_within_its_freshness_bound_when_the_stream_has_no_leader(
    nats_cluster: NatsCluster, search_on_node0: subprocess.Popen[bytes]
) -> None:
    nc = await connect(nats_cluster.urls[0])
    try:
        client = Client(nc)
        got = await client.call("mem::search", {"query": "parser", "format": "compact"}, timeout=5)
        assert got["results"] == []
        # Two of three nodes gone: MEM_EVENTS (R3) has no quorum and answers nothing.
        nats_cluster.kill_node(1)
        nats_cluster.kill_node(2)
        # The fence gives up after its 1 s, not after the JetStream API's 5 s timeout.
        got = await client.call("mem::search", {"query": "parser", "format": "compact"},
                                timeout=3.5)  # fmt: skip
        assert got["results"] == []
    finally:
        await nc.close()


async def test_a_replica_whose_follower_died_with_its_node_follows_again_for_the_next_read(
    nats_cluster: NatsCluster, search_anywhere: subprocess.Popen[bytes]
) -> None:
    nc = await connect(nats_cluster.url)
    try:
        client = Client(nc, replicas=3)
        store = await MemoryStore(client).open()  # while all three nodes can hold its buckets
        js = nc.jetstream()
        # The replica's ordered consumer lives on one node: that node dies. The client
        # library would notice after two missed heartbeats (10-20 s); the fence must not
        # wait for that.
        [consumer] = await js.consumers_info(EVENTS_STREAM)
        assert consumer.cluster is not None
        where = consumer.cluster.leader
        nats_cluster.kill_node(next(k for k, n in enumerate(nats_cluster.nodes)
                                    if n.server_name == where))  # fmt: skip
        await eventually(lambda: js.stream_info(EVENTS_STREAM), timeout=30,
                         what="MEM_EVENTS led again")  # fmt: skip
        await eventually(lambda: client.call("mem::search", {"query": "x"}, timeout=15),
                         timeout=30, what="the replica serving again")  # fmt: skip
        obs = Observation(id="obs_fence_1", session_id="s", project="p",
                          hook_type="post_tool_use", timestamp="2026-11-29T10:00:00Z",
                          title="ran the wombatizer", narrative="wombatizer output")  # fmt: skip

        async def written() -> bool:
            # The index bucket elects its own leader after the death (on a loaded machine,
            # after MEM_EVENTS): a write may time out first. Create-once, so a retry after
            # a timeout that stored it finds it stored.
            await store.add_observation(obs)
            return await store.get_observation(obs.id) is not None

        await eventually(written, timeout=30, what="the write taken after the election")
        got = await client.call("mem::search", {"query": "wombatizer", "format": "compact"},
                                timeout=5)  # fmt: skip
        assert [h["id"] for h in got["results"]] == ["obs_fence_1"], "".join(
            LOGS[search_anywhere.pid][-20:]
        )
    finally:
        await nc.close()
