"""The search routes through the real http trigger, with upstream's payloads and shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.fixtures import eventually, free_port

SECRET = "search-test-secret"
AUTH = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


async def test_search_routes_answer_in_upstream_shapes(spawn: Any, tmp_path: Path) -> None:
    port = free_port()
    spawn("workers.trigger_plugins", "http", env={
        "AGENTMEMORY_REST_PORT": str(port), "AGENTMEMORY_SECRET": SECRET, "HOME": str(tmp_path / "home"),
    })  # fmt: skip
    spawn(
        "workers.memory",
        env={"AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"), "HOME": str(tmp_path / "home")},
    )
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers=AUTH, timeout=15
    ) as rest:

        async def served() -> bool:
            return (
                await rest.post("/agentmemory/smart-search", json={"query": "x"})
            ).status_code == 200

        await eventually(served, timeout=20, what="search routes served")
        r = await rest.post("/agentmemory/observe", json={
            "hookType": "post_tool_failure", "sessionId": "s1", "project": "web", "cwd": "/w",
            "timestamp": "2026-02-03T10:00:00Z",
            "data": {"tool_name": "Bash", "tool_input": "npm test", "error": "TS2345 in src/api/client.ts"},
        })  # fmt: skip
        assert r.status_code == 201

        async def hit() -> list[dict[str, Any]]:
            r = await rest.post("/agentmemory/smart-search", json={"query": "TS2345", "limit": 5})
            return list(r.json()["results"])

        results = await eventually(hit, timeout=15, what="observation searchable")
        assert r.json()["observationId"] == results[0]["obsId"]
        assert set(results[0]) >= {"obsId", "sessionId", "title", "type", "score", "timestamp"}

        ctx = (
            await rest.post(
                "/agentmemory/context", json={"sessionId": "s2", "project": "web", "budget": 1500}
            )
        ).json()
        assert set(ctx) == {"context", "blocks", "tokens"} and ctx["tokens"] <= 1500
        enr = (await rest.post("/agentmemory/enrich", json={
            "sessionId": "s2", "files": ["src/api/client.ts"], "terms": [], "toolName": "Edit"})).json()  # fmt: skip
        assert set(enr) == {"context", "truncated"} and "TS2345" in enr["context"]
        prof = (await rest.get("/agentmemory/profile", params={"project": "web"})).json()
        assert prof["observations"] == 1

        bad = await rest.post("/agentmemory/search", json={"query": "x", "limit": "many"})
        assert bad.status_code == 400
        assert bad.json()["error"]["field"] == "limit"
