"""The per-node adjacency index (`a.<nodeId>`): what a walk and a page's edges are read
through. Checked against brute force over every edge read straight from KV: same walk, same
lists; bounded at ADJ_CAP; unchanged by a replayed batch, exact after a crash between the
index and the edges; kept by compaction when edges close and go."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from engine import Bucket
from functions.graph.adjacency import ADJ_CAP, Adjacency, AdjEdge, rank
from functions.graph.feed import GraphFeed
from functions.graph.keys import node_id
from functions.graph.wire import GraphQueryIn
from functions.kernel.clock import iso
from functions.kernel.records import (
    EVENTS_SUBJECT,
    GRAPH_BUCKET,
    GraphEdge,
    GraphStats,
    MemEvent,
    Memory,
)
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import DecayIn, DigestIn
from functions.memory.forget import forget
from functions.memory.wire import ForgetIn
from tests.lifecycle._data import at, obs, put_memory, put_obs
from tests.lifecycle.test_graph import graph_dump


async def adjacency_dump(store: MemoryStore) -> dict[str, tuple[Adjacency, int]]:
    """Every `a.*` record with its revision (read through the bucket's stream)."""
    state = await store.client.bucket(GRAPH_BUCKET)
    out: dict[str, tuple[Adjacency, int]] = {}
    async for key, _ in state.scan("a.>", Adjacency):
        got = await state.entry(key, Adjacency)
        assert got is not None
        out[key[2:]] = (got.value, got.revision)
    return out


def expected_adjacency(edges: dict[str, GraphEdge]) -> dict[str, Adjacency]:
    """Brute force: each node's strongest ADJ_CAP edges and the count of all of them."""
    per: dict[str, list[AdjEdge]] = {}
    for key, e in edges.items():
        entry = AdjEdge(key, e.weight, e.valid_to is None, e.seq)
        for nid in (e.src, e.dst):
            per.setdefault(nid, []).append(entry)
    return {
        nid: Adjacency(edges=sorted(xs, key=rank, reverse=True)[:ADJ_CAP], total=len(xs))
        for nid, xs in per.items()
    }


async def assert_index_exact(store: MemoryStore) -> None:
    nodes, edges = await graph_dump(store)
    # a deleted node's list goes with it (its closed edges wait out the retention)
    want = {k: a for k, a in expected_adjacency(edges).items() if "n." + k in nodes}
    got = {nid: a for nid, (a, _) in (await adjacency_dump(store)).items() if a.edges}
    assert set(got) == set(want)
    for nid, a in want.items():
        assert (got[nid].edges, got[nid].total) == (a.edges, a.total), nid


def brute_walk(
    edges: dict[str, GraphEdge], start: str, depth: int, expired: bool
) -> tuple[set[str], set[str]]:
    """The walk over every edge: nodes reached, and edges touching an expanded node."""
    seen, found, frontier = {start}, set(), [start]
    for _ in range(depth):
        nxt = []
        for e in edges.values():
            if (e.valid_to is not None and not expired) or not {e.src, e.dst} & set(frontier):
                continue
            found.add(e.id)
            for end in (e.src, e.dst):
                if end not in seen:
                    seen.add(end)
                    nxt.append(end)
        frontier = nxt
    return seen, found


async def events(store: MemoryStore) -> list[tuple[int, MemEvent]]:
    dec = msgspec.json.Decoder(MemEvent)
    return [
        (m.seq, dec.decode(m.data)) async for m in store.events.read(subject=f"{EVENTS_SUBJECT}.>")
    ]


async def random_graph(store: MemoryStore) -> None:
    rng = random.Random(7)
    files = [f"src/m{i}.py" for i in range(25)]
    await put_obs(
        store,
        *(
            obs("s", n, files=rng.sample(files, rng.randint(1, 4)),
                concepts=rng.sample(["api", "db", "ui", "auth"], 1), when=at(minutes=n))
            for n in range(60)
        ),
    )  # fmt: skip
    await put_memory(
        store,
        Memory(id="m1", content="we use postgres", concepts=["database", "postgres"],
               project="proj", created_at=iso(at(days=1))),
    )  # fmt: skip
    await put_memory(
        store,
        Memory(id="m2", content="we moved to sqlite", concepts=["database", "sqlite"],
               project="proj", created_at=iso(at(days=5)), supersedes="m1"),
    )  # fmt: skip


async def test_a_walk_through_the_index_equals_a_walk_over_every_edge(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await random_graph(store)
    await lifecycle.digest_events(DigestIn())
    nodes, edges = await graph_dump(store)
    assert any(e.valid_to is not None for e in edges.values())  # a closed edge to skip
    await assert_index_exact(store)
    for key in sorted(nodes):
        start = key[2:]
        for depth in (1, 2, 3):
            for expired in (False, True):
                got = await lifecycle.graph_query(GraphQueryIn(
                    start_node_id=start, max_depth=depth, include_expired=expired, limit=5000))  # fmt: skip
                want_nodes, want_edges = brute_walk(edges, start, depth, expired)
                assert {n["id"] for n in got["nodes"]} == want_nodes, (start, depth, expired)
                assert {e["id"] for e in got["edges"]} == want_edges, (start, depth, expired)
                assert got["totalNodes"] == len(want_nodes) and not got["truncated"]
                assert got["totalEdges"] == len(want_edges)

    # a listing's edges are those among its page, read through the same index
    page = await lifecycle.graph_query(GraphQueryIn(limit=10))
    ids = {n["id"] for n in page["nodes"]}
    among = {e.id for e in edges.values() if e.valid_to is None and {e.src, e.dst} <= ids}
    assert {e["id"] for e in page["edges"]} == among and among
    matched = await lifecycle.graph_query(GraphQueryIn(query="src/m1", limit=3))
    names = {k: n.name for k, n in nodes.items()}
    scope = {k[2:] for k, name in names.items() if "src/m1" in name}
    assert matched["totalNodes"] == len(scope) > 3
    live_in_scope = [e for e in edges.values() if e.valid_to is None and {e.src, e.dst} <= scope]
    assert matched["totalEdges"] == len(live_in_scope)


async def test_a_hub_keeps_only_its_strongest_edges_and_a_walk_says_it_was_cut(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    extra = 10
    many = ADJ_CAP + extra
    # hub.py with `many` neighbours; the first `extra` named twice, so they are stronger
    items = [obs("s", n, files=["hub.py", f"f{n}.py"], when=at(minutes=n)) for n in range(many)]
    items += [obs("t", n, files=["hub.py", f"f{n}.py"]) for n in range(extra)]
    await put_obs(store, *items)
    await lifecycle.digest_events(DigestIn())
    hub = node_id("proj", "file", "hub.py")
    adj = (await adjacency_dump(store))[hub][0]
    assert len(adj.edges) == ADJ_CAP and adj.total == many
    strong = {node_id("proj", "file", f"f{n}.py") for n in range(extra)}
    assert strong <= {a.other(hub) for a in adj.edges}
    assert [a.weight for a in adj.edges[:extra]] == [2] * extra
    await assert_index_exact(store)

    walk = await lifecycle.graph_query(GraphQueryIn(start_node_id=hub, max_depth=1, limit=5000))
    assert walk["totalNodes"] == ADJ_CAP + 1 and walk["truncated"]
    # a leaf's list is whole: a walk from it is not cut at the first hop
    leaf = await lifecycle.graph_query(GraphQueryIn(start_node_id=min(strong), max_depth=1))
    assert leaf["totalNodes"] == 2 and not leaf["truncated"]


class EdgeWritesFail(Bucket):
    """The real bucket, crashing at the first edge write: the index and the nodes are
    written, the edges are not (a crash between the steps)."""

    async def compare_and_set(self, key: str, value: Any, revision: int) -> int:
        if key.startswith("e."):
            raise RuntimeError("crash")
        return await super().compare_and_set(key, value, revision)


async def test_a_replayed_batch_leaves_the_index_as_it_was(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await random_graph(store)
    batch = await events(store)
    state = await store.client.bucket(GRAPH_BUCKET)
    crashing = GraphFeed(EdgeWritesFail(state.kv, state.bucket, store.client.connection))
    with pytest.raises(RuntimeError):
        await crashing.apply(batch[:40])
    assert await adjacency_dump(store)  # the index got ahead of the edges
    feed = GraphFeed(state)
    # replayed with other boundaries: nothing counted twice
    await feed.apply(batch[:25])
    await feed.apply(batch[25:])
    await assert_index_exact(store)
    before = await adjacency_dump(store)
    await feed.apply(batch[25:])
    await feed.apply(batch)
    assert await adjacency_dump(store) == before  # same values, same revisions: no writes


async def test_compaction_updates_closed_and_drops_purged_edges_and_refills_a_hub(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    extra = 10
    many = ADJ_CAP + extra
    # hub.py: `extra` strong neighbours (two mentions each, to be forgotten), the rest weak
    strong = [obs("s", n, files=["hub.py", f"f{n}.py"]) for n in range(extra)]
    strong += [obs("t", n, files=["hub.py", f"f{n}.py"]) for n in range(extra)]
    weak = [
        obs("w", n, files=["hub.py", f"f{n}.py"], when=at(days=200)) for n in range(extra, many)
    ]
    await put_obs(store, *strong, *weak)
    await lifecycle.digest_events(DigestIn())
    hub = node_id("proj", "file", "hub.py")
    kept = {a.other(hub) for a in (await adjacency_dump(store))[hub][0].edges}
    gone = {node_id("proj", "file", f"f{n}.py") for n in range(extra)}
    assert gone <= kept  # the strongest are in, some weak ones wait outside
    await forget(store, ForgetIn(observation_ids=[o.id for o in strong]))

    first = await lifecycle.graph_compact(DecayIn(now=iso(at(days=201))))
    assert first["edgesClosed"] == extra and first["nodesDeleted"] == extra
    index = await adjacency_dump(store)
    assert not gone & set(index)  # deleted nodes' lists dropped
    await assert_index_exact(store)  # live weak edges first now, the closed ones last
    assert all(a.live for a in index[hub][0].edges[: many - 2 * extra])

    later = await lifecycle.graph_compact(DecayIn(now=iso(at(days=201 + 91))))
    assert later["edgesDeleted"] == extra
    await assert_index_exact(store)
    adj = (await adjacency_dump(store))[hub][0]
    assert adj.total == len(adj.edges) == many - extra and all(a.live for a in adj.edges)
    walk = await lifecycle.graph_query(GraphQueryIn(start_node_id=hub, max_depth=1))
    assert walk["totalNodes"] == many - extra + 1 and not walk["truncated"]


async def test_compaction_builds_the_index_of_a_graph_fed_before_it(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await random_graph(store)
    await lifecycle.digest_events(DigestIn())
    # as a graph from before the index: no `a.*` records, stats without the version
    state = await store.client.bucket(GRAPH_BUCKET)
    for nid in await adjacency_dump(store):
        await state.purge(f"a.{nid}")
    stats = await state.get("stats", GraphStats)
    assert stats is not None and stats.adjacency == 1
    stats.adjacency = 0
    await state.put("stats", stats)
    assert not await adjacency_dump(store)
    out = await lifecycle.graph_compact(DecayIn(now=iso(at(days=6))))
    assert out["adjacencyWritten"] > 0
    await assert_index_exact(store)
