"""The agentmemory MCP server (stdio): the tools every function declares (read through the
gateway, nothing listed here), plus a few resources and prompts.

Built on the SDK's low-level server: the tool list is data (the functions' declarations),
not Python signatures. A refused call is a tool result with `isError` and a message the
model can act on; a missing or wrong prompt argument is an MCP error naming it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

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


RESOURCES = [
    types.Resource(
        uri="agentmemory://status",
        name="status",
        description="Whether the memory service is up, and where.",
        mime_type="application/json",
    ),
    types.Resource(
        uri="agentmemory://memories/latest",
        name="latest memories",
        description="The most recently saved memories.",
        mime_type="application/json",
    ),
]
TEMPLATES = [
    types.ResourceTemplate(
        uri_template="agentmemory://project/{name}/profile",
        name="project profile",
        description="A project's profile: its most touched files and concepts.",
        mime_type="application/json",
    ),
]
PROMPTS = [
    types.Prompt(
        name="recall_context",
        description="What memory knows about a task.",
        arguments=[types.PromptArgument(name="task", description="The task.", required=True)],
    ),
    types.Prompt(
        name="session_handoff",
        description="Brief the next session on this one.",
        arguments=[
            types.PromptArgument(name="session_id", description="The session.", required=False),
            types.PromptArgument(name="project", description="The project.", required=False),
        ],
    ),
]
_PROFILE = re.compile(r"^agentmemory://project/(?P<name>[^/]+)/profile$")


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


def build_app(provider: GatewayProvider, tools_cache: Path | None = None) -> Server[Any]:
    cache = tools_cache or tools_cache_file()

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            tools = await (await provider()).tools()
        except GatewayError as err:
            log.warning("tools not listed from the service (%s); using the last list", err)
            tools = _cached(cache)
        else:
            _remember(cache, tools)
        return types.ListToolsResult(tools=[_tool(t) for t in tools])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            gw = await provider()
        except GatewayError as err:
            doc: dict[str, Any] = {"content": [{"type": "text", "text": err.message}]}
            doc["isError"] = True
            return _result(doc)
        return _result(await gw.call_tool(params.name, dict(params.arguments or {})))

    async def list_resources(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def list_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        text = json.dumps(await _resource(provider, uri))
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    async def list_prompts(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        text = await _prompt(provider, params.name, dict(params.arguments or {}))
        return types.GetPromptResult(
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
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
        raise MCPError(types.INTERNAL_ERROR, err.message) from None


async def _resource(provider: GatewayProvider, uri: str) -> Any:
    if uri == "agentmemory://status":
        return await _read(provider, "GET", "/agentmemory/livez")
    if uri == "agentmemory://memories/latest":
        data = await _read(provider, "GET", "/agentmemory/memories", query={"limit": "200"})
        memories = data.get("memories", []) if isinstance(data, dict) else []
        memories = sorted(
            (m for m in memories if isinstance(m, dict)),
            key=lambda m: str(m.get("updatedAt") or m.get("createdAt") or ""),
            reverse=True,
        )
        return {"memories": memories[:20]}
    m = _PROFILE.match(uri)
    if m:
        return await _read(provider, "GET", "/agentmemory/profile", query={"project": m["name"]})
    raise MCPError(types.INVALID_PARAMS, f"no resource {uri}")


async def _prompt(provider: GatewayProvider, name: str, args: dict[str, str]) -> str:
    if name == "recall_context":
        task = (args.get("task") or "").strip()
        if not task:
            raise MCPError(types.INVALID_PARAMS, "prompt recall_context needs the argument `task`")
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
    if name == "session_handoff":
        body: dict[str, Any] = {"sessionId": args.get("session_id") or "handoff", "budget": 1500}
        if args.get("project"):
            body["project"] = args["project"]
        sessions = await _read(provider, "GET", "/agentmemory/sessions", query={"limit": "5"})
        context = await _read(provider, "POST", "/agentmemory/context", body)
        text = context.get("context", "") if isinstance(context, dict) else str(context)
        return (
            "Write a handoff for the next coding session: what was done, what was decided, "
            "what is left, and which files matter.\n\nRecent sessions:\n"
            f"{json.dumps(sessions, indent=1)[:3000]}\n\nMemory context:\n{text[:6000]}"
        )
    raise MCPError(types.INVALID_PARAMS, f"no prompt named {name!r}")


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
