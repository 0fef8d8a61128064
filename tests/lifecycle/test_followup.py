"""diagnostics/followup counts for real what upstream's smart-search (#771) counts: a
smart-search that carries a sessionId, is not the viewer's and found something is an
agent-initiated search; the session's next search within the window, with another query and
no result in common, is a follow-up. Real memory worker (search and the tap), real
lifecycle worker (the diagnostics op), real http trigger (the X-Agentmemory-Source header)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from engine import Client
from tests.fixtures import eventually, free_port
from tests.lifecycle.test_graph_rest import AUTH, SECRET
from tests.search.test_functions import ENV, observe


async def test_followups_within_the_window_are_counted(
    client: Client, spawn: Any, tmp_path: Path
) -> None:
    home = str(tmp_path / "home")
    port = free_port()
    spawn("workers.trigger_plugins", "http", env={"AGENTMEMORY_REST_PORT": str(port),
                                           "AGENTMEMORY_SECRET": SECRET, "HOME": home})  # fmt: skip
    spawn("workers.memory", env={**ENV, "HOME": home})
    spawn("workers.lifecycle", env={"HOME": home, "AGENTMEMORY_SEARCH": "off"})
    await observe(client, "s1", "p", "tune the retry backoff of the uploader")
    await observe(client, "s2", "p", "lay out the settings page with a css grid")

    async def indexed() -> Any:
        out = await client.call("mem::search", {"query": "css grid", "limit": 5})
        return out if out["total"] else None

    await eventually(indexed, timeout=15)  # plain search: not counted

    async def smart(query: str, **kw: str) -> list[str]:
        out = await client.call("mem::smart-search", {"query": query, **kw})
        return [r["obsId"] for r in out["results"]]

    first = await smart("retry backoff", sessionId="agent-1")
    assert first
    assert set(await smart("css grid", sessionId="agent-1")).isdisjoint(first)  # follow-up
    await smart("css grid", sessionId="agent-1")  # the same query again: a retry
    await smart("retry backoff", sessionId="agent-1", source="viewer")  # not the agent's
    await smart("retry backoff")  # no session
    assert await smart("zzqqxx nothing matches", sessionId="agent-1") == []  # no results
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=AUTH) as rest:

        async def viewer_search() -> bool:
            r = await rest.post("/agentmemory/smart-search",
                                json={"query": "uploader", "sessionId": "agent-2"},
                                headers={"X-Agentmemory-Source": "viewer"})  # fmt: skip
            return r.status_code == 200

        await eventually(viewer_search, timeout=15)
        r = await rest.get("/agentmemory/diagnostics/followup")
    assert r.status_code == 200
    stats = r.json()
    assert stats["success"] is True and stats["windowSeconds"] == 30
    assert stats["agentInitiatedSearches"] == 3 and stats["followupWithinWindow"] == 1
    assert stats["rate"] == pytest.approx(1 / 3)
