"""A worker that opens a bucket while its cluster has no JetStream quorum (an election
after a partition heals, a node restarting) waits for JetStream to answer again instead of
crashing on the first unanswered request. The partition bench's verify step once died on
exactly this: `nats: timeout` from the bucket lookup right after the last fault healed."""

from __future__ import annotations

import asyncio

from engine import Client, connect
from ops.cluster.nodes import NatsCluster


async def test_a_bucket_opened_during_a_lost_quorum_opens_once_the_quorum_is_back(
    nats_cluster: NatsCluster,
) -> None:
    first = Client(await connect(nats_cluster.url))
    try:
        await first.state("quorum_bucket", replicas=3)
    finally:
        await first.nc.close()
    nats_cluster.kill_node(1)
    nats_cluster.kill_node(2)
    # Only node 0 is left: no meta leader, so JetStream's API does not answer.
    client = Client(await connect(nats_cluster.urls[0]))
    try:
        opening = asyncio.create_task(client.state("quorum_bucket"))
        await asyncio.sleep(7)  # past one API timeout (5 s) without an answer
        assert not opening.done(), opening.exception() if opening.done() else None
        await asyncio.gather(*(asyncio.to_thread(nats_cluster.start_node, k) for k in (1, 2)))
        st = await asyncio.wait_for(opening, 60)
        await st.put("k", {"v": 1})
        got = await st.get("k", dict)
        assert got == {"v": 1}
    finally:
        await client.nc.close()
