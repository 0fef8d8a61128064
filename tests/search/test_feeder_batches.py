"""The feeder applies what the follower delivers in batches, the event loop turning between
two, and wakes a waiting fence when its own target is applied, not at every event: under
ingest a search neither waits behind a whole backlog nor pays a wake-up per write."""

from __future__ import annotations

import asyncio
import itertools
import time

from engine import Client, StreamMessage
from functions.kernel.records import Observation
from functions.kernel.store import MemoryStore
from functions.search.feeder import APPLY_BATCH, IndexHolder
from tests.fixtures import add_observations


def _obs(i: int) -> Observation:
    return Observation(
        id=f"obs_batch{i:05d}", session_id=f"s{i % 7}", project="alpha",
        hook_type="post_tool_use", timestamp="2026-12-01T10:00:00.000Z",
        title=f"rotate key {i}", narrative=f"rotate key number {i} in the vault",
    )  # fmt: skip


async def _publish(store: MemoryStore, lo: int, hi: int) -> int:
    return await add_observations(store, (_obs(k) for k in range(lo, hi)))


async def test_a_backlog_is_applied_in_batches_with_the_loop_turning_between(
    client: Client,
) -> None:
    store = await MemoryStore(client).open()
    last = await _publish(store, 0, 1500)
    holder = IndexHolder(load_embedder=False, snapshot_every=3600)
    seen: list[int] = []

    async def watch() -> None:  # another task of the loop: a search arriving, say
        while True:
            seen.append(len(holder.index))
            await asyncio.sleep(0)

    watcher = asyncio.create_task(watch())
    await holder.start(client)
    try:
        assert await holder.caught_up(timeout=20)
        watcher.cancel()
        assert len(holder.index) == 1500 and holder.index.seq == last  # all, once, in order
        steps = [b - a for a, b in itertools.pairwise(seen) if b != a]
        assert len(steps) >= 1500 // APPLY_BATCH  # other work ran while the backlog went in
        assert max(steps) <= APPLY_BATCH
        assert [h.id for h in holder.index.search("rotate key 1499", project="alpha")][:1] == [
            "obs_batch01499"
        ]
    finally:
        watcher.cancel()
        await holder.stop(client)


async def test_a_waiting_fence_is_woken_by_its_target_not_by_every_event(client: Client) -> None:
    store = await MemoryStore(client).open()
    holder = IndexHolder(load_embedder=False, snapshot_every=3600)
    await holder.start(client)
    try:
        await _publish(store, 0, 10)
        assert await holder.caught_up(timeout=5)
        assert holder._follower is not None
        await holder._follower.stop()  # the index falls behind ...
        last = await _publish(store, 10, 1010)  # ... a thousand writes
        woken = holder.fence_wakeups
        fence = asyncio.create_task(holder.caught_up(timeout=20, project="alpha"))
        await asyncio.sleep(0)
        holder._kick()  # ... and follows again: the writes stream in while the fence waits
        assert await fence
        assert holder.index.seq >= last and len(holder.index) == 1010
        # one wake-up when the target was applied, plus the stall checks (every 50 ms)
        # while it waited: far fewer than the thousand events it waited for
        assert holder.fence_wakeups - woken < 100, holder.fence_wakeups - woken
    finally:
        await holder.stop(client)


class _Slow(IndexHolder):
    """A replica that cannot keep up with the stream."""

    def _apply(self, msg: StreamMessage) -> None:
        time.sleep(0.0005)
        super()._apply(msg)


async def test_a_replica_behind_the_stream_holds_a_bounded_backlog(client: Client) -> None:
    """A long tail is taken in as fast as it is applied, not read into memory whole: the
    follower waits while the inbox is full (seen failing without the bound: the whole
    tail in the inbox), and every event is applied once, in order."""
    store = await MemoryStore(client).open()
    last = await _publish(store, 0, 3000)
    holder = _Slow(load_embedder=False, snapshot_every=3600)
    holder.inbox_max = 100
    await holder.start(client)
    try:
        assert await holder.caught_up(timeout=30)
        assert len(holder.index) == 3000 and holder.index.seq == last
        assert 0 < holder.inbox_peak <= 100, holder.inbox_peak
        assert holder.follower_restarts == 0
    finally:
        await holder.stop(client)
