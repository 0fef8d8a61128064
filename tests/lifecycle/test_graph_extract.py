"""graph/extract stores what it extracts, as upstream's persistGraphDelta does: nodes merged
by (type, name), co_occurs edges by (source, target, type); `nodesAdded`/`edgesAdded` count
what was extracted; a following graph query finds them, and the feed folds later events
into the same nodes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from engine import FunctionError
from functions.graph.ops import ExtractIn, GraphOps
from functions.graph.wire import GraphQueryIn, GraphStatsIn
from functions.kernel.store import MemoryStore
from functions.lifecycle.wire import DigestIn
from tests.lifecycle._data import obs, put_obs

CART = {
    "id": "obs_up1",
    "project": "shop",
    "title": "Edited src/shop/cart.py",
    "narrative": "Fixed the rounding in checkout",
    "files": ["src/shop/cart.py"],
    "concepts": ["checkout", "rounding"],
    "timestamp": "2026-03-01T10:00:00Z",
}


def query(**wire: object) -> GraphQueryIn:
    return msgspec.convert(wire, GraphQueryIn)


def extract(*observations: dict[str, Any]) -> ExtractIn:
    return msgspec.convert({"observations": list(observations)}, ExtractIn)


async def test_extracted_nodes_and_edges_are_found_by_a_graph_query(
    store: MemoryStore, lifecycle: Any
) -> None:
    ops = GraphOps(lifecycle.svc)
    out = await ops.extract(extract(CART))
    # one file and two concepts: three nodes, three pairs
    assert out.success and (out.nodes_added, out.edges_added) == (3, 3)
    assert {(e.type, e.name) for e in out.entities} == {
        ("file", "src/shop/cart.py"), ("concept", "checkout"), ("concept", "rounding"),
    }  # fmt: skip

    found = await lifecycle.graph_query(query(query="cart", project="shop"))
    (cart,) = found["nodes"]
    assert cart["type"] == "file" and cart["sourceObservationIds"] == ["obs_up1"]
    walk = await lifecycle.graph_query(query(startNodeId=cart["id"], maxDepth=2))
    assert {n["name"] for n in walk["nodes"]} == {"src/shop/cart.py", "checkout", "rounding"}
    assert len(walk["edges"]) == 3 and all(e["type"] == "co_occurs" for e in walk["edges"])
    stats = await lifecycle.graph_stats(GraphStatsIn())
    assert stats["totalNodes"] == 3 and stats["totalEdges"] == 3

    # the same entities from another observation merge into the same nodes and edges
    again = await ops.extract(extract({**CART, "id": "obs_up2"}))
    assert (again.nodes_added, again.edges_added) == (3, 3)
    stats = await lifecycle.graph_stats(GraphStatsIn())
    assert stats["totalNodes"] == 3 and stats["totalEdges"] == 3
    (cart,) = (await lifecycle.graph_query(query(query="cart")))["nodes"]
    assert cart["sourceObservationIds"] == ["obs_up2", "obs_up1"] and cart["weight"] == 2
    walk = await lifecycle.graph_query(query(startNodeId=cart["id"], maxDepth=2))
    assert len(walk["edges"]) == 3 and all(e["weight"] == 2 for e in walk["edges"])
    assert cart["degree"] == 2

    # the feed folds a later observation naming the file into that same node
    later = obs("s1", 1, files=["src/shop/cart.py"], project="shop")
    await put_obs(store, later)
    await lifecycle.digest_events(DigestIn())
    (cart,) = (await lifecycle.graph_query(query(query="cart")))["nodes"]
    assert cart["sourceObservationIds"][0] == later.id and cart["weight"] == 3


async def test_a_malformed_observation_is_refused_naming_it(lifecycle: Any) -> None:
    ops = GraphOps(lifecycle.svc)
    with pytest.raises(FunctionError) as bad:
        await ops.extract(extract(CART, {"files": 5}))
    assert bad.value.code == "BAD_REQUEST" and bad.value.field == "observations[1]"
    found = await lifecycle.graph_query(query(query="cart"))
    assert found["nodes"] == []  # nothing of a refused request is stored


@pytest.mark.unit
def test_algorithm_names_are_not_errors_and_everyday_words_are_not_concepts() -> None:
    from functions.graph.extract import observation_entities
    from functions.kernel.records import Observation

    o = Observation(
        id="obs_jwt", session_id="s", hook_type="post_tool_use", timestamp="2026-03-01T10:00:00Z", project="auth",
        title="Signed tokens with RS256 after the key rotation",
        narrative="Checked SHA256 sums; rustc said error[E0425] next to ENOENT",
        concepts=["after", "next", "jwt", "rotation"],
    )  # fmt: skip
    got = set(observation_entities(o))
    assert ("error", "RS256") not in got and ("error", "SHA256") not in got
    assert {("error", "E0425"), ("error", "ENOENT")} <= got
    assert {("concept", "jwt"), ("concept", "rotation")} <= got
    assert not {("concept", "after"), ("concept", "next")} & got
