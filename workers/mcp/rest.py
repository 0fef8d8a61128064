"""`python -m workers.mcp.rest`: the upstream MCP shim's routes, served from our registry.

`GET /agentmemory/mcp/tools` lists every tool of `build_app` (with input schemas) and
`POST /agentmemory/mcp/call {name, arguments}` runs one, so the unmodified
`@agentmemory/mcp` shim proxies all our tools. Tools reach the memory functions over this
worker's own bus connection (`BusGateway`), never back through HTTP.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from engine import Context, FunctionError, HttpRequest, HttpResponse, Worker
from workers.mcp.gateway import BusGateway, Gateway
from workers.mcp.server import build_app
from workers.mcp.shim import call_document, tools_document

worker = Worker("mcp-rest", description="MCP tools over REST for the upstream shim")


class CallIn(msgspec.Struct):
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


_gateway: BusGateway | None = None


async def _provider() -> Gateway:
    global _gateway
    if _gateway is None:
        _gateway = BusGateway(worker.client)
    return _gateway


app = build_app(_provider)


@worker.function("mcp::rest::tools", description="MCP tool descriptors (upstream shim)")
async def tools(req: HttpRequest, ctx: Context) -> HttpResponse:
    return HttpResponse(body=await tools_document(app))


@worker.function("mcp::rest::call", description="Call one MCP tool (upstream shim)")
async def call(req: HttpRequest, ctx: Context) -> HttpResponse:
    try:
        body = req.json(CallIn)
    except msgspec.ValidationError as exc:
        text = str(exc)
        at = re.search(r"`\$\.([A-Za-z_]+)", text) or re.search(r"field `([^`]+)`", text)
        field = at.group(1) if at else None
        raise FunctionError("BAD_REQUEST", f"invalid request: {text}", field=field) from None
    return HttpResponse(body=await call_document(app, body.name, body.arguments))


worker.trigger(
    "http", "mcp::rest::tools", method="GET", path="/agentmemory/mcp/tools", tags=["mcp"]
)
worker.trigger(
    "http",
    "mcp::rest::call",
    method="POST",
    path="/agentmemory/mcp/call",
    tags=["mcp"],
    body_schema=msgspec.json.schema(CallIn),
)

if __name__ == "__main__":
    worker.run()
