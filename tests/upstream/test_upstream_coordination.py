"""The unmodified upstream MCP shim (@agentmemory/mcp 0.9.29) calls each of the 14
coordination tools with upstream's argument shapes (lists as comma-separated strings,
JSON as strings, flags as "true") against our server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.upstream.test_upstream_clients import PKG, SECRET, pytestmark, ready_service

__all__ = ["pytestmark"]

TOOLS = {
    "memory_action_create",
    "memory_action_update",
    "memory_frontier",
    "memory_next",
    "memory_lease",
    "memory_routine_run",
    "memory_signal_send",
    "memory_signal_read",
    "memory_checkpoint",
    "memory_sentinel_create",
    "memory_sentinel_trigger",
    "memory_sketch_create",
    "memory_sketch_promote",
    "memory_crystallize",
}


async def test_the_shim_calls_every_coordination_tool(engine_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _eng, url = await ready_service(engine_factory)
    headers = {"authorization": f"Bearer {SECRET}"}
    async with httpx.AsyncClient(base_url=url, headers=headers) as http:
        r = await http.post(
            "/agentmemory/routines",
            json={
                "name": "release",
                "steps": [{"title": "tag"}, {"title": "publish", "dependsOn": [0]}],
            },
        )
        assert r.status_code == 201, r.text
        routine_id = r.json()["routine"]["id"]
    params = StdioServerParameters(
        command="node",
        args=[str(PKG / "mcp" / "bin.mjs")],
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "AGENTMEMORY_URL": url,
            "AGENTMEMORY_SECRET": SECRET,
        },
    )
    called: set[str] = set()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert TOOLS <= set(listed)

        async def call(name: str, args: dict[str, Any]) -> Any:
            res = await s.call_tool(name, args)
            assert not res.is_error, (name, res.content)
            called.add(name)
            return json.loads(res.content[0].text)  # type: ignore[union-attr]

        first = await call(
            "memory_action_create",
            {
                "title": "cut the release branch",
                "description": "from main",
                "priority": 8,
                "project": "shim",
                "tags": "release, git",
            },
        )
        a1 = first["action"]["id"]
        assert first["action"]["tags"] == ["release", "git"]
        second = await call(
            "memory_action_create",
            {"title": "write the changelog", "project": "shim", "requires": a1, "parentId": a1},
        )
        a2 = second["action"]["id"]
        assert second["action"]["status"] == "blocked"
        got = await call("memory_action_update", {"actionId": a1, "priority": 9})
        assert got["action"]["priority"] == 9
        front = await call("memory_frontier", {"project": "shim", "agentId": "claude", "limit": 5})
        assert [i["action"]["id"] for i in front["frontier"]] == [a1]
        nxt = await call("memory_next", {"project": "shim", "agentId": "claude"})
        assert nxt["suggestion"]["actionId"] == a1

        lease = await call(
            "memory_lease",
            {"actionId": a1, "agentId": "claude", "operation": "acquire", "ttlMs": 60000},
        )
        assert lease["success"] is True
        held = await call(
            "memory_lease", {"actionId": a1, "agentId": "codex", "operation": "acquire"}
        )
        assert held["success"] is False and held["heldBy"] == "claude"
        renewed = await call(
            "memory_lease",
            {"actionId": a1, "agentId": "claude", "operation": "renew", "ttlMs": 60000},
        )
        assert renewed["success"] is True
        released = await call(
            "memory_lease",
            {
                "actionId": a1,
                "agentId": "claude",
                "operation": "release",
                "result": "branch release/1.2 cut from main",
            },
        )
        assert released["action"]["status"] == "done"

        run = await call(
            "memory_routine_run",
            {"routineId": routine_id, "project": "shim", "initiatedBy": "claude"},
        )
        assert run["actionsCreated"] == 2

        sig = await call(
            "memory_signal_send",
            {"from": "claude", "to": "codex", "content": "changelog is yours", "type": "handoff"},
        )
        await call(
            "memory_signal_send",
            {"from": "codex", "to": "claude", "content": "on it", "replyTo": sig["signal"]["id"]},
        )
        inbox = await call(
            "memory_signal_read", {"agentId": "codex", "unreadOnly": "true", "limit": 10}
        )
        assert [x["id"] for x in inbox["signals"]] == [sig["signal"]["id"]]

        cp = await call(
            "memory_checkpoint",
            {"operation": "create", "name": "CI", "type": "ci", "linkedActionIds": a2},
        )
        cp_id = cp["checkpoint"]["id"]
        passed = await call(
            "memory_checkpoint",
            {"operation": "resolve", "checkpointId": cp_id, "status": "passed"},
        )
        assert passed["checkpoint"]["status"] == "passed"
        listed_cps = await call("memory_checkpoint", {"operation": "list"})
        assert [c["id"] for c in listed_cps["checkpoints"]] == [cp_id]

        snl = await call(
            "memory_sentinel_create",
            {
                "name": "release approved",
                "type": "webhook",
                "config": '{"path": "/hooks/approve"}',
                "linkedActionIds": a2,
                "expiresInMs": 600000,
            },
        )
        fired = await call(
            "memory_sentinel_trigger",
            {"sentinelId": snl["sentinel"]["id"], "result": '{"approvedBy": "lead"}'},
        )
        assert fired["sentinel"]["result"] == {"approvedBy": "lead"}

        sk = await call(
            "memory_sketch_create",
            {
                "title": "try a faster changelog tool",
                "description": "spike",
                "expiresInMs": 600000,
                "project": "shim",
            },
        )
        promoted = await call(
            "memory_sketch_promote", {"sketchId": sk["sketch"]["id"], "project": "shim"}
        )
        assert promoted["success"] is True

        crystal = await call(
            "memory_crystallize", {"actionIds": a1, "project": "shim", "sessionId": "s-1"}
        )
        assert crystal["crystal"]["sourceActionIds"] == [a1]

        # A refusal reaches the model as text it can act on, naming the field (the shim
        # itself does not mark it isError).
        bad = await s.call_tool("memory_lease", {"actionId": a1, "operation": "acquire"})
        assert "agentId" in bad.content[0].text  # type: ignore[union-attr]
    assert called == TOOLS
