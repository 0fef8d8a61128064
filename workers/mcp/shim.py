"""The upstream MCP shim's routes, answered from our own tool registry.

`GET /agentmemory/mcp/tools` → `tools_document(app)`; `POST /agentmemory/mcp/call`
→ `call_document(app, name, arguments)`. The memory worker builds the app once with a
gateway over its own bus client: `build_app(lambda: ready(BusGateway(worker.client)))`.
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent


async def tools_document(app: MCPServer) -> dict[str, Any]:
    tools = await app.list_tools()
    # No outputSchema: the upstream shim relays only `content` blocks, and an MCP client
    # rejects a tool that declares an output schema but returns no structured content.
    return {
        "tools": [
            t.model_dump(by_alias=True, exclude_none=True, exclude={"output_schema"}) for t in tools
        ]
    }


async def call_document(app: MCPServer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """An MCP CallToolResult as JSON; a refused call is `isError: true` with the reason."""
    try:
        result = await app.call_tool(name, arguments)
    except ToolError as err:
        result = CallToolResult(content=[TextContent(type="text", text=str(err))], is_error=True)
    except Exception as exc:  # the shim must answer, whatever a tool did
        text = f"{name} failed: {type(exc).__name__}"
        result = CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    out: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True)
    return out
