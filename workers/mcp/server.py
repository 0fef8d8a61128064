"""The agentmemory MCP server: tools, resources and prompts over one gateway."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from workers.mcp.gateway import Gateway, GatewayError, connect_gateway
from workers.mcp.tools import GatewayProvider, register_tools

INSTRUCTIONS = (
    "agentmemory keeps what past coding sessions did and decided. Use memory_smart_search "
    "or memory_recall before repeating work, memory_save for decisions worth keeping."
)


class LazyGateway:
    """Connects on first use, so the server answers `initialize` even when the memory
    service is down, and each tool call reports the outage as a readable error."""

    def __init__(self) -> None:
        self._gw: Gateway | None = None
        self._lock = asyncio.Lock()

    async def __call__(self) -> Gateway:
        async with self._lock:
            if self._gw is None:
                self._gw = await connect_gateway()
            return self._gw

    async def close(self) -> None:
        if self._gw is not None:
            await self._gw.close()


def build_app(provider: GatewayProvider) -> MCPServer:
    app: MCPServer = MCPServer("agentmemory", instructions=INSTRUCTIONS, version="0.1.0")
    register_tools(app, provider)
    _register_resources(app, provider)
    _register_prompts(app, provider)
    return app


async def _read(provider: GatewayProvider, method: str, path: str, **kw: Any) -> Any:
    try:
        return await (await provider()).request(method, path, **kw)
    except GatewayError as err:
        raise ResourceError(err.message) from None


def _register_resources(app: MCPServer, provider: GatewayProvider) -> None:
    @app.resource("agentmemory://status", mime_type="application/json")
    async def status() -> str:
        """Whether the memory service is up, and where."""
        data = await _read(provider, "GET", "/agentmemory/livez")
        return json.dumps(data)

    @app.resource("agentmemory://project/{name}/profile", mime_type="application/json")
    async def project_profile(name: str) -> str:
        """A project's profile: its most touched files and concepts."""
        data = await _read(provider, "GET", "/agentmemory/profile", query={"project": name})
        return json.dumps(data)

    @app.resource("agentmemory://memories/latest", mime_type="application/json")
    async def latest_memories() -> str:
        """The most recently saved memories."""
        data = await _read(provider, "GET", "/agentmemory/memories", query={"limit": "200"})
        if isinstance(data, dict):
            data = data.get("memories", data.get("items", []))
        memories = data if isinstance(data, list) else []
        memories = sorted(
            (m for m in memories if isinstance(m, dict)),
            key=lambda m: str(m.get("updatedAt") or m.get("createdAt") or m.get("created_at")),
            reverse=True,
        )
        return json.dumps({"memories": memories[:20]})


def _register_prompts(app: MCPServer, provider: GatewayProvider) -> None:
    @app.prompt(name="recall_context", description="What memory knows about a task.")
    async def recall_context(task: str) -> str:
        try:
            found = await (await provider()).request(
                "POST", "/agentmemory/smart-search", {"query": task, "limit": 8}
            )
        except GatewayError as err:
            found = {"error": err.message}
        return (
            f"Before working on: {task}\n\nHere is what agentmemory recalls from earlier "
            f"sessions (JSON):\n{json.dumps(found, indent=1)[:6000]}\n\n"
            "Use what applies; call memory_recall for the full record of any hit."
        )

    @app.prompt(name="session_handoff", description="Brief the next session on this one.")
    async def session_handoff(session_id: str = "", project: str = "") -> str:
        gw = await provider()
        try:
            sessions = await gw.request("GET", "/agentmemory/sessions", query={"limit": "5"})
            body: dict[str, Any] = {"sessionId": session_id or "handoff", "budget": 1500}
            if project:
                body["project"] = project
            context = await gw.request("POST", "/agentmemory/context", body)
        except GatewayError as err:
            raise ToolError(err.message) from None
        text = context.get("context", "") if isinstance(context, dict) else str(context)
        return (
            "Write a handoff for the next coding session: what was done, what was decided, "
            "what is left, and which files matter.\n\nRecent sessions:\n"
            f"{json.dumps(sessions, indent=1)[:3000]}\n\nMemory context:\n{text[:6000]}"
        )


def main() -> None:
    """`agentmemory mcp`: serve MCP on stdio (logs go to stderr only)."""
    import logging
    import sys

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    build_app(LazyGateway()).run()


if __name__ == "__main__":
    main()
