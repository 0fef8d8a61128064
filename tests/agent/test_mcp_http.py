"""MCP over Streamable HTTP at `POST /agentmemory/mcp`, driven by the official SDK's client
against the real service (its two memory replicas share the REST port)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.agent.cli_stack import CLI, CliStack

PATH = "/agentmemory/mcp"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@asynccontextmanager
async def _session(
    stack: CliStack, headers: dict[str, str] | None = None, params: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """The SDK's streamable-HTTP client with the bearer secret, as an agent holds it."""
    auth = {"Authorization": f"Bearer {stack.secret()}", **(headers or {})}
    async with (
        httpx2.AsyncClient(headers=auth, params=params or {}) as http,
        streamable_http_client(stack.url + PATH, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _raw(stack: CliStack, **headers: str) -> httpx.Client:
    """A client with its own connection per request: a request may reach either replica."""
    return httpx.Client(
        base_url=stack.url,
        headers={"Authorization": f"Bearer {stack.secret()}", **ACCEPT, **headers},
        timeout=30,
        limits=httpx.Limits(max_keepalive_connections=0),
    )


async def test_the_sdk_client_lists_every_tool_saves_and_finds_a_memory(
    running_stack: CliStack,
) -> None:
    async with _session(running_stack) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert {"memory_save", "memory_recall", "memory_smart_search"} <= set(tools)
        assert tools["memory_save"].input_schema["required"] == ["content"]
        saved = await s.call_tool(
            "memory_save",
            {"content": "Invoices are rounded half-even, per the finance team", "type": "fact"},
        )
        assert not saved.is_error, _text(saved)
        found = await s.call_tool("memory_recall", {"query": "invoices rounded half-even"})
        assert not found.is_error, _text(found)
        assert "half-even" in json.dumps(found.structured_content)
        refused = await s.call_tool("memory_save", {"content": "  "})
        assert refused.is_error and "content" in _text(refused)
        status = await s.read_resource("agentmemory://status")
        assert json.loads(getattr(status.contents[0], "text", ""))["status"] == "ok"
        prompt = await s.get_prompt("recall_context", {"task": "round an invoice"})
        assert "round an invoice" in getattr(prompt.messages[0].content, "text", "")


async def test_the_tools_resources_and_prompts_equal_the_stdio_servers(
    running_stack: CliStack,
) -> None:
    async with _session(running_stack) as s:
        over_http = (
            [t.model_dump() for t in (await s.list_tools()).tools],
            sorted(str(r.uri) for r in (await s.list_resources()).resources),
            sorted(t.uri_template for t in (await s.list_resource_templates()).resource_templates),
            sorted(p.name for p in (await s.list_prompts()).prompts),
        )
    params = StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "mcp"],
        env={**running_stack.env, "AGENTMEMORY_URL": running_stack.url},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        over_stdio = (
            [t.model_dump() for t in (await s.list_tools()).tools],
            sorted(str(r.uri) for r in (await s.list_resources()).resources),
            sorted(t.uri_template for t in (await s.list_resource_templates()).resource_templates),
            sorted(p.name for p in (await s.list_prompts()).prompts),
        )
    assert len(over_http[0]) > 50
    assert over_http == over_stdio


async def test_refused_without_the_secret_with_a_foreign_origin_or_host(
    running_stack: CliStack,
) -> None:
    with httpx.Client(base_url=running_stack.url, headers=ACCEPT, timeout=30) as c:
        bare = c.post(PATH, json=INIT)
        assert bare.status_code == 401, bare.text
        assert bare.headers["www-authenticate"].startswith("Bearer")
        wrong = c.post(PATH, json=INIT, headers={"Authorization": "Bearer not-it"})
        assert wrong.status_code == 401
    with _raw(running_stack) as c:
        assert c.post(PATH, json=INIT).status_code == 200  # the same request, with the secret
        foreign = c.post(PATH, json=INIT, headers={"Origin": "https://attacker.example"})
        assert foreign.status_code == 403, foreign.text
        local = c.post(PATH, json=INIT, headers={"Origin": "http://localhost:5173"})
        assert local.status_code == 200, local.text
        # DNS rebinding: a page's own name, resolved to 127.0.0.1, arrives as the Host
        rebound = c.post(
            PATH, json=INIT, headers={"Host": f"attacker.example:{running_stack.port}"}
        )
        assert rebound.status_code == 421, rebound.text
    statuses: list[int] = []

    async def seen(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    # The SDK's own client without the secret: its handshake fails on the 401.
    async with httpx2.AsyncClient(event_hooks={"response": [seen]}) as http:
        with pytest.raises(Exception, match="error"):
            async with (
                streamable_http_client(running_stack.url + PATH, http_client=http) as (r, w),
                ClientSession(r, w) as s,
            ):
                await s.initialize()
    assert statuses and set(statuses) == {401}


def test_a_session_opens_is_answered_by_any_replica_and_ends(running_stack: CliStack) -> None:
    with _raw(running_stack) as c:
        opened = c.post(PATH, json=INIT)
        assert opened.status_code == 200, opened.text
        assert opened.json()["result"]["protocolVersion"] == "2025-06-18"
        sid = opened.headers["mcp-session-id"]
        assert 16 <= len(sid) and sid.isascii()
        ack = c.post(
            PATH,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers={"Mcp-Session-Id": sid},
        )
        assert ack.status_code == 202 and ack.content == b""
        # Each request on a new connection: the port's two replicas take them in turn, and
        # a session kept in one process's memory would be unknown to the other.
        for n in range(12):
            listed = c.post(
                PATH,
                json={"jsonrpc": "2.0", "id": 10 + n, "method": "tools/list"},
                headers={"Mcp-Session-Id": sid},
            )
            assert listed.status_code == 200, (n, listed.text)
            assert listed.json()["id"] == 10 + n and listed.json()["result"]["tools"]
        stream = c.get(PATH, headers={"Mcp-Session-Id": sid})
        assert stream.status_code == 405 and "POST" in stream.headers["allow"]
        unknown = c.post(
            PATH,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={"Mcp-Session-Id": "0" * 32},
        )
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32600
        assert c.delete(PATH, headers={"Mcp-Session-Id": sid}).status_code == 200
        gone = c.post(
            PATH,
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            headers={"Mcp-Session-Id": sid},
        )
        assert gone.status_code == 404
        assert c.delete(PATH).status_code == 404  # no session named: none to end
        # What the OpenAPI document says a message is, and nothing else, is served.
        for wrong, said in (
            ([INIT], "one JSON object"),
            ({**INIT, "jsonrpc": "1.0"}, "jsonrpc"),
            ({**INIT, "id": {"n": 1}}, "`id`"),
            ({"jsonrpc": "2.0", "id": 4}, "`method`"),
        ):
            refused = c.post(PATH, json=wrong)
            assert refused.status_code == 400, (wrong, refused.text)
            assert said in refused.json()["error"]["message"]


async def test_the_callers_project_and_agent_come_from_headers_or_the_query(
    running_stack: CliStack,
) -> None:
    headers = {"X-AgentMemory-Project": "billing-api", "X-AgentMemory-Agent-Id": "reviewer"}
    async with _session(running_stack, headers=headers) as s:
        saved = await s.call_tool("memory_save", {"content": "Billing retries use backoff"})
        memory = (saved.structured_content or {})["memory"]
        assert (memory["project"], memory["agentId"]) == ("billing-api", "reviewer")
        named = await s.call_tool(
            "memory_save", {"content": "Named its own project", "project": "other"}
        )
        assert (named.structured_content or {})["memory"]["project"] == "other"
    query = {"project": "ledger", "agentId": "planner"}
    async with _session(running_stack, params=query) as s:
        saved = await s.call_tool("memory_save", {"content": "Ledger rows are append-only"})
        memory = (saved.structured_content or {})["memory"]
        assert (memory["project"], memory["agentId"]) == ("ledger", "planner")
    async with _session(running_stack) as s:  # none named: the service's defaults
        saved = await s.call_tool("memory_save", {"content": "Nobody named the caller"})
        assert (saved.structured_content or {})["memory"]["agentId"] == ""


async def test_a_client_of_the_stateless_protocol_is_answered_without_a_session(
    running_stack: CliStack,
) -> None:
    auth = {"Authorization": f"Bearer {running_stack.secret()}"}
    async with (
        httpx2.AsyncClient(headers=auth) as http,
        Client(streamable_http_client(running_stack.url + PATH, http_client=http)) as c,
    ):
        assert c.protocol_version == "2026-07-28"
        saved = await c.call_tool("memory_save", {"content": "Modern clients skip initialize"})
        assert not saved.is_error, _text(saved)
        tools = await c.list_tools()
        assert any(t.name == "memory_recall" for t in tools.tools)


async def test_stdio_sends_its_agent_id_as_upstreams_bridge_does(running_stack: CliStack) -> None:
    params = StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "mcp"],
        env={**running_stack.env, "AGENTMEMORY_URL": running_stack.url, "AGENT_ID": "bridge-7"},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        saved = await s.call_tool("memory_save", {"content": "Saved by the bridge agent"})
        assert not saved.is_error, _text(saved)
        assert (saved.structured_content or {})["memory"]["agentId"] == "bridge-7"
