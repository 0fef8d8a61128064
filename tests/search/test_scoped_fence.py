"""The freshness fence is scoped: a query of one project waits for that project's writes
and the shared ones (memories, summaries, removals), not for another project's backlog;
without a project, and until the index has once caught up with the whole stream, it waits
for everything."""

from __future__ import annotations

from engine import Client
from functions.kernel.records import Memory, MemoryAdded, Observation
from functions.kernel.store import MemoryStore
from functions.search.feeder import IndexHolder
from tests.fixtures import add_observations


def _obs(i: int, project: str) -> Observation:
    return Observation(
        id=f"obs_fence{i:04d}", session_id="s1", project=project, hook_type="post_tool_use",
        timestamp="2026-12-01T10:00:00.000Z", title=f"rotate key {i}", narrative="rotate key",
    )  # fmt: skip


async def test_a_project_waits_for_its_own_writes_not_another_projects_backlog(
    client: Client,
) -> None:
    store = await MemoryStore(client).open()
    holder = IndexHolder(load_embedder=False, snapshot_every=3600)
    await holder.start(client)
    try:
        await add_observations(store, [_obs(i, "alpha" if i % 2 else "beta") for i in range(4)])
        assert await holder.caught_up(timeout=5, project="alpha")
        assert holder.booted  # the first fence waited for the whole stream
        assert len(holder.index) == 4

        # The index stops applying (a follower far behind), then beta writes a backlog.
        assert holder._follower is not None
        await holder._follower.stop()
        alpha_last = (await store.events.info()).last_seq
        stream_last = await add_observations(store, [_obs(i, "beta") for i in range(10, 20)])
        assert await holder.caught_up(timeout=5, project="alpha")
        assert holder.last_fence == ("alpha", alpha_last) and alpha_last < stream_last
        assert len(holder.index) == 4  # nothing of beta's backlog had to be applied

        # A shared write (a memory, global) is part of every project's fence.
        await store.publish(MemoryAdded(memory=Memory(id="mem_fence", content="rotate keys")))
        memory_seq = (await store.events.info()).last_seq
        assert await holder.caught_up(timeout=5, project="alpha")
        assert holder.last_fence == ("alpha", memory_seq)
        assert holder.index.get("mem_fence") is not None  # read past beta's backlog to it

        # Without a project: everything, beta's backlog included.
        assert await holder.caught_up(timeout=5)
        assert holder.last_fence == (None, memory_seq)
        assert len(holder.index) == 4 + 10 + 1
    finally:
        await holder.stop(client)


async def test_before_the_first_catch_up_a_project_waits_for_the_whole_stream(
    client: Client,
) -> None:
    store = await MemoryStore(client).open()
    # written before the index starts (an older layout's, say)
    last = await add_observations(store, [_obs(i, "beta") for i in range(3)])
    holder = IndexHolder(load_embedder=False, snapshot_every=3600)
    await holder.start(client)
    try:
        assert not holder.booted
        assert await holder.caught_up(timeout=5, project="alpha")
        assert holder.last_fence == ("alpha", last) and holder.booted
        assert len(holder.index) == 3
    finally:
        await holder.stop(client)
