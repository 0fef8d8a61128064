"""The query side's in-memory mirror of `n.*`, `a.*` and `e.*` (functions.graph.mirror): queries
read it instead of KV, and it follows the feed's writes and compaction's purges (which
reach no watcher) exactly. No sleeping: `sync()` waits for the stream's last sequence."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from engine import Bucket, FunctionError
from functions.graph.keys import node_id
from functions.graph.mirror import GraphMirror, mirror
from functions.graph.wire import GraphQueryIn
from functions.kernel.clock import iso
from functions.kernel.records import GRAPH_BUCKET, GraphEdge
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import DecayIn, DigestIn
from functions.memory.forget import forget
from functions.memory.wire import ForgetIn
from tests.lifecycle._data import at, obs, put_obs, put_old_and_new
from tests.lifecycle.test_graph import by_name, graph_dump
from tests.lifecycle.test_graph_adjacency import adjacency_dump


async def assert_mirror_is_the_bucket(m: GraphMirror, store: MemoryStore) -> None:
    assert await m.sync()
    nodes, edges = await graph_dump(store)
    assert m.nodes == {k[2:]: n for k, n in nodes.items()}
    assert {k: msgspec.json.decode(v, type=GraphEdge) for k, v in m.edges.items()} == edges
    assert m.adj == {nid: a for nid, (a, _) in (await adjacency_dump(store)).items()}


async def test_queries_read_the_mirror_which_follows_the_feed_and_compaction(
    store: MemoryStore, lifecycle: LifecycleService, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = await store.client.bucket(GRAPH_BUCKET)
    read: list[str] = []
    entry = Bucket.entry

    async def spy(self: Bucket, key: str, type: Any = Any) -> Any:
        if self is state:
            read.append(key)
        return await entry(self, key, type)

    monkeypatch.setattr(Bucket, "entry", spy)
    await put_old_and_new(store)
    await lifecycle.digest_events(DigestIn())
    listing = await lifecycle.graph_query(GraphQueryIn())
    assert set(by_name(listing)) == {"old.py", "legacy", "new.py", "fresh"}
    m = await mirror(state)
    await assert_mirror_is_the_bucket(m, store)

    # a feed step: the next query sees it (it waits for the mirror, not a timer)
    await put_obs(store, obs("s", 4, files=["added.py"], concepts=["fresh"], when=at(days=200)))
    read.clear()
    await lifecycle.digest_events(DigestIn())
    feed_reads = len(read)
    new_py = node_id("proj", "file", "new.py")
    walk = await lifecycle.graph_query(GraphQueryIn(start_node_id=new_py, max_depth=2))
    assert set(by_name(walk)) == {"new.py", "fresh", "added.py"} and walk["totalEdges"] == 2
    found = await lifecycle.graph_query(GraphQueryIn(query="added"))
    assert [n["name"] for n in found["nodes"]] == ["added.py"]
    await assert_mirror_is_the_bucket(m, store)

    # compaction purges old.py and legacy (no tombstone): gone from the mirror and queries
    await forget(store, ForgetIn(observation_ids=[obs("s", 1).id, obs("s", 2).id]))
    out = await lifecycle.graph_compact(DecayIn(now=iso(at(days=201))))
    assert out["nodesDeleted"] == 2
    assert await m.sync()  # (its purge check confirms by key: not the queries' reads)
    read.clear()
    listing = await lifecycle.graph_query(GraphQueryIn(limit=10))
    assert set(by_name(listing)) == {"new.py", "fresh", "added.py"}
    assert listing["totalNodes"] == 3
    old_py = node_id("proj", "file", "old.py")
    assert old_py not in m.nodes and old_py not in m.adj
    with pytest.raises(FunctionError) as gone:
        await lifecycle.graph_query(GraphQueryIn(start_node_id=old_py))
    assert gone.value.code == "NOT_FOUND"
    assert len(listing["edges"]) == 2
    # the queries read nothing from the bucket: nodes, adjacency, edges and stats are held
    assert read == []
    assert feed_reads > 0  # (the spy sees this bucket's reads at all)
    await assert_mirror_is_the_bucket(m, store)

    # the closed old.py - legacy edge is purged past the retention: gone from the mirror
    later = await lifecycle.graph_compact(DecayIn(now=iso(at(days=201 + 91))))
    assert later["edgesDeleted"] == 1
    await assert_mirror_is_the_bucket(m, store)
    assert len(m.edges) == 2
