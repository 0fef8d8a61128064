"""The agentmemory MCP server: the tools every function declares (read through the
gateway, nothing listed here), plus a few resources and prompts. `agentmemory mcp` serves it
on stdio; the REST port serves the same server over Streamable HTTP (streamable_http.py).

Built on the SDK's low-level server: the tool list is data (the functions' declarations),
not Python signatures. A refused call is a tool result with `isError` and a message the
model can act on; a missing or wrong prompt argument is an MCP error naming it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp_types as types
import msgspec
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from functions.mcp_content import mcp_content_service as mcp_content
from workers.mcp.caller import CallerOf, process_caller
from workers.mcp.gateway import Gateway, GatewayError, connect_gateway

log = logging.getLogger("workers.mcp")

GatewayProvider = Callable[[], Awaitable[Gateway]]
INSTRUCTIONS = (
    "agentmemory keeps what past coding sessions did and decided. Use memory_smart_search "
    "or memory_recall before repeating work, memory_save for decisions worth keeping."
)


def tools_cache_file() -> Path:
    """The last tool list served: listed again when the memory service is down, so a client
    started before it still knows its tools (their calls then report the outage)."""
    return Path.home() / ".agentmemory" / "mcp-tools.json"


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


def _resources(doc: Any) -> tuple[list[types.Resource], list[types.ResourceTemplate]]:
    """The service's resource list (upstream's shape: templates have `{name}` in the uri)."""
    items = doc.get("resources") if isinstance(doc, dict) else None
    plain: list[types.Resource] = []
    templates: list[types.ResourceTemplate] = []
    for r in items or []:
        if not isinstance(r, dict) or not r.get("uri"):
            continue
        uri, name = str(r["uri"]), str(r.get("name") or r["uri"])
        desc, mime = str(r.get("description") or ""), str(r.get("mimeType") or "application/json")
        if "{" in uri:
            templates.append(
                types.ResourceTemplate(
                    uri_template=uri, name=name, description=desc, mime_type=mime
                )
            )
        else:
            plain.append(types.Resource(uri=uri, name=name, description=desc, mime_type=mime))
    return plain, templates


def _prompts(doc: Any) -> list[types.Prompt]:
    items = doc.get("prompts") if isinstance(doc, dict) else None
    return [
        types.Prompt(
            name=str(p["name"]),
            description=str(p.get("description") or ""),
            arguments=[
                types.PromptArgument(
                    name=str(a["name"]),
                    description=str(a.get("description") or ""),
                    required=bool(a.get("required")),
                )
                for a in p.get("arguments") or []
                if isinstance(a, dict) and a.get("name")
            ],
        )
        for p in items or []
        if isinstance(p, dict) and p.get("name")
    ]


def _tool(d: dict[str, Any]) -> types.Tool:
    return types.Tool(
        name=str(d.get("name")),
        description=str(d.get("description") or ""),
        input_schema=d.get("inputSchema") or {"type": "object", "properties": {}},
    )


def _result(doc: dict[str, Any]) -> types.CallToolResult:
    content: list[types.ContentBlock] = [
        types.TextContent(type="text", text=str(c.get("text", "")))
        for c in doc.get("content") or []
        if isinstance(c, dict)
    ]
    structured = doc.get("structuredContent")
    return types.CallToolResult(
        content=content,
        structured_content=structured if isinstance(structured, dict) else None,
        is_error=bool(doc.get("isError")),
    )


def build_app(
    provider: GatewayProvider,
    tools_cache: Path | None = None,
    *,
    caller_of: CallerOf = process_caller,
    remember_tools: bool = True,
) -> Server[Any]:
    """The server over `provider`'s gateway. `caller_of` names each request's project and
    agent (this process's over stdio, the request's over HTTP); `remember_tools` keeps the
    last tool list on disk for a client that starts before the service (stdio only: over
    HTTP the service is the one answering)."""
    cache = tools_cache or tools_cache_file()
    arguments: dict[str, frozenset[str]] = {}
    """Each tool's argument names, from the last listing: which caller fields it takes."""

    def learn(tools: list[dict[str, Any]]) -> None:
        for t in tools:
            props = (t.get("inputSchema") or {}).get("properties")
            arguments[str(t.get("name"))] = frozenset(props or ())

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            tools = await (await provider()).tools()
        except GatewayError as err:
            log.warning("tools not listed from the service (%s); using the last list", err)
            tools = _cached(cache)
        else:
            if remember_tools:
                _remember(cache, tools)
        learn(tools)
        return types.ListToolsResult(tools=[_tool(t) for t in tools])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            gw = await provider()
            if params.name not in arguments:  # called before any listing (or a new tool)
                learn(await gw.tools())
        except GatewayError as err:
            doc: dict[str, Any] = {"content": [{"type": "text", "text": err.message}]}
            doc["isError"] = True
            return _result(doc)
        known = arguments.get(params.name, frozenset())
        args = caller_of(ctx).fill(params.name, dict(params.arguments or {}), known)
        return _result(await gw.call_tool(params.name, args))

    async def _listing(path: str) -> Any:
        try:
            return await (await provider()).request("GET", path)
        except GatewayError as err:  # listed from our own copy; reads report the outage
            log.warning("%s not listed from the service (%s)", path, err)
            return None

    async def list_resources(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        doc = await _listing("/agentmemory/mcp/resources") or _fallback("resources")
        return types.ListResourcesResult(resources=_resources(doc)[0])

    async def list_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        doc = await _listing("/agentmemory/mcp/resources") or _fallback("resources")
        return types.ListResourceTemplatesResult(resource_templates=_resources(doc)[1])

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        doc = await _read(provider, "POST", "/agentmemory/mcp/resources/read", {"uri": uri})
        contents = doc.get("contents") if isinstance(doc, dict) else None
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=str(c.get("uri") or uri),
                    mime_type=str(c.get("mimeType") or "application/json"),
                    text=str(c.get("text") or ""),
                )
                for c in contents or []
                if isinstance(c, dict)
            ]
        )

    async def list_prompts(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        doc = await _listing("/agentmemory/mcp/prompts") or _fallback("prompts")
        return types.ListPromptsResult(prompts=_prompts(doc))

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        body = {"name": params.name, "arguments": dict(params.arguments or {})}
        doc = await _read(provider, "POST", "/agentmemory/mcp/prompts/get", body)
        msgs = doc.get("messages") if isinstance(doc, dict) else None
        return types.GetPromptResult(
            messages=[
                types.PromptMessage(
                    role="assistant" if m.get("role") == "assistant" else "user",
                    content=types.TextContent(
                        type="text", text=str((m.get("content") or {}).get("text", ""))
                    ),
                )
                for m in msgs or []
                if isinstance(m, dict)
            ]
        )

    return Server(
        "agentmemory",
        version="0.1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _cached(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [t for t in data if isinstance(t, dict)] if isinstance(data, list) else []


def _remember(path: Path, tools: list[dict[str, Any]]) -> None:
    if not tools:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(tools))
        tmp.replace(path)
    except OSError:
        pass  # a cache: never a reason to fail a listing


async def _read(
    provider: GatewayProvider,
    method: str,
    path: str,
    body: Any = None,
    query: dict[str, str] | None = None,
) -> Any:
    try:
        return await (await provider()).request(method, path, body, query)
    except GatewayError as err:
        # A wrong uri, prompt name or argument is the caller's; anything else the service's.
        code = types.INVALID_PARAMS if err.status in (400, 404, 422) else types.INTERNAL_ERROR
        raise MCPError(code, err.message) from None


def _fallback(kind: str) -> dict[str, Any]:
    """Upstream's resource and prompt lists as this package holds them (service down)."""
    items = mcp_content.RESOURCES if kind == "resources" else mcp_content.PROMPTS
    return {kind: msgspec.to_builtins(items)}


async def serve_stdio(app: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())


def main() -> None:
    """`agentmemory mcp`: serve MCP on stdio (logs go to stderr only)."""
    import sys

    import anyio

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    anyio.run(serve_stdio, build_app(LazyGateway()))


if __name__ == "__main__":
    main()
