"""A stop during a long mem::digest-events run: the lifecycle worker's drain ends the run
between batches (not after the drain timeout), and the next run resumes at the stored
cursors, so every event is folded once."""

from __future__ import annotations

import asyncio
import time

from engine import Client, Worker, connect
from engine.server import NatsServer
from functions.graph.keys import node_id, node_key
from functions.kernel.config import GraphConfig, LifecycleConfig
from functions.kernel.digest import cursor_key
from functions.kernel.records import (
    GRAPH_BUCKET,
    LIFECYCLE_BUCKET,
    GraphNode,
    ObservationAdded,
)
from functions.kernel.store import MemoryStore
from functions.lifecycle.service import LifecycleService
from functions.lifecycle.wire import DigestOut
from tests.helpers import eventually
from tests.lifecycle._data import obs
from workers.lifecycle import serve_lifecycle

EVENTS = 3000
BATCH = 50


async def _fill(store: MemoryStore) -> int:
    """EVENTS observations, each naming its own file and the shared core.py: every batch
    writes ~100 graph records, so a run is dozens of slow-enough steps."""
    items = [obs("s", n, files=["src/core.py", f"src/f{n}.py"]) for n in range(EVENTS)]
    seqs: list[int] = []
    for i in range(0, EVENTS, 200):
        chunk = items[i : i + 200]
        seqs += await asyncio.gather(
            *(store.publish(ObservationAdded(observation=o)) for o in chunk)
        )
    return max(seqs)


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
    life = await client.state(LIFECYCLE_BUCKET)

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
    graph = await client.state(GRAPH_BUCKET)
    core = await graph.get(node_key(node_id("proj", "file", "src/core.py")), GraphNode)
    assert core is not None and core.weight == EVENTS  # every observation, once
    for n in (0, stopped_at // 2, EVENTS - 1):
        leaf = await graph.get(node_key(node_id("proj", "file", f"src/f{n}.py")), GraphNode)
        assert leaf is not None and leaf.weight == 1, n
