"""The MCP tool registry: names, typed inputs, and handlers over the memory service.

One registry serves two surfaces: our stdio MCP server, and the upstream shim's
`GET /agentmemory/mcp/tools` + `POST /agentmemory/mcp/call` (see `shim.py`). Errors a
model can act on (bad argument, unknown id, server away) come back as ToolError text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from workers.mcp.gateway import Gateway, GatewayError

GatewayProvider = Callable[[], Awaitable[Gateway]]

MemoryType = Literal["fact", "decision", "pattern", "preference", "bug", "workflow", "note"]
Limit = Annotated[int, Field(ge=1, le=100, description="How many results at most (1-100).")]
Project = Annotated[
    str | None, Field(default=None, description="Restrict to this project (folder name).")
]


def as_dict(data: Any, key: str = "result") -> dict[str, Any]:
    """Structured output must be an object; lists and scalars get wrapped."""
    return data if isinstance(data, dict) else {key: data}


async def call(
    provider: GatewayProvider,
    method: str,
    path: str,
    body: Any = None,
    query: dict[str, str] | None = None,
) -> Any:
    try:
        gw = await provider()
        return await gw.request(method, path, body, query)
    except GatewayError as err:
        where = f" (field `{err.field}`)" if err.field else ""
        hint = " This may succeed if retried later." if err.retryable else ""
        raise ToolError(f"{err.message}{where}.{hint}") from None


def _nonblank(value: str, name: str) -> str:
    if not value.strip():
        raise ToolError(f"`{name}` must not be empty")
    return value.strip()


def register_tools(app: MCPServer, provider: GatewayProvider) -> None:
    @app.tool(name="memory_save", description="Save a memory (a fact, decision, pattern…).")
    async def memory_save(
        content: Annotated[str, Field(min_length=1, description="What to remember.")],
        type: MemoryType = "fact",
        concepts: list[str] | None = None,
        files: list[str] | None = None,
        project: Project = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "content": _nonblank(content, "content"),
            "type": type,
            "concepts": concepts or [],
            "files": files or [],
        }
        if project:
            body["project"] = project
        return as_dict(await call(provider, "POST", "/agentmemory/remember", body))

    @app.tool(
        name="memory_recall",
        description="Search past observations and memories; returns full records.",
    )
    async def memory_recall(
        query: Annotated[str, Field(min_length=1, description="What to look for.")],
        limit: Limit = 10,
        project: Project = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"query": _nonblank(query, "query"), "limit": limit}
        if project:
            body["project"] = project
        return as_dict(await call(provider, "POST", "/agentmemory/search", body), "results")

    @app.tool(
        name="memory_smart_search",
        description="Hybrid search returning compact hits (id, title, score); cheap on tokens.",
    )
    async def memory_smart_search(
        query: Annotated[str, Field(min_length=1, description="What to look for.")],
        limit: Limit = 10,
        project: Project = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"query": _nonblank(query, "query"), "limit": limit}
        if project:
            body["project"] = project
        return as_dict(await call(provider, "POST", "/agentmemory/smart-search", body), "results")

    @app.tool(name="memory_sessions", description="Recent sessions, newest first.")
    async def memory_sessions(limit: Limit = 20) -> dict[str, Any]:
        data = await call(provider, "GET", "/agentmemory/sessions", query={"limit": str(limit)})
        return as_dict(data, "sessions")

    @app.tool(
        name="memory_timeline",
        description="Observations in time order, for a session or a project, within a time window.",
    )
    async def memory_timeline(
        session_id: Annotated[str, Field(description="Only this session.")] = "",
        project: Project = None,
        after: Annotated[str, Field(description="ISO-8601 time: entries after it.")] = "",
        before: Annotated[str, Field(description="ISO-8601 time: entries before it.")] = "",
        limit: Limit = 50,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"limit": limit, "after": after, "before": before}
        if session_id:
            body["sessionId"] = session_id
        if project:
            body["project"] = project
        return as_dict(await call(provider, "POST", "/agentmemory/timeline", body), "entries")

    @app.tool(name="memory_profile", description="A project's profile: top files, concepts.")
    async def memory_profile(
        project: Annotated[str, Field(min_length=1, description="Project name.")],
    ) -> dict[str, Any]:
        query = {"project": _nonblank(project, "project")}
        return as_dict(await call(provider, "GET", "/agentmemory/profile", query=query))

    @app.tool(name="memory_file_history", description="Past observations touching these files.")
    async def memory_file_history(
        files: Annotated[list[str], Field(min_length=1, description="File paths.")],
        session_id: str = "",
        project: Project = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"files": files, "sessionId": session_id or "mcp"}
        if project:
            body["project"] = project
        return as_dict(await call(provider, "POST", "/agentmemory/file-context", body))

    @app.tool(name="memory_forget", description="Delete memories by id, with a reason (audited).")
    async def memory_forget(
        memory_ids: Annotated[list[str], Field(min_length=1, description="Ids to delete.")],
        reason: str = "forgotten on request",
    ) -> dict[str, Any]:
        body = {"memoryIds": memory_ids, "reason": reason}
        return as_dict(await call(provider, "DELETE", "/agentmemory/governance/memories", body))

    @app.tool(name="memory_export", description="Export everything as one JSON document.")
    async def memory_export() -> dict[str, Any]:
        return as_dict(await call(provider, "GET", "/agentmemory/export"), "export")

    @app.tool(
        name="memory_consolidate",
        description="Consolidate observations into lasting memories now.",
    )
    async def memory_consolidate() -> dict[str, Any]:
        return as_dict(await call(provider, "POST", "/agentmemory/consolidate", {}))

    @app.tool(
        name="memory_graph_query",
        description=(
            "Knowledge graph of files, symbols, packages, errors, commands and concepts: "
            "nodes whose name contains `query`, a walk from `startNodeId`, or the best "
            "connected nodes."
        ),
    )
    async def memory_graph_query(
        query: Annotated[str, Field(description="Match node names containing this.")] = "",
        start_node_id: Annotated[str, Field(description="Walk from this node id.")] = "",
        node_type: Annotated[
            Literal["file", "symbol", "package", "error", "command", "concept"] | None,
            Field(description="Only nodes of this type."),
        ] = None,
        max_depth: Annotated[int, Field(ge=1, le=5, description="Hops of a walk.")] = 3,
        limit: Limit = 50,
        project: Project = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"maxDepth": max_depth, "limit": limit}
        if query.strip():
            body["query"] = query.strip()
        if start_node_id.strip():
            body["startNodeId"] = start_node_id.strip()
        if node_type:
            body["nodeType"] = node_type
        if project:
            body["project"] = project
        return as_dict(await call(provider, "POST", "/agentmemory/graph/query", body))

    @app.tool(name="memory_audit", description="The audit log: deletions, imports, merges.")
    async def memory_audit(limit: Limit = 50) -> dict[str, Any]:
        data = await call(provider, "GET", "/agentmemory/audit", query={"limit": str(limit)})
        return as_dict(data, "entries")
