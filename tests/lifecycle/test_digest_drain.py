"""A stop during a long mem::digest-events run: the lifecycle worker's drain ends the run
between batches (not after the drain timeout), and the next run resumes at the stored
cursors, so every event is folded once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from engine import Client, Worker, connect
from engine.server import NatsServer
from functions.graph.keys import node_id, node_key
from functions.kernel.digest import cursor_key, digest
from functions.kernel.records import (
    GRAPH_BUCKET,
    LIFECYCLE_BUCKET,
    GraphNode,
    MemEvent,
)
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.settings import GraphConfig, LifecycleConfig
from functions.lifecycle.wire import DigestOut
from tests.fixtures import add_observations, eventually
from tests.lifecycle._data import obs
from workers.lifecycle import serve_lifecycle

EVENTS = 3000
BATCH = 50


async def _fill(store: MemoryStore) -> int:
    """EVENTS observations, each naming its own file and the shared core.py: every batch
    writes ~100 graph records, so a run is dozens of slow-enough steps."""
    items = [obs("s", n, files=["src/core.py", f"src/f{n}.py"]) for n in range(EVENTS)]
    return await add_observations(store, items, batch=200)


async def test_a_stop_ends_a_long_digest_run_between_batches_and_the_next_run_resumes(
    nats_server: NatsServer, client: Client
) -> None:
    store = await MemoryStore(client).open()
    last = await _fill(store)
    config = LifecycleConfig(graph=GraphConfig(batch=BATCH))
    worker = Worker("lifecycle-drain-test")
    serve_lifecycle(worker, LifecycleService(config))
    nc = await connect(nats_server.url)
    await worker.start(nc)
    life = await client.bucket(LIFECYCLE_BUCKET)

    run = asyncio.ensure_future(
        client.call("mem::digest-events", {}, response=DigestOut, timeout=300)
    )

    async def folding() -> bool:
        return bool(await life.get(cursor_key("graph"), int))

    await eventually(folding, timeout=60, what="a first batch folded")
    began = time.monotonic()
    await worker.drain()
    took = time.monotonic() - began
    first = await asyncio.wait_for(run, timeout=5)
    await nc.close()

    assert took < 10.0, took  # the drain timeout is 25 s: the run did not hold the stop
    assert 0 < first.folded["graph"] < EVENTS, first.folded  # it ended part way
    stopped_at: int = await life.get(cursor_key("graph"), int)
    assert stopped_at < last

    # The next run (a fresh service, as after a restart) goes on from the stored cursors.
    again = LifecycleService(config)
    await again.start(client)
    second = await again.fold_events()
    for sink in ("graph", "profile"):
        assert first.folded[sink] + second[sink] == EVENTS, (sink, first.folded, second)
        assert await life.get(cursor_key(sink), int) == last
    graph = await client.bucket(GRAPH_BUCKET)
    core = await graph.get(node_key(node_id("proj", "file", "src/core.py")), GraphNode)
    assert core is not None and core.weight == EVENTS  # every observation, once
    for n in (0, stopped_at // 2, EVENTS - 1):
        leaf = await graph.get(node_key(node_id("proj", "file", f"src/f{n}.py")), GraphNode)
        assert leaf is not None and leaf.weight == 1, n


class _Sink:
    def __init__(self, name: str, on_apply: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self.batches: list[list[int]] = []
        self.on_apply = on_apply

    async def apply(self, batch: list[tuple[int, MemEvent]]) -> dict[str, int]:
        self.batches.append([s for s, _ in batch])
        self.on_apply()
        return {}


async def test_a_stop_during_one_sink_leaves_the_next_sinks_batch_to_the_next_run(
    client: Client,
) -> None:
    """The stop is looked at before each sink, not only between batches: a drain that
    arrives while the graph folds a batch does not wait for the profile to fold it too."""
    store = await MemoryStore(client).open()
    last = await add_observations(store, [obs("s", n) for n in range(30)])
    life = await client.bucket(LIFECYCLE_BUCKET)
    stopping = False

    def stop_now() -> None:
        nonlocal stopping
        stopping = True

    first, second = _Sink("one", on_apply=stop_now), _Sink("two")
    got = await digest(store, life, [first, second], batch=100, stop=lambda: stopping)
    assert got == {"one": 30, "two": 0}
    assert second.batches == []
    assert await life.get(cursor_key("one"), int) == last
    assert await life.get(cursor_key("two"), int) is None

    again = await digest(store, life, [first, second], batch=100)
    assert again == {"one": 0, "two": 30}
    assert len(first.batches) == 1 and len(second.batches[0]) == 30
    assert await life.get(cursor_key("two"), int) == last
