"""A session start never holds a hook past its wait: `mem::context` answers by its caller's
deadline with what its index holds, naming what was not ready (the latest writes when the
index cannot catch up in time), and `session/start` answers within
AGENTMEMORY_SESSION_START_WAIT with the session, and a context that says it is missing when
the retrieval worker did not answer in time."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec

from engine import Client, Context, Worker, connect
from engine.server import NatsServer
from functions.kernel.records import Memory, MemoryAdded, Observation
from functions.kernel.store import MemoryStore
from functions.search.feeder import STALL, IndexHolder
from functions.search.search_service import SearchService, left_out_line
from functions.search.wire import ContextIn
from tests.fixtures import add_observations


def _obs(i: int) -> Observation:
    return Observation(
        id=f"obs_deadline{i:04d}", session_id=f"s{i % 2}", project="alpha",
        hook_type="post_tool_use", timestamp=f"2026-12-01T10:00:{i:02d}.000Z",
        title=f"rotate the signing key, step {i}", narrative="rotate key", importance=6,
    )  # fmt: skip


async def test_context_answers_by_its_deadline_naming_the_writes_it_could_not_wait_for(
    client: Client,
) -> None:
    store = await MemoryStore(client).open()
    holder = IndexHolder(load_embedder=False, snapshot_every=3600)
    service = SearchService(holder)
    await service.start(client)
    try:
        await add_observations(store, map(_obs, range(3)))
        await store.publish(MemoryAdded(memory=Memory(
            id="mem_deadline", content="sign with the new key", title="new signing key",
            project="alpha", created_at="2026-12-01T09:00:00.000Z",
        )))  # fmt: skip
        assert await holder.caught_up(timeout=10, project="alpha")
        whole = await service.context(ContextIn(project="alpha", budget=2000))
        assert whole.left_out == [] and "leftOut" not in msgspec.json.encode(whole).decode()

        # The index stops applying (a replica far behind); the project writes on.
        assert holder._follower is not None
        await holder._follower.stop()
        await add_observations(store, map(_obs, range(3, 8)))
        # A deadline the fence reaches before its stall check (STALL): past it, the fence
        # would read the missing writes itself and catch up, and nothing would be left out.
        ctx = Context(client, "mem::context", {}, time.time() + STALL - 0.05, "test")
        began = time.monotonic()
        got = await service.context(ContextIn(project="alpha", budget=2000), ctx)
        took = time.monotonic() - began
    finally:
        await service.stop(client)

    # answered at the caller's deadline, not at the fence's 2 s (room for a loaded machine)
    assert took < 1.8, took
    assert len(got.left_out) == 1 and "latest writes" in got.left_out[0]
    assert got.context.splitlines()[-2] == left_out_line(got.left_out)
    # what the index held is all there, as without a deadline
    assert [b for b in got.blocks] == whole.blocks
    assert "new signing key" in got.context and "step 2" in got.context


async def test_session_start_answers_within_its_wait_when_the_context_is_late(
    nats_server: NatsServer, client: Client, spawn: Any
) -> None:
    # The write path alone (retrieval off in its process) and a retrieval worker too busy
    # to answer within the wait.
    spawn("workers.memory", env={"AGENTMEMORY_SEARCH": "off",
                                 "AGENTMEMORY_SESSION_START_WAIT": "0.4"})  # fmt: skip
    busy = Worker("busy-retrieval")

    @busy.function("mem::context", timeout=30)
    async def slow_context(req: dict[str, Any], ctx: Context) -> dict[str, Any]:
        await asyncio.sleep(3)
        return {"context": "too late", "blocks": [], "tokens": 2}

    nc = await connect(nats_server.url)
    await busy.start(nc)
    try:
        began = time.monotonic()
        out = await client.call(
            "mem::session-start", {"sessionId": "late-1", "project": "alpha", "cwd": "/w"}
        )
        took = time.monotonic() - began
    finally:
        await busy.drain()
        await nc.close()
    assert took < 1.5, took  # the hooks wait 0.8 s; the session start 0.4 here
    assert out["session"]["id"] == "late-1"
    assert out["leftOut"] == ["context (not ready within 0.4 s)"]
    assert "not ready within 0.4 s" in out["context"] and "memory_recall" in out["context"]
    sessions = await client.call("mem::sessions", {})
    assert any(s["id"] == "late-1" for s in sessions["sessions"])  # the record is written


async def test_session_start_passes_on_what_the_context_left_out(
    nats_server: NatsServer, client: Client, spawn: Any
) -> None:
    spawn("workers.memory", env={"AGENTMEMORY_SEARCH": "off"})
    partial = Worker("partial-retrieval")
    seen: list[float] = []

    @partial.function("mem::context", timeout=30)
    async def context(req: dict[str, Any], ctx: Context) -> dict[str, Any]:
        seen.append(ctx.remaining())
        text = "<agentmemory-context>\n- a memory\n(left out)\n</agentmemory-context>"
        return {"context": text, "blocks": [], "tokens": 9, "leftOut": ["pinned slots"]}

    nc = await connect(nats_server.url)
    await partial.start(nc)
    try:
        out = await client.call("mem::session-start", {"sessionId": "p-1", "project": "alpha"})
    finally:
        await partial.drain()
        await nc.close()
    assert out["leftOut"] == ["pinned slots"] and "- a memory" in out["context"]
    assert seen and 0 < seen[0] <= 0.6  # the context was given the session start's wait
