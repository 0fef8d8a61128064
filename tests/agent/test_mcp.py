"""`agentmemory mcp` as an agent runs it: a subprocess on stdio, driven by the SDK client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.agent.cli_stack import CLI, CliStack
from tests.fixtures import wait_until
from workers.mcp.gateway import Gateway, RestGateway
from workers.mcp.server import build_app

TOOLS = {
    "memory_save",
    "memory_recall",
    "memory_smart_search",
    "memory_sessions",
    "memory_timeline",
    "memory_profile",
    "memory_file_history",
    "memory_forget",
    "memory_export",
    "memory_consolidate",
    "memory_audit",
}


def _params(stack: CliStack, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "mcp"],
        env={**stack.env, "AGENTMEMORY_URL": stack.url, **env},
    )


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_mcp_server_over_stdio_saves_recalls_reads_and_prompts(stack: CliStack) -> None:
    stack.start()
    async with stdio_client(_params(stack)) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert TOOLS <= set(tools)
        assert tools["memory_save"].input_schema["required"] == ["content"]

        saved = await s.call_tool(
            "memory_save",
            {
                "content": "Payments use idempotency keys on every Stripe call",
                "type": "decision",
                "concepts": ["stripe"],
            },
        )
        assert not saved.is_error, _text(saved)
        assert saved.structured_content is not None

        sessions = await s.call_tool("memory_sessions", {"limit": 5})
        assert not sessions.is_error and "sessions" in (sessions.structured_content or {})

        status = await s.read_resource("agentmemory://status")
        assert json.loads(status.contents[0].text)["status"] == "ok"  # type: ignore[union-attr]
        latest = await s.read_resource("agentmemory://memories/latest")
        assert "idempotency keys" in latest.contents[0].text  # type: ignore[union-attr]

        prompt = await s.get_prompt("recall_context", {"task": "add a Stripe refund endpoint"})
        assert "add a Stripe refund endpoint" in prompt.messages[0].content.text  # type: ignore[union-attr]
        # a missing prompt argument: an MCP error naming it (no traceback, no pydantic text)
        with pytest.raises(MCPError, match="`task`") as missing:
            await s.get_prompt("recall_context", {})
        assert "pydantic" not in str(missing.value) and "Traceback" not in str(missing.value)
        # a wrong argument type: a tool error naming the field, no URL to pydantic's docs
        wrong = await s.call_tool("memory_sessions", {"limit": "many"})
        assert wrong.is_error and "limit" in _text(wrong) and "http" not in _text(wrong)

        bad = await s.call_tool("memory_recall", {"query": "x", "limit": "lots"})
        assert bad.is_error and "limit" in _text(bad)
        empty = await s.call_tool("memory_save", {"content": "   "})
        assert empty.is_error and "content" in _text(empty)

        recalled = await s.call_tool(
            "memory_recall", {"query": "stripe idempotency keys", "limit": 5}
        )
        assert not recalled.is_error, _text(recalled)
        assert "idempotency" in json.dumps(recalled.structured_content)


async def test_mcp_tool_reports_a_down_server_as_a_tool_error(stack: CliStack) -> None:
    async with stdio_client(_params(stack)) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        result = await s.call_tool("memory_smart_search", {"query": "anything"})
        assert result.is_error
        assert "not reachable" in _text(result) and "agentmemory start" in _text(result)


async def test_shim_routes_list_and_call_the_declared_tools(stack: CliStack) -> None:
    stack.start()
    gateway = RestGateway(stack.url, stack.secret())
    tools = await gateway.tools()  # GET /agentmemory/mcp/tools
    assert TOOLS <= {t["name"] for t in tools}
    assert all(t["inputSchema"]["type"] == "object" for t in tools)
    ok = await gateway.call_tool("memory_save", {"content": "shim saved this"})
    assert ok.get("isError") is not True and ok["content"][0]["type"] == "text"
    assert ok["structuredContent"]["memory"]["content"] == "shim saved this"
    bad = await gateway.call_tool("memory_audit", {"limit": 0})
    assert bad["isError"] is True and "limit" in bad["content"][0]["text"]
    await gateway.close()


async def test_mcp_reaches_the_local_engine_over_the_bus_without_a_url(stack: CliStack) -> None:
    stack.start()
    # A wrong secret: REST would answer 401, so success proves the bus path was taken.
    env = {
        **stack.env,
        "AGENTMEMORY_DATA_DIR": str(stack.data_dir),
        "AGENTMEMORY_PORT": str(stack.port),
    }
    env["AGENTMEMORY_SECRET"] = "not-the-secret"
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        saved = await s.call_tool("memory_save", {"content": "saved over NATS", "type": "note"})
        assert not saved.is_error, _text(saved)
        sessions = await s.call_tool("memory_sessions", {"limit": 3})
        assert not sessions.is_error, _text(sessions)
    with stack.rest() as c:
        memories = c.get("/agentmemory/memories").json()["memories"]
    assert any(m["content"] == "saved over NATS" for m in memories)


async def test_every_tool_resource_and_prompt_answers_against_the_real_service(
    stack: CliStack,
) -> None:
    import mcp

    stack.start()
    gateway = RestGateway(stack.url, stack.secret())

    async def provider() -> Gateway:
        return gateway

    app = build_app(provider)
    project = "payments-svc"
    async with mcp.Client(app) as c:
        saved = await c.call_tool(
            "memory_save",
            {
                "content": "Webhook retries are deduplicated by Stripe event id",
                "project": project,
                "files": ["app/webhooks/stripe.py"],
            },
        )
        assert not saved.is_error, _text(saved)
        memory_id = json.dumps(saved.structured_content)
        calls: dict[str, dict[str, Any]] = {
            "memory_smart_search": {"query": "stripe webhook retries"},
            "memory_recall": {"query": "stripe webhook retries", "project": project},
            "memory_sessions": {},
            "memory_timeline": {"project": project, "after": "2026-01-01T00:00:00Z"},
            "memory_profile": {"project": project},
            "memory_file_history": {"files": ["app/webhooks/stripe.py"]},
            "memory_export": {},
            "memory_consolidate": {},
            "memory_audit": {"limit": 5},
        }
        # upstream's argument shapes: lists as comma-separated strings, booleans as
        # strings, counts around an anchor (tools-registry of @agentmemory/agentmemory)
        calls |= {
            "memory_timeline:upstream": {"anchor": "stripe", "before": 2, "after": 2},
            "memory_profile:upstream": {"project": project, "refresh": "true"},
            "memory_audit:upstream": {"operation": "remember", "limit": 5},
            "memory_consolidate:upstream": {"tier": "semantic"},
            "memory_file_history:upstream": {"files": "app/webhooks/stripe.py, app/x.py"},
            "memory_smart_search:upstream": {"query": "stripe", "expandIds": "a,b"},
            "memory_save:upstream": {"content": "Use Decimal for money", "concepts": "money, py"},
        }
        for key, args in calls.items():
            name = key.partition(":")[0]
            result = await c.call_tool(name, args)
            assert not result.is_error, f"{key}: {_text(result)}"
            assert isinstance(result.structured_content, dict), key
        bad_tier = await c.call_tool("memory_consolidate", {"tier": "weekly"})
        assert bad_tier.is_error and "tier" in _text(bad_tier)
        resources = await c.list_resources()
        templates = await c.list_resource_templates()
        assert {str(r.uri) for r in resources.resources} == {
            "agentmemory://status", "agentmemory://memories/latest", "agentmemory://graph/stats"
        }  # fmt: skip
        assert len(templates.resource_templates) == 3
        prompts = await c.list_prompts()
        assert {p.name for p in prompts.prompts} == {
            "recall_context", "session_handoff", "detect_patterns"
        }  # fmt: skip
        hits = await c.call_tool("memory_smart_search", {"query": "stripe webhook retries"})
        assert (
            "Stripe event id" in json.dumps(hits.structured_content)
            or "stripe" in json.dumps(hits.structured_content).lower()
        )

        ids = [
            m["id"] for m in (await c.call_tool("memory_export", {})).structured_content["memories"]
        ]  # type: ignore[index]
        assert ids and ids[0] in memory_id
        forgot = await c.call_tool("memory_forget", {"memoryIds": ids, "reason": "test cleanup"})
        assert not forgot.is_error, _text(forgot)
        audit = await c.call_tool("memory_audit", {"limit": 5})
        assert "test cleanup" in json.dumps(audit.structured_content)

        profile = await c.read_resource(f"agentmemory://project/{project}/profile")
        assert profile.contents and json.loads(profile.contents[0].text) is not None  # type: ignore[union-attr]
        handoff = await c.get_prompt("session_handoff", {"project": project})
        assert "handoff" in handoff.messages[0].content.text  # type: ignore[union-attr]
    await gateway.close()


def test_upstream_shim_routes_list_and_call_every_tool_over_rest(stack: CliStack) -> None:
    assert "workers.mcp.rest" in stack.config.read_text()  # the default stack serves the shim
    stack.start()
    with stack.rest() as c:
        wait_until(
            lambda: c.get("/agentmemory/mcp/tools").status_code == 200,
            timeout=30,
            what="mcp routes",
        )
        tools = c.get("/agentmemory/mcp/tools").json()["tools"]
        assert TOOLS <= {t["name"] for t in tools}
        assert all(t["inputSchema"]["type"] == "object" for t in tools)
        saved = c.post(
            "/agentmemory/mcp/call",
            json={"name": "memory_save", "arguments": {"content": "via the shim"}},
        )
        assert saved.status_code == 200 and not saved.json().get("isError")
        listed = c.get("/agentmemory/memories").json()["memories"]
        assert any(m["content"] == "via the shim" for m in listed)
        bad = c.post(
            "/agentmemory/mcp/call", json={"name": "memory_recall", "arguments": {}}
        ).json()
        assert bad["isError"] is True and "query" in bad["content"][0]["text"]
        unknown = c.post(
            "/agentmemory/mcp/call", json={"name": "memory_fly", "arguments": {}}
        ).json()
        assert unknown["isError"] is True and "memory_fly" in unknown["content"][0]["text"]
        malformed = c.post("/agentmemory/mcp/call", json={"arguments": {}})
        assert malformed.status_code == 400 and malformed.json()["error"]["field"] == "name"
