"""The real processes: observations through REST into the memory worker, the lifecycle
worker folding MEM_EVENTS into the graph and the profile, the graph routes through the
real http trigger in upstream's shapes, and bad input answered 400 naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from engine import Client, FunctionError
from tests.fixtures import eventually, free_port

SECRET = "graph-test-secret"
AUTH = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


async def test_graph_routes_and_profile_over_the_real_workers(
    client: Client, spawn: Any, tmp_path: Path
) -> None:
    port = free_port()
    home = str(tmp_path / "home")
    spawn("workers.trigger_plugins", "http", env={
        "AGENTMEMORY_REST_PORT": str(port), "AGENTMEMORY_SECRET": SECRET, "HOME": home,
    })  # fmt: skip
    env = {"AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"), "HOME": home,
           "AGENTMEMORY_SEARCH": "off"}  # fmt: skip
    spawn("workers.memory", env=env)
    spawn("workers.lifecycle", env=env)
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers=AUTH, timeout=30
    ) as rest:

        async def served() -> bool:
            r = await rest.get("/agentmemory/graph/stats")
            return r.status_code == 200

        await eventually(served, timeout=30, what="graph routes served")
        for n, (tool, data) in enumerate([
            ("Edit", {"file_path": "src/shop/cart.py", "old_string": "a", "new_string": "b"}),
            ("Bash", {"command": "pytest -q tests/test_cart.py"}),
            ("Edit", {"file_path": "src/shop/cart.py", "old_string": "c", "new_string": "d"}),
        ]):  # fmt: skip
            r = await rest.post("/agentmemory/observe", json={
                "hookType": "post_tool_use", "sessionId": "s1", "project": "shop", "cwd": "/shop",
                "timestamp": f"2026-03-01T10:0{n}:00Z",
                "data": {"tool_name": tool, "tool_input": data, "tool_output": "ok"},
            })  # fmt: skip
            assert r.status_code == 201
        r = await rest.post("/agentmemory/observe", json={
            "hookType": "post_tool_failure", "sessionId": "s1", "project": "shop", "cwd": "/shop",
            "timestamp": "2026-03-01T10:05:00Z",
            "data": {"tool_name": "Bash", "tool_input": {"command": "npm test"},
                     "error": "TS2345 in src/shop/cart.ts: token sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX"},
        })  # fmt: skip
        assert r.status_code == 201

        folded = await client.call("mem::digest-events", {}, timeout=60)
        assert folded["folded"]["graph"] >= 4

        r = await rest.post("/agentmemory/graph/query", json={"query": "cart"})
        assert r.status_code == 200
        body = r.json()
        assert set(body) == {"nodes", "edges", "depth", "totalNodes", "totalEdges",
                             "truncated", "limit", "offset"}  # fmt: skip
        names = {n["name"]: n for n in body["nodes"]}
        cart = names["src/shop/cart.py"]
        assert cart["type"] == "file" and len(cart["sourceObservationIds"]) == 2
        assert {"id", "type", "name", "properties", "sourceObservationIds", "createdAt"} <= set(
            cart
        )

        walk = (await rest.post("/agentmemory/graph/query", json={
            "startNodeId": cart["id"], "maxDepth": 1})).json()  # fmt: skip
        assert walk["nodes"][0]["id"] == cart["id"] and walk["depth"] == 1
        assert all(e["validTo"] is None for e in walk["edges"])
        stats = (await rest.get("/agentmemory/graph/stats")).json()
        assert stats["nodesByType"]["file"] >= 2 and stats["nodesByType"]["error"] >= 1
        assert stats["totalEdges"] == sum(stats["edgesByType"].values()) > 0
        # nothing stored in the graph carries the secret the error output had
        every = (await rest.post("/agentmemory/graph/query", json={"limit": 5000})).json()
        assert "ABCDEFGHIJKLMNOP" not in str(every)

        bad = await rest.post("/agentmemory/graph/query", json={"nodeType": "planet"})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "nodeType"
        bad = await rest.post("/agentmemory/graph/query", json={"maxDepth": 0})
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "maxDepth"
        missing = await rest.post("/agentmemory/graph/query", json={"startNodeId": "gn_x"})
        assert missing.status_code == 404

    prof = await client.call("mem::project-profile", {"project": "shop"})
    # two mentions in one session: 1 + 1/2^2
    assert prof["profile"]["topFiles"][0] == {"file": "src/shop/cart.py", "frequency": 2,
                                              "score": pytest.approx(1.25, abs=0.01)}  # fmt: skip
    with pytest.raises(FunctionError) as no_project:
        await client.call("mem::project-profile", {})
    assert no_project.value.code == "BAD_REQUEST" and no_project.value.field == "project"
