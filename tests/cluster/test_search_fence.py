"""Search's freshness fence on a cluster: it waits for acknowledged writes at most
SEARCH_FRESHNESS_SECONDS, also while the event stream has no leader (electing one after
a node died, or without quorum), and then answers from what its replica holds."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from engine import Client, connect
from ops.cluster.nodes import NatsCluster
from tests.conftest import ROOT


@pytest.fixture
def search_on_node0(nats_cluster: NatsCluster) -> Iterator[subprocess.Popen[bytes]]:
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        ENGINE_NATS_URL=nats_cluster.urls[0],  # this replica reaches node 0 only
        ENGINE_REPLICAS="3",
        SEARCH_FRESHNESS_SECONDS="1",
        ENGINE_LOG_LEVEL="WARNING",
    )
    p = subprocess.Popen([sys.executable, "-m", "workers.search"], env=env, cwd=ROOT,
                         stderr=subprocess.PIPE)  # fmt: skip
    assert p.stderr is not None
    for raw in p.stderr:
        if b"ENGINE_WORKER_READY" in raw:
            break
    else:
        raise RuntimeError("the search worker did not start")
    threading.Thread(target=lambda: [None for _ in p.stderr or []], daemon=True).start()
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
