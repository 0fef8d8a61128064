"""The MCP resources and prompts (upstream's six resources and three prompts), as
operations: the REST routes upstream's clients read (`mcp/resources`, `mcp/prompts`...) and
what our stdio MCP server lists and reads through them."""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Annotated, Any, Literal

import msgspec

from engine import Context, FunctionError, operation
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import Memory, Session, SessionSummary
from functions.kernel.store import StoreOwner
from functions.quarantine.chain import summary_record_id
from functions.quarantine.decisions import Decisions
from functions.quarantine.frame import MCP_NOTICE

JSON = "application/json"


class Resource(msgspec.Struct, rename="camel", kw_only=True):
    uri: str
    name: str
    description: str
    mime_type: str = JSON


class PromptArgument(msgspec.Struct, kw_only=True):
    name: str
    description: str
    required: bool


class Prompt(msgspec.Struct, kw_only=True):
    name: str
    description: str
    arguments: list[PromptArgument]


RESOURCES = [
    Resource(
        uri="agentmemory://status",
        name="Agent Memory Status",
        description="Health, session count and memory count",
    ),
    Resource(
        uri="agentmemory://project/{name}/profile",
        name="Project Profile",
        description="Top concepts, frequently modified files and conventions of a project",
    ),
    Resource(
        uri="agentmemory://project/{name}/recent",
        name="Recent Sessions",
        description="The last 5 session summaries of a project",
    ),
    Resource(
        uri="agentmemory://memories/latest",
        name="Latest Memories",
        description="The 10 latest memories with their type and strength",
    ),
    Resource(
        uri="agentmemory://graph/stats",
        name="Knowledge Graph Stats",
        description="Node and edge counts by type in the knowledge graph",
    ),
    Resource(
        uri="agentmemory://team/{id}/profile",
        name="Team Profile",
        description="Team memory profile with shared concepts and patterns",
    ),
]
PROMPTS = [
    Prompt(
        name="recall_context",
        description="Search observations and memories to build context for a task",
        arguments=[
            PromptArgument(
                name="task_description", description="What you are working on", required=True
            )
        ],
    ),
    Prompt(
        name="session_handoff",
        description="Generate a handoff summary for continuing work in a new session",
        arguments=[
            PromptArgument(
                name="session_id",
                description="Session ID to hand off from (default: the project's latest)",
                required=True,
            ),
            PromptArgument(
                name="project", description="Project (when no session id is given)", required=False
            ),
        ],
    ),
    Prompt(
        name="detect_patterns",
        description="Detect recurring patterns across sessions for a project",
        arguments=[
            PromptArgument(
                name="project", description="Project to analyze (optional)", required=False
            )
        ],
    ),
]
_PROJECT = re.compile(r"^agentmemory://project/(?P<name>.+)/(?P<what>profile|recent)$")
_TEAM = re.compile(r"^agentmemory://team/(?P<id>.+)/profile$")


class ResourcesOut(msgspec.Struct, kw_only=True):
    resources: list[Resource]


class ReadIn(msgspec.Struct, kw_only=True):
    uri: str


class Contents(msgspec.Struct, rename="camel", kw_only=True):
    uri: str
    text: str
    mime_type: str = JSON


class ReadOut(msgspec.Struct, kw_only=True):
    contents: list[Contents]


class PromptsOut(msgspec.Struct, kw_only=True):
    prompts: list[Prompt]


class GetPromptIn(msgspec.Struct, kw_only=True):
    name: Literal["recall_context", "session_handoff", "detect_patterns"]
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)


_TASK = {"type": "string", "pattern": "\\S"}
GetPromptRequest = Annotated[
    GetPromptIn,
    msgspec.Meta(
        extra_json_schema={
            "anyOf": [
                {"properties": {"name": {"enum": ["session_handoff", "detect_patterns"]}}},
                {
                    "required": ["arguments"],
                    "properties": {
                        "name": {"const": "recall_context"},
                        "arguments": {
                            "anyOf": [
                                {"required": ["task_description"],
                                 "properties": {"task_description": _TASK}},
                                {"required": ["task"], "properties": {"task": _TASK}},
                            ]
                        },
                    },
                },
            ]
        }
    ),
]  # fmt: skip
"""recall_context needs its task (`task_description`, or our `task`)."""


class Text(msgspec.Struct, kw_only=True):
    text: str
    type: str = "text"


class Message(msgspec.Struct, kw_only=True):
    role: str
    content: Text


class PromptOut(msgspec.Struct, kw_only=True):
    messages: list[Message]


rest = routes("mcp", prefix="/agentmemory/mcp/")


async def _optional(ctx: Context, function_id: str, payload: dict[str, Any], empty: Any) -> Any:
    """A reading of another worker's function; its absence is reported, not raised."""
    try:
        return await ctx.call(function_id, payload, timeout=10)
    except FunctionError as err:
        if err.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "NOT_FOUND"):
            return {**empty, "unavailable": err.message}
        raise


class McpContentService(OwnedService[StoreOwner]):
    """Served beside the worker's main service, over its store."""

    @operation(
        "mcp::resources-list",
        description="MCP resources (upstream's list; {name}/{id} are templates)",
        http=rest("GET", "resources", source="none"),
    )
    async def resources(self) -> ResourcesOut:
        return ResourcesOut(resources=RESOURCES)

    @operation(
        "mcp::resources-read",
        description="Read one MCP resource by URI",
        http=rest("POST", "resources/read"),
    )
    async def read(self, req: ReadIn, ctx: Context) -> ReadOut:
        value = await self._resource(req.uri, ctx)
        return ReadOut(contents=[Contents(uri=req.uri, text=json.dumps(value))])

    async def _resource(self, uri: str, ctx: Context) -> Any:
        st = self.store
        if uri == "agentmemory://status":
            sessions = await st.keys(st.sessions)
            memories = await st.load_all(st.memories, Memory)
            return {
                "status": "ok",
                "service": "agentmemory",
                "sessionCount": len(sessions),
                "memoryCount": sum(1 for m in memories if not m.superseded_by),
                "healthStatus": "available",
            }
        if uri == "agentmemory://memories/latest":
            held = await Decisions.load(st.client)  # quarantined memories are not read back
            ms = [
                m for m in await st.load_all(st.memories, Memory)
                if not m.superseded_by and not held.held(m.id, m.trust)
            ]  # fmt: skip
            ms.sort(key=lambda m: m.updated_at or m.created_at, reverse=True)
            return [
                {
                    "id": m.id,
                    "title": m.title,
                    "type": m.type,
                    "strength": round(m.strength, 3),
                    "content": m.content[:500],
                    "project": m.project,
                }
                for m in ms[:10]
            ]
        if uri == "agentmemory://graph/stats":
            return await _optional(ctx, "mem::graph-stats", {}, {"totalNodes": 0, "totalEdges": 0})
        m = _PROJECT.match(uri)
        if m:
            project = urllib.parse.unquote(m["name"])
            if m["what"] == "profile":
                return await _optional(
                    ctx, "mem::profile", {"project": project}, {"project": project}
                )
            held = await Decisions.load(st.client)
            got = [
                s for s in await st.load_all(st.summaries, SessionSummary)
                if s.project == project
                and not held.held(summary_record_id(s.session_id), s.trust)
            ]  # fmt: skip
            got.sort(key=lambda s: s.created_at, reverse=True)
            return [msgspec.to_builtins(s) for s in got[:5]]
        t = _TEAM.match(uri)
        if t:
            team = urllib.parse.unquote(t["id"])
            return await _optional(
                ctx, "mem::team-profile", {"teamId": team}, {"teamId": team, "sharedItems": 0}
            )
        raise FunctionError("NOT_FOUND", f"unknown resource {uri}", field="uri")

    @operation(
        "mcp::prompts-list",
        description="MCP prompts (upstream's three)",
        http=rest("GET", "prompts", source="none"),
    )
    async def prompts(self) -> PromptsOut:
        return PromptsOut(prompts=PROMPTS)

    @operation(
        "mcp::prompts-get",
        description="Render one MCP prompt with its arguments",
        http=rest("POST", "prompts/get"),
    )
    async def prompt(self, req: GetPromptRequest, ctx: Context) -> PromptOut:
        args = {k: v for k, v in req.arguments.items() if isinstance(v, str)}
        if req.name == "recall_context":
            text = await self._recall(args, ctx)
        elif req.name == "session_handoff":
            text = await self._handoff(args, ctx)
        elif req.name == "detect_patterns":
            found = await _optional(
                ctx, "mem::patterns", {"project": args.get("project", "")}, {"patterns": []}
            )
            text = f"## Pattern Analysis\n\n{json.dumps(found, indent=1)[:8000]}"
        else:
            raise FunctionError("NOT_FOUND", f"no prompt named {req.name!r}", field="name")
        return PromptOut(messages=[Message(role="user", content=Text(text=text))])

    async def _recall(self, args: dict[str, str], ctx: Context) -> str:
        task = (args.get("task_description") or args.get("task") or "").strip()
        if not task:
            raise FunctionError(
                "BAD_REQUEST",
                "prompt recall_context needs the argument `task_description` (or `task`)",
                field="arguments.task_description",
            )
        found = await _optional(
            ctx, "mem::smart-search", {"query": task, "limit": 8}, {"results": []}
        )
        recalled = json.dumps(found, indent=1)[:6000].replace("<", "\\u003c")
        return (
            f"Before working on: {task}\n\nHere is what agentmemory recalls from earlier "
            f"sessions (JSON; {MCP_NOTICE}):\n{recalled}\n\n"
            "Use what applies; call memory_recall for the full record of any hit."
        )

    async def _handoff(self, args: dict[str, str], ctx: Context) -> str:
        st = self.store
        sid, project = args.get("session_id", "").strip(), args.get("project", "").strip()
        session = await st.get(st.sessions, sid, Session) if sid else None
        if session is None and not sid:
            ss = [
                s
                for s in await st.load_all(st.sessions, Session)
                if not project or s.project == project
            ]
            ss.sort(key=lambda s: s.last_seen or s.started_at, reverse=True)
            session = ss[0] if ss else None
        if sid and session is None:
            raise FunctionError("NOT_FOUND", f"no session {sid}", field="arguments.session_id")
        summary = await st.get(st.summaries, session.id, SessionSummary) if session else None
        if summary is not None and (await Decisions.load(st.client)).held(
            summary_record_id(summary.session_id), summary.trust
        ):
            summary = None  # quarantined: the handoff goes without it
        body = {
            "sessionId": session.id if session else "handoff",
            "project": project or (session.project if session else ""),
            "budget": 1500,
        }
        context = await _optional(ctx, "mem::context", body, {"context": ""})
        return (
            "Write a handoff for the next coding session: what was done, what was decided, "
            "what is left, and which files matter.\n\n### Session\n"
            f"{json.dumps(msgspec.to_builtins(session) if session else None, indent=1)[:3000]}"
            "\n\n### Summary\n"
            f"{json.dumps(msgspec.to_builtins(summary) if summary else 'No summary yet')[:3000]}"
            f"\n\n### Memory context\n{str(context.get('context', ''))[:6000]}"
        )
