"""A trigger's consumer loop (cron, queue, stream and state plug-ins) keeps delivering when
the NATS node that leads its durable consumer dies, or the node its own connection is on.

Its long poll (a pull request waiting up to IDLE_FETCH seconds) lives on the consumer's
leader: when that node dies the request dies with it and nothing answers; the cluster
elects a new leader within seconds, but a loop left waiting would take the next message
only when its poll times out (30 s: a cron trigger missed 25 s of ticks in the cluster
bench). Here the poll is made ten minutes long, so only a loop that notices the new
leader delivers within the test's wait. (A loop that asked again once, right after the
news, still lost about one run in five under load: a request sent before the cluster knows
where the new leader listens is dropped too; the loop polls briefly for a while.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from engine import Client, connect
from ops.cluster.nodes import NatsCluster
from tests.fixtures import eventually
from triggers import consume
from triggers.consume import ConsumerLoop, ensure_consumer

STREAM, DURABLE = "FAILOVER", "loop"


async def _leader(nc: NATS) -> str:
    info = await nc.jetstream().consumer_info(STREAM, DURABLE)
    assert info.cluster is not None
    return info.cluster.leader or ""


async def _publish(nc: NATS, data: bytes) -> None:
    """Publish, trying again while the stream elects a leader."""

    async def once() -> bool:
        await nc.jetstream().publish(f"{STREAM.lower()}.x", data, timeout=1)
        return True

    await eventually(once, timeout=60, interval=0.2, what=f"publish {data!r}")


@pytest.fixture
async def setup(nats_cluster: NatsCluster) -> AsyncIterator[NATS]:
    nc = await connect(nats_cluster.url)
    client = Client(nc, replicas=3)
    await client.stream(STREAM, [f"{STREAM.lower()}.>"]).ensure()
    await ensure_consumer(client, STREAM, DURABLE)
    await eventually(lambda: _leader(nc), timeout=30, what="a consumer leader")
    yield nc
    await nc.close()


async def _run_loop(url: str, got: list[bytes]) -> tuple[NATS, ConsumerLoop]:
    # Only the nodes named, in this order: which node the loop talks through is known.
    nc = await connect(url, dont_randomize=True)

    async def handle(msg: Msg) -> None:
        got.append(msg.data)
        await msg.ack()

    loop = ConsumerLoop(nc, STREAM, DURABLE, handle)
    loop.start()
    return nc, loop


async def _idle_in_poll(loop: ConsumerLoop) -> None:
    async def polling() -> bool:
        return loop._fetching

    await eventually(polling, timeout=10, what="the loop waiting in its long poll")
    await asyncio.sleep(0.5)  # the pull request has reached the consumer's leader


@pytest.mark.timeout(180)
@pytest.mark.parametrize("dies", ["consumer leader", "the loop's own node"])
async def test_the_loop_delivers_after_a_node_dies(
    nats_cluster: NatsCluster, setup: NATS, monkeypatch: pytest.MonkeyPatch, dies: str
) -> None:
    monkeypatch.setattr(consume, "IDLE_FETCH", 600.0)
    leader = await _leader(setup)
    nodes = nats_cluster.nodes
    lead = next(k for k, n in enumerate(nodes) if n.server_name == leader)
    others = [k for k in range(len(nodes)) if k != lead]
    if dies == "consumer leader":
        # The loop is on the two other nodes: its connection never breaks.
        victim, order = lead, others
    else:
        # The loop is on a node that does not lead the consumer, then on the leader.
        victim, order = others[0], [others[0], lead]
    got: list[bytes] = []
    loop_nc, loop = await _run_loop(",".join(nats_cluster.urls[k] for k in order), got)
    publisher = await connect(",".join(nats_cluster.urls[k] for k in others if k != victim))
    try:
        await _publish(publisher, b"before")

        async def delivered(what: bytes) -> bool:
            return what in got

        await eventually(lambda: delivered(b"before"), timeout=30, what="the first message")
        await _idle_in_poll(loop)
        nats_cluster.kill_node(victim)
        await _publish(publisher, b"after")
        await eventually(lambda: delivered(b"after"), timeout=90, what=f"delivery after {dies}")
    finally:
        await loop.stop()
        for nc in (loop_nc, publisher):
            try:
                await nc.close()
            except (nats.errors.Error, nats.js.errors.Error):
                pass
