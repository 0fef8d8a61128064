"""The knowledge graph: fed from MEM_EVENTS, queried in upstream shapes, replay-safe,
superseded edges closed, compacted on schedule."""

from __future__ import annotations

from typing import Any

import pytest

from engine import FunctionError
from functions.graph.feed import GraphFeed
from functions.graph.keys import node_id
from functions.graph.wire import GraphQueryIn, GraphStatsIn
from functions.kernel.clock import iso
from functions.kernel.digest import digest
from functions.kernel.records import (
    GRAPH_BUCKET,
    LIFECYCLE_BUCKET,
    PROFILES_BUCKET,
    GraphEdge,
    GraphNode,
    Memory,
    ProjectProfile,
    profile_key,
)
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.profile import ProfileFeed
from functions.lifecycle.settings import ProfileConfig
from functions.lifecycle.wire import DecayIn, DigestIn
from functions.memory.forget import forget
from functions.memory.wire import ForgetIn
from tests.lifecycle._data import at, obs, put_memory, put_obs, put_old_and_new


def by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in result["nodes"]}


async def graph_dump(store: MemoryStore) -> tuple[dict[str, GraphNode], dict[str, GraphEdge]]:
    graph = await store.client.bucket(GRAPH_BUCKET)
    nodes = {k: n async for k, n in graph.scan("n.>", GraphNode)}
    edges = {k: e async for k, e in graph.scan("e.>", GraphEdge)}
    return nodes, edges


async def test_observations_become_typed_nodes_and_co_occurrence_edges_with_capped_provenance(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    # 40 observations edit auth.py while naming the `auth` concept; one also hits ENOENT.
    items = [
        obs("s1", n, files=["src/app/auth.py"], concepts=["auth"], when=at(minutes=n))
        for n in range(40)
    ]
    items.append(
        obs(
            "s1",
            99,
            type="error",
            title="Bash failed: ENOENT reading src/app/auth.py via loadConfig",
            files=["src/app/auth.py"],
            when=at(hours=2),
        )
    )
    items.append(obs("s1", 100, type="command", title="Ran: uv add httpx && pytest -q"))
    await put_obs(store, *items)
    out = await lifecycle.digest_events(DigestIn())
    assert out["folded"] == {"graph": 42, "profile": 42}

    found = await lifecycle.graph_query(GraphQueryIn(query="auth"))
    nodes = by_name(found)
    auth_py = nodes["src/app/auth.py"]
    assert auth_py["type"] == "file" and auth_py["weight"] == 41
    # provenance: the 32 most recent, newest first
    assert len(auth_py["sourceObservationIds"]) == 32
    assert auth_py["sourceObservationIds"][0] == obs("s1", 99).id
    assert obs("s1", 0).id not in auth_py["sourceObservationIds"]
    assert nodes["auth"]["type"] == "concept"
    assert set(found) == {"nodes", "edges", "depth", "totalNodes", "totalEdges", "truncated",
                          "limit", "offset"}  # fmt: skip
    assert found["totalNodes"] == len(found["nodes"]) == 2 and not found["truncated"]
    (edge,) = found["edges"]
    assert edge["type"] == "co_occurs" and edge["weight"] == 40 and edge["validTo"] is None
    assert {edge["sourceNodeId"], edge["targetNodeId"]} == {auth_py["id"], nodes["auth"]["id"]}

    # typed from the one extractor: error code, symbol, command, package
    every = by_name(await lifecycle.graph_query(GraphQueryIn(limit=100)))
    assert every["ENOENT"]["type"] == "error"
    assert every["loadConfig"]["type"] == "symbol"
    assert every["pytest"]["type"] == "command"
    assert every["httpx"]["type"] == "package"
    # neither query nor start: best connected first
    top = await lifecycle.graph_query(GraphQueryIn(limit=1))
    assert top["nodes"][0]["name"] == "src/app/auth.py" and top["truncated"]

    stats = await lifecycle.graph_stats(GraphStatsIn())
    assert stats["nodesByType"]["file"] == 1 and stats["nodesByType"]["error"] >= 2
    assert stats["totalNodes"] == len(every) and stats["totalEdges"] >= 4


async def test_walk_from_a_node_is_bounded_by_depth_and_bad_input_names_the_field(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    # a chain a.py - b.py - c.py - d.py (each observation names two neighbours)
    chain = ["a.py", "b.py", "c.py", "d.py"]
    await put_obs(store, *(obs("s", i, files=chain[i : i + 2]) for i in range(3)))
    await lifecycle.digest_events(DigestIn())
    start = node_id("proj", "file", "a.py")
    one = await lifecycle.graph_query(GraphQueryIn(start_node_id=start, max_depth=1))
    assert [n["name"] for n in one["nodes"]] == ["a.py", "b.py"] and one["depth"] == 1
    two = await lifecycle.graph_query(GraphQueryIn(start_node_id=start, max_depth=2))
    assert [n["name"] for n in two["nodes"]] == ["a.py", "b.py", "c.py"]
    assert two["totalEdges"] == 2
    far = await lifecycle.graph_query(GraphQueryIn(start_node_id=start, max_depth=9))
    assert far["depth"] == 5 and far["totalNodes"] == 4  # clamped like upstream
    page = await lifecycle.graph_query(
        GraphQueryIn(start_node_id=start, max_depth=3, limit=2, offset=1)
    )
    assert [n["name"] for n in page["nodes"]] == ["b.py", "c.py"] and page["truncated"]
    assert len(page["edges"]) == 1  # only edges between nodes of the page

    with pytest.raises(FunctionError) as missing:
        await lifecycle.graph_query(GraphQueryIn(start_node_id="gn_nope"))
    assert missing.value.code == "NOT_FOUND" and missing.value.field == "startNodeId"


async def test_a_superseded_memory_closes_its_edges_and_links_new_to_dropped(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await put_memory(
        store,
        Memory(id="m1", content="we use postgres", concepts=["database", "postgres"],
               project="proj", created_at=iso(at(days=1))),
    )  # fmt: skip
    await lifecycle.digest_events(DigestIn())
    await put_memory(
        store,
        Memory(id="m2", content="we moved to sqlite", concepts=["database", "sqlite"],
               project="proj", created_at=iso(at(days=5)), supersedes="m1"),
    )  # fmt: skip
    await lifecycle.digest_events(DigestIn())

    live = await lifecycle.graph_query(GraphQueryIn(query="", limit=50))
    names = {n["id"]: n["name"] for n in live["nodes"]}
    pairs = {(names[e["sourceNodeId"]], names[e["targetNodeId"]], e["type"]) for e in live["edges"]}
    assert ("sqlite", "postgres", "supersedes") in pairs
    assert not any({"database", "postgres"} == {a, b} for a, b, _ in pairs)
    everything = await lifecycle.graph_query(GraphQueryIn(limit=50, include_expired=True))
    closed = [e for e in everything["edges"] if e["validTo"] is not None]
    assert len(closed) == 1 and closed[0]["validTo"] == iso(at(days=5))
    assert closed[0]["validFrom"] == iso(at(days=1))
    postgres = by_name(everything)["postgres"]
    assert postgres["degree"] == 1  # only the supersedes edge is live
    stats = await lifecycle.graph_stats(GraphStatsIn())
    assert stats["expiredEdges"] == 1 and stats["edgesByType"] == {"co_occurs": 2, "supersedes": 1}


async def test_replay_after_a_crash_with_other_batch_boundaries_counts_nothing_twice(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await put_obs(
        store,
        *(
            obs(f"s{n % 3}", n, files=[f"f{n % 4}.py", "core.py"], concepts=["api"])
            for n in range(30)
        ),
    )
    life = await store.client.bucket(LIFECYCLE_BUCKET)
    profiles = await store.client.bucket(PROFILES_BUCKET)
    # A small provenance cap, so a replayed mention is not hidden by the provenance dedup.
    graph = GraphFeed(await store.client.bucket(GRAPH_BUCKET), cap=4)

    def sinks() -> list[Any]:
        return [graph, ProfileFeed(profiles, ProfileConfig())]

    class Crash(Exception):
        pass

    def crash(sink: str, seq: int) -> None:
        if seq >= 14:  # after the sink's writes, before its cursor
            raise Crash(sink)

    with pytest.raises(Crash):
        await digest(store, life, sinks(), batch=7, fault=crash)
    again = await digest(store, life, sinks(), batch=11)
    assert again["graph"] == 30 - 7  # resumed after the last stored cursor
    nodes, edges = await graph_dump(store)
    core = nodes["n." + node_id("proj", "file", "core.py")]
    assert core.weight == 30 and core.seq == 30 and len(core.source_ids) == 4
    assert sum(e.weight for e in edges.values()) == 30 * 3  # (f, core), (f, x), (core, x)
    stats = await lifecycle.graph_stats(GraphStatsIn())
    assert stats["totalNodes"] == len(nodes) == 6 and stats["totalEdges"] == len(edges)
    prof: ProjectProfile | None = await profiles.get(profile_key("proj"), ProjectProfile)
    assert prof is not None and prof.observations == 30 and prof.sessions == 3
    assert prof.seq == 30 and prof.files[0].name == "core.py" and prof.files[0].count == 30

    # a run stops after about `limit` events; the next one goes on from there
    await put_obs(store, *(obs("s9", n, files=["late.py"]) for n in range(12)))
    assert await digest(store, life, sinks(), batch=5, limit=5) == {"graph": 5, "profile": 5}
    assert await digest(store, life, sinks(), batch=5) == {"graph": 7, "profile": 7}


async def test_compaction_forgets_removed_provenance_and_drops_expired_edges_and_idle_nodes(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await put_old_and_new(store)
    await lifecycle.digest_events(DigestIn())
    await forget(store, ForgetIn(observation_ids=[obs("s", 1).id, obs("s", 2).id]))

    first = await lifecycle.graph_compact(DecayIn(now=iso(at(days=201))))
    assert first["folded"]["graph"] == 1 and first["forgottenIds"] == 2
    assert first["edgesClosed"] == 1  # old.py - legacy lost its only evidence
    nodes, edges = await graph_dump(store)
    new_py = nodes["n." + node_id("proj", "file", "new.py")]
    assert new_py.source_ids == [obs("s", 3).id] and new_py.weight == 2
    assert all(obs("s", 1).id not in e.source_ids for e in edges.values())
    # old.py lost its provenance and its only edge closed: dropped now
    assert "n." + node_id("proj", "file", "old.py") not in nodes
    assert first["nodesDeleted"] == 2

    later = await lifecycle.graph_compact(DecayIn(now=iso(at(days=201 + 91))))
    assert later["edgesDeleted"] == 1  # the closed edge, past the 90-day retention
    nodes, edges = await graph_dump(store)
    assert len(edges) == 1 and len(nodes) == 2
    stats = await lifecycle.graph_stats(GraphStatsIn())
    assert stats == {
        "totalNodes": 2, "totalEdges": 1, "nodesByType": {"concept": 1, "file": 1},
        "edgesByType": {"co_occurs": 1}, "expiredEdges": 0, "compactedAt": iso(at(days=292)),
    }  # fmt: skip
    # untouched for longer than the retention, and no live edge: idle nodes go too
    await put_obs(store, obs("t", 1, files=["lonely.py"], when=at(days=292)))
    await lifecycle.digest_events(DigestIn())
    assert "n." + node_id("proj", "file", "lonely.py") in (await graph_dump(store))[0]
    await lifecycle.graph_compact(DecayIn(now=iso(at(days=292 + 91))))
    left = (await graph_dump(store))[0]
    assert "n." + node_id("proj", "file", "lonely.py") not in left
