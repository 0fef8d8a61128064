"""`python -m workers.mcp.rest`: MCP on the REST port, answered from the functions' own
tool declarations.

`GET /agentmemory/mcp/tools` lists every declared tool (with input schemas) and
`POST /agentmemory/mcp/call {name, arguments}` runs one, so the unmodified
`@agentmemory/mcp` shim proxies all our tools. `POST /agentmemory/mcp` is the MCP server
itself over Streamable HTTP (streamable_http.py), for agents that take one by URL. Calls go
to the functions over this worker's own bus connection, never back through HTTP.
"""

from __future__ import annotations

from typing import Any

import msgspec

from engine import Http, NoArgs, Worker
from workers.mcp import jsonrpc, streamable_http
from workers.mcp.gateway import BusGateway

worker = Worker(
    "mcp-rest", description="MCP on the REST port: Streamable HTTP and the shim's routes"
)
_gateway: BusGateway | None = None


def gateway() -> BusGateway:
    global _gateway
    if _gateway is None:
        _gateway = BusGateway(worker.client)
    return _gateway


class ToolsOut(msgspec.Struct):
    tools: list[dict[str, Any]]
    """MCP tool descriptors: name, description, inputSchema."""


class CallIn(msgspec.Struct):
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


class CallOut(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """An MCP CallToolResult."""

    content: list[dict[str, Any]]
    structured_content: Any = None
    is_error: bool = False


@worker.function(
    "mcp::tools",
    description="MCP tool descriptors (upstream shim)",
    http=Http("GET", "/agentmemory/mcp/tools", source="none", tags=["mcp"]),
)
async def tools(req: NoArgs, ctx: Any) -> ToolsOut:
    return ToolsOut(await gateway().tools())


@worker.function(
    "mcp::call",
    description="Call one MCP tool (upstream shim)",
    http=Http("POST", "/agentmemory/mcp/call", tags=["mcp"]),
)
async def call(req: CallIn, ctx: Any) -> CallOut:
    return msgspec.convert(await gateway().call_tool(req.name, req.arguments), CallOut)


# One function per method; the routes are declared as triggers so the OpenAPI document
# describes the protocol (JSON-RPC messages and replies) rather than a request object. A
# tool call inside may take the gateway's 30 s: the request gets longer, so a slow tool is
# the tool's error, not the route's 504.
worker.function(
    "mcp::http",
    description="MCP over Streamable HTTP (JSON-RPC: initialize, tools, resources, prompts)",
    timeout=60.0,
)(streamable_http.post)
worker.trigger(
    "http",
    "mcp::http",
    id="mcp-http",
    method="POST",
    path=streamable_http.PATH,
    mode="http",
    timeout=60.0,
    summary="MCP over Streamable HTTP: the `agentmemory mcp` server for clients that take "
    "one by URL",
    tags=["mcp"],
    body_schema=jsonrpc.MESSAGE,
    responses=jsonrpc.POST_RESPONSES,
)
worker.function("mcp::http::end", description="End an MCP session (Mcp-Session-Id)")(
    streamable_http.end
)
worker.trigger(
    "http",
    "mcp::http::end",
    id="mcp-http-end",
    method="DELETE",
    path=streamable_http.PATH,
    mode="http",
    summary="End an MCP session (header Mcp-Session-Id)",
    tags=["mcp"],
    responses=jsonrpc.DELETE_RESPONSES,
)
worker.on_stop(streamable_http.close)


if __name__ == "__main__":
    worker.run()
