"""memory_graph_query and graph/query take upstream's node types (its extraction's:
function, library, decision, pattern, person ...), which were refused with 400: function and
library are our symbol and package; the others are kinds only a model's extraction makes,
so without one they find nothing (an answer, not an error)."""

from __future__ import annotations

import msgspec

from functions.graph.wire import GraphQueryIn
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import DigestIn
from tests.lifecycle._data import obs, put_obs


def query(**wire: object) -> GraphQueryIn:
    return msgspec.convert(wire, GraphQueryIn)  # as a caller's JSON is decoded


async def test_upstream_node_types_are_accepted(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await put_obs(
        store,
        obs("s1", 1, type="error", title="Bash failed: ENOENT reading config via loadConfig"),
        obs("s1", 2, type="command", title="Ran: uv add httpx && pytest -q"),
    )
    await lifecycle.digest_events(DigestIn())
    functions = await lifecycle.graph_query(query(nodeType="function", limit=50))
    assert {n["name"] for n in functions["nodes"]} == {"loadConfig"}
    assert all(n["type"] == "symbol" for n in functions["nodes"])
    libraries = await lifecycle.graph_query(query(nodeType="library", limit=50))
    assert "httpx" in {n["name"] for n in libraries["nodes"]}
    for kind in ("decision", "pattern", "person"):
        assert (await lifecycle.graph_query(query(nodeType=kind)))["nodes"] == []
