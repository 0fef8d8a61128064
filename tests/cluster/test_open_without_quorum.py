"""A worker that opens a bucket while its cluster has no JetStream quorum (an election
after a partition heals, a node restarting) waits for JetStream to answer again instead of
crashing on the first unanswered request. The partition bench's verify step once died on
exactly this: `nats: timeout` from the bucket lookup right after the last fault healed."""

from __future__ import annotations

import asyncio

import nats.errors
import nats.js.errors

from engine import Client, connect
from ops.cluster.nodes import NatsCluster
from tests.fixtures import eventually


async def unanswered(client: Client) -> bool:
    try:
        await client.nc.jetstream(timeout=1).stream_info("KV_quorum_bucket")
    except (nats.errors.TimeoutError, nats.js.errors.ServiceUnavailableError):
        return True
    return False


async def test_a_bucket_opened_during_a_lost_quorum_opens_once_the_quorum_is_back(
    nats_cluster: NatsCluster,
) -> None:
    first = Client(await connect(nats_cluster.url))
    try:
        await first.bucket("quorum_bucket", replicas=3)
        info = await first.nc.jetstream().stream_info("KV_quorum_bucket")
    finally:
        await first.nc.close()
    # Keep a node that does not lead the bucket's stream (its leader would go on answering
    # on its own for a while) and kill the two others.
    leader = info.cluster.leader if info.cluster else None
    keep = next(k for k, n in enumerate(nats_cluster.nodes) if n.server_name != leader)
    others = [k for k in range(len(nats_cluster.nodes)) if k != keep]
    for k in others:
        nats_cluster.kill_node(k)
    # Without a meta leader or the stream's leader, JetStream's API does not answer.
    client = Client(await connect(nats_cluster.urls[keep]))
    try:
        await eventually(lambda: unanswered(client), timeout=60, what="JetStream unanswered")
        opening = asyncio.create_task(client.bucket("quorum_bucket"))
        await asyncio.sleep(7)  # past one API timeout (5 s) without an answer
        assert not opening.done(), opening.exception() if opening.done() else None
        await asyncio.gather(*(asyncio.to_thread(nats_cluster.start_node, k) for k in others))
        st = await asyncio.wait_for(opening, 60)
        await st.put("k", {"v": 1})
        got = await st.get("k", dict)
        assert got == {"v": 1}
    finally:
        await client.nc.close()
