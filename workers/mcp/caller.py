"""Who calls a tool: the project and the agent an MCP client works for, filled into the
arguments it leaves out.

Over stdio the server is the agent's own child: its working directory names the project
(as the hooks name it) and its environment the agent (AGENT_ID, as upstream's bridge sends
it). Over HTTP one server answers every agent: each request names them in headers
(`X-AgentMemory-Project`, and `X-AgentMemory-Agent-Id`, upstream 0.9.34's name, or
`X-Agent-Id`, the one its REST routes read) or in the URL's query (`?project=…&agentId=…`),
which is where a client that cannot send headers puts them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

PROJECT_HEADER = "x-agentmemory-project"
AGENT_HEADERS = ("x-agentmemory-agent-id", "x-agent-id")
PROJECT_QUERY = "project"
AGENT_QUERY = "agentId"

PROJECT_SCOPED = frozenset({"memory_save", "memory_lesson_save"})
"""Saves that land in the caller's project when they name none, as the CLI's `remember` and
the hooks do. Reads stay across projects unless they name one: that is what they did before
a caller was known."""


class Caller(msgspec.Struct, frozen=True):
    project: str = ""
    agent_id: str = ""

    def fill(self, tool: str, args: dict[str, Any], properties: frozenset[str]) -> dict[str, Any]:
        """`args` with the caller's project (saves only) and agent id (every tool that
        takes one: saves and actions carry it, reads are filtered by it when the service
        keeps agents apart) where the client left them out."""
        out = dict(args)
        if self.project and tool in PROJECT_SCOPED and not out.get("project"):
            out["project"] = self.project
        if self.agent_id and "agentId" in properties and not out.get("agentId"):
            out["agentId"] = self.agent_id
        return out


CallerOf = Callable[[Any], Caller]
"""The caller of one request, from the SDK's request context (its `request` is the HTTP
request, None over stdio)."""


def of_http(headers: Mapping[str, str], query: Mapping[str, str]) -> Caller:
    """The caller an HTTP request names: a header wins over the query."""
    project = headers.get(PROJECT_HEADER) or query.get(PROJECT_QUERY) or ""
    agent = next((headers[h] for h in AGENT_HEADERS if headers.get(h)), "")
    agent = agent or query.get(AGENT_QUERY) or ""
    return Caller(project.strip(), agent.strip())


@functools.cache
def of_process() -> Caller:
    """This process's caller (the stdio server): its project as the hooks name it
    (AGENTMEMORY_PROJECT_NAME, else the git root's folder, else the working directory's)
    and its agent (AGENT_ID or AGENTMEMORY_AGENT_ID)."""
    from functions.kernel.settings import kernel_settings
    from workers.hooks import _hookcore

    project = _hookcore.project_of(_hookcore.Settings(), os.getcwd())
    return Caller(project, kernel_settings().agent_id.strip())


def process_caller(ctx: Any) -> Caller:
    return of_process()
