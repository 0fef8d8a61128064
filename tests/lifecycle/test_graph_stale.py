"""cascade-update marks the dependants of a superseded memory stale, as upstream's
cascade.ts does: every graph node and edge whose sources overlap the memory's (its source
observations, or the memory itself) gets `stale`; graph query and stats skip them, walks do
not follow stale edges; current memories sharing two concepts are counted."""

from __future__ import annotations

from typing import Any

import msgspec

from functions.graph.wire import GraphQueryIn, GraphStatsIn
from functions.kernel.records import GRAPH_BUCKET, GraphNode, Memory
from functions.kernel.store import MemoryStore
from functions.lifecycle.wire import DigestIn
from functions.relations.relation_service import CascadeIn, EvolveIn, RelationService
from tests.lifecycle._data import obs, put_memory, put_obs


def query(**wire: object) -> GraphQueryIn:
    return msgspec.convert(wire, GraphQueryIn)


def names(reply: dict[str, Any]) -> set[str]:
    return {n["name"] for n in reply["nodes"]}


async def test_cascade_update_marks_the_superseded_memorys_graph_stale(
    store: MemoryStore, lifecycle: Any
) -> None:
    login = obs("s1", 1, files=["src/auth/login.py"], concepts=["jwt"])
    invoice = obs("s2", 2, files=["src/billing/invoice.py"], concepts=["tax"])
    await put_obs(store, login, invoice)
    old = Memory(id="mem_old", title="Login tokens", content="Login signs JWT with HS256",
                 project="proj", concepts=["jwt", "auth"], files=["src/auth/login.py"],
                 source_ids=[login.id], created_at="2026-01-01T12:00:00Z")  # fmt: skip
    sibling = Memory(id="mem_sib", title="Auth tokens", content="Tokens expire after 1 h",
                     project="proj", concepts=["jwt", "auth", "expiry"],
                     created_at="2026-01-01T12:00:00Z")  # fmt: skip
    await put_memory(store, old)
    await put_memory(store, sibling)
    await lifecycle.digest_events(DigestIn())
    before = await lifecycle.graph_stats(GraphStatsIn())
    assert {"src/auth/login.py", "jwt", "src/billing/invoice.py"} <= names(
        await lifecycle.graph_query(query(limit=100))
    )

    rel = RelationService(lifecycle.svc)
    await rel.evolve(msgspec.convert(
        {"memoryId": old.id, "newContent": "Login signs JWT with RS256"}, EvolveIn))  # fmt: skip
    out = msgspec.to_builtins(
        await rel.cascade_update(msgspec.convert({"supersededMemoryId": old.id}, CascadeIn))
    )
    flagged = out["flagged"]
    assert flagged["nodes"] >= 3 and flagged["edges"] >= 1  # login.py, jwt, auth + links
    # the sibling, and the new version (current, same concepts), as upstream counts them
    assert "mem_sib" in out["siblingIds"] and out["supersededBy"] in out["siblingIds"]
    assert flagged["siblingMemories"] == len(out["siblingIds"]) == 2
    assert out["total"] == flagged["nodes"] + flagged["edges"] + 2

    graph = await store.client.bucket(GRAPH_BUCKET)
    stale = [n async for _, n in graph.scan("n.>", GraphNode) if n.stale]
    assert {"src/auth/login.py", "jwt", "auth"} <= {n.name for n in stale}
    assert "src/billing/invoice.py" not in {n.name for n in stale}

    # graph query and stats skip the stale ones; the unrelated record is still there
    listed = names(await lifecycle.graph_query(query(limit=100)))
    assert "src/auth/login.py" not in listed and "jwt" not in listed
    assert "src/billing/invoice.py" in listed
    assert (await lifecycle.graph_query(query(query="login")))["nodes"] == []
    after = await lifecycle.graph_stats(GraphStatsIn())
    assert after["totalNodes"] == before["totalNodes"] - len(stale)
    assert after["totalEdges"] < before["totalEdges"]
    (inv,) = (await lifecycle.graph_query(query(query="invoice")))["nodes"]
    walk = await lifecycle.graph_query(query(startNodeId=inv["id"], maxDepth=3))
    assert names(walk) == {"src/billing/invoice.py", "tax"}

    # marking again changes nothing (the same records are flagged, the counts hold)
    again = msgspec.to_builtins(
        await rel.cascade_update(msgspec.convert({"supersededMemoryId": old.id}, CascadeIn))
    )
    assert again["flagged"] == flagged
    assert await lifecycle.graph_stats(GraphStatsIn()) == after
