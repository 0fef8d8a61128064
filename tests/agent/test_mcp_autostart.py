"""An agent launches `agentmemory mcp` before anyone started the service: the MCP server
starts it (detached, on the instance its environment names), lists every tool, and what it
saves is served by that service afterwards."""

from __future__ import annotations

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.agent.cli_stack import CLI, CliStack
from tests.upstream.stack import upstream_tools

pytestmark = pytest.mark.timeout(300)


async def test_mcp_started_with_no_service_starts_it_lists_all_tools_and_saves(
    stack: CliStack,
) -> None:
    env = {
        **stack.env,
        "AGENTMEMORY_DATA_DIR": str(stack.data_dir),
        "AGENTMEMORY_PORT": str(stack.port),
    }
    assert not (stack.data_dir / "engine.pid").exists()
    params = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "mcp"], env=env, cwd=str(stack.project_dir)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        names = {t.name for t in (await s.list_tools()).tools}
        saved = await s.call_tool("memory_save", {"content": "autostarted memory: use pnpm"})
        assert not saved.is_error
    assert set(upstream_tools()) <= names
    assert (stack.data_dir / "engine.pid").exists()  # the service runs on, for the next agent
    with stack.rest() as c:
        memories = c.get("/agentmemory/memories").json()["memories"]
    (mine,) = [m for m in memories if m["content"] == "autostarted memory: use pnpm"]
    assert mine["project"] == "payments-svc"


async def test_autostart_off_reports_the_outage_as_a_tool_error(stack: CliStack) -> None:
    env = {
        **stack.env,
        "AGENTMEMORY_DATA_DIR": str(stack.data_dir),
        "AGENTMEMORY_PORT": str(stack.port),
        "AGENTMEMORY_MCP_AUTOSTART": "false",
    }
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        result = await s.call_tool("memory_smart_search", {"query": "anything"})
    assert result.is_error and "not reachable" in " ".join(
        getattr(c, "text", "") for c in result.content
    )
    assert not (stack.data_dir / "engine.pid").exists()
