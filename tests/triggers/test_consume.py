"""The consumer loop under its plug-ins (cron, queue, stream, state): giving up a long poll
when the consumer's leader changes ends the poll, however nats-py's fetch takes the
cancellation. (The poll being given up on a real cluster: tests/cluster/
test_consumer_failover.py.)"""

from __future__ import annotations

import asyncio

from nats.aio.msg import Msg

from engine import Client
from triggers.consume import ConsumerLoop


class DroppingFetch:
    """What nats-py's fetch does on Python 3.11 when a message lands on its inbox as it is
    cancelled: asyncio.wait_for returns the message instead of raising, the fetch reads it
    (a status, say) and goes on waiting for the next one. A second cancel ends it."""

    def __init__(self) -> None:
        self.cancels_dropped = 0

    async def fetch(self, batch: int, timeout: float) -> list[Msg]:
        try:
            await asyncio.sleep(timeout)
        except asyncio.CancelledError:
            self.cancels_dropped += 1
        await asyncio.sleep(timeout)
        return []


async def test_a_poll_given_up_ends_even_when_the_fetch_drops_the_cancellation(
    client: Client,
) -> None:
    async def handle(msg: Msg) -> None:
        await msg.ack()

    loop = ConsumerLoop(client.nc, "ANY", "any", handle)
    psub = DroppingFetch()
    moved = asyncio.Event()
    poll = asyncio.create_task(loop._fetch(psub, 1, moved))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)  # the long poll (30 s) is waiting
    moved.set()  # the consumer has a new leader
    done, _ = await asyncio.wait({poll}, timeout=10)
    try:
        assert poll in done, "the given-up poll is still waiting"
        assert poll.result() == []
        assert psub.cancels_dropped == 1
    finally:
        while not poll.done():
            poll.cancel()
            await asyncio.wait({poll}, timeout=0.2)
