"""The MCP server's settings (its tool set, AGENTMEMORY_TOOLS, is the kernel's: the feature
flags show it too; its server, AGENTMEMORY_URL, the CLI's)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.settings import choice, flag, load


@dataclass(frozen=True)
class McpSettings:
    """The MCP server an agent runs (`agentmemory mcp`)."""

    transport: str = choice(
        "AGENTMEMORY_MCP_TRANSPORT",
        "auto",
        ("auto", "rest"),
        "auto: the local bus when the instance runs here, else REST; rest: always REST.",
    )
    autostart: bool = flag(
        "AGENTMEMORY_MCP_AUTOSTART",
        True,
        "Start the service when none runs on the instance (false: say so instead).",
    )


def mcp_settings() -> McpSettings:
    return load(McpSettings)
