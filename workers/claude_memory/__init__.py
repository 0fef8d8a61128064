"""The Claude API's memory tool (`memory_20250818`) kept in agentmemory: a backend for the
anthropic SDK's abstract memory tool, so an application built on the Claude API keeps its
`/memories` files as memories here (scrubbed, searchable, in the viewer, versioned, shared
by the team rules) instead of on a local disk.

    from anthropic import Anthropic
    from workers.claude_memory import AgentMemoryTool

    memory = AgentMemoryTool(project="support-bot")
    runner = Anthropic().beta.messages.tool_runner(
        model=..., max_tokens=1024, tools=[memory], messages=[...],
    )

Needs the `claude` extra (`pip install 'agentmemory-nats[claude]'`). docs/AGENTS.md says
how files map onto memories."""

# Loaded on first use, as engine/__init__.py does: importing the package (or one of its
# modules) pulls in no other package of ours (tests/layout/test_imports.py).
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workers.claude_memory.tool import AgentMemoryTool, AsyncAgentMemoryTool


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'workers.claude_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module("workers.claude_memory.tool"), name)
    globals()[name] = value
    return value


__all__ = ["AgentMemoryTool", "AsyncAgentMemoryTool"]
