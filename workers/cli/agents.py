"""The coding agents `agentmemory connect` knows: the file each reads its MCP servers from,
the shape of an entry there (a command, and a URL where the agent takes one), its hooks when
it runs hook commands we support, and a rules file for a memory guideline when it has none.

One row per agent: upstream's 21 names, and VS Code. Paths are the agents' own (their docs,
or what their CLI reads: Cline's is the file its 3.x CLI opens, not the one upstream writes).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workers.cli.settings import cli_settings
from workers.hooks import antigravity, copilot, cursor, gemini_cli
from workers.hooks.claude_code import EVENT_ORDER

Format = Literal["json", "toml", "yaml", "extension", "none"]
Shape = Literal["plain", "stdio", "copilot", "opencode", "continue", "dsh", "codex", "none"]
"""How one MCP entry looks: plain {command, args, env}; stdio adds `type: "stdio"`; copilot
`type: "local"` and `tools`; opencode a command list under `mcp` with `environment`;
continue a list item with a `name`; dsh a row of DeepSeek Harness's patch file; codex a
TOML table."""

UrlShape = Literal[
    "http", "copilot", "url", "httpUrl", "serverUrl", "cline", "opencode", "continue", "codex"
]
"""How an entry for the MCP server by URL (Streamable HTTP, with the bearer header) looks:
http `{type: "http", url, headers}` (Claude Code, Droid, VS Code); copilot the same with
`tools`; url `{url, headers}` (Cursor, Kiro, Zed, Hermes); httpUrl Gemini CLI's and Qwen
Code's key; serverUrl Antigravity's; cline `type: "streamableHttp"`; opencode
`type: "remote"`; continue `type: "streamable-http"` with `requestOptions.headers`; codex a
TOML table with `url` and `http_headers`."""

Home = Callable[[Path], Path]
HookStyle = Literal["claude", "gemini", "cursor", "copilot", "plugin"]
"""How a hooks file lists our commands: claude `{event: [{matcher?, hooks: [{type, command,
timeout}]}]}` (Claude Code, Codex, Droid, Devin, DeepSeek Harness, Antigravity CLI); gemini
the same with a `name` and the timeout in milliseconds; cursor `{event: [{command,
timeout}]}`; copilot `{event: [{type, command, bash, timeout, timeoutSec}]}`, one file of
ours; plugin a JavaScript file the agent loads (OpenCode)."""

# Claude Code's events, as its hook script handles them; the plugin bundle's
# hooks/hooks.json lists the same (a test holds them together).
CLAUDE_EVENTS = EVENT_ORDER
CODEX_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "Stop",
)
# Droid and Devin run Claude Code's hook format with these events (their docs).
DROID_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SessionEnd")
DEVIN_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SessionEnd",
)
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})


@dataclass(frozen=True)
class Hooks:
    file: Home
    events: tuple[str, ...]
    script: str
    """The hook script (a key of workers.hooks.SCRIPTS)."""
    key: str = "hooks"
    """The event map's key in that file (Devin keeps it beside its MCP servers)."""
    style: HookStyle = "claude"
    matcher: str = "*"
    """What matches every tool, for the tool events (Antigravity reads a regex: "")."""
    tool_events: frozenset[str] = TOOL_EVENTS
    names_event: bool = False
    """The command names its event (`cursor.py postToolUse`): the host's payload may not."""
    version: int | None = None
    """A `version` key the file carries beside the event map (Cursor's, Copilot's)."""
    names_agent: bool = True
    """The command says which agent it records for (`--agent=droid`); False where two
    agents read one file and the script tells them apart (Copilot CLI and VS Code)."""


@dataclass(frozen=True)
class Agent:
    name: str
    display: str
    file: Home
    format: Format
    shape: Shape
    key: str = "mcpServers"
    hooks: Hooks | None = None
    guideline: Home | None = None
    """A rules file the agent reads in every session, given a memory guideline block when
    the agent has no hooks of ours."""
    note: str = ""
    """Said after a change: how the agent picks it up."""
    url: UrlShape | None = None
    """The entry's shape for the MCP server by URL, where the agent's config takes one
    (`connect --transport http`); None: a command only."""


def _xdg_config(home: Path) -> Path:
    return cli_settings().config_home or home / ".config"


def _antigravity(home: Path) -> Path:
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Antigravity" / "User"
    return _xdg_config(home) / "Antigravity" / "User"


def _copilot(home: Path) -> Path:
    return cli_settings().copilot_home or home / ".copilot"


def _cline(home: Path) -> Path:
    return (cli_settings().cline_dir or home / ".cline") / "data" / "settings"


def _dsh(home: Path) -> Path:
    return cli_settings().dsh_home or home / ".dsh"


def _devin(home: Path) -> Path:
    return _xdg_config(home) / "devin" / "config.json"


def _vscode(home: Path) -> Path:
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Code" / "User" / "mcp.json"
    return _xdg_config(home) / "Code" / "User" / "mcp.json"


COPILOT_HOOKS = Hooks(
    # Copilot CLI's user hooks, which VS Code's Copilot agent reads too: one file for both
    lambda h: _copilot(h) / "hooks" / "agentmemory.json",
    copilot.EVENT_ORDER,
    "copilot-cli",
    style="copilot",
    names_event=True,
    version=1,
    names_agent=False,
)

AGENTS: tuple[Agent, ...] = (
    Agent(
        "claude-code",
        "Claude Code",
        lambda h: h / ".claude.json",
        "json",
        "stdio",
        hooks=Hooks(lambda h: h / ".claude" / "settings.json", CLAUDE_EVENTS, "claude-code"),
        note="restart Claude Code (or run /mcp in a session) to load it",
        url="http",
    ),
    Agent(
        "copilot-cli",
        "GitHub Copilot CLI",
        lambda h: _copilot(h) / "mcp-config.json",
        "json",
        "copilot",
        hooks=COPILOT_HOOKS,
        guideline=lambda h: _copilot(h) / "copilot-instructions.md",
        url="copilot",
    ),
    Agent(
        "codex",
        "Codex CLI",
        lambda h: h / ".codex" / "config.toml",
        "toml",
        "codex",
        key="mcp_servers",
        hooks=Hooks(lambda h: h / ".codex" / "hooks.json", CODEX_EVENTS, "codex"),
        note="Codex runs new hooks once you trust them in its TUI",
        url="codex",
    ),
    Agent(
        "cursor",
        "Cursor",
        lambda h: h / ".cursor" / "mcp.json",
        "json",
        "plain",
        hooks=Hooks(
            lambda h: h / ".cursor" / "hooks.json",
            cursor.EVENT_ORDER,
            "cursor",
            style="cursor",
            names_event=True,
            version=1,
        ),
        url="url",
    ),
    Agent(
        "devin",
        "Devin CLI",
        _devin,
        "json",
        "plain",
        hooks=Hooks(_devin, DEVIN_EVENTS, "claude-code"),
    ),
    Agent(
        "gemini-cli",
        "Gemini CLI",
        lambda h: h / ".gemini" / "settings.json",
        "json",
        "plain",
        hooks=Hooks(
            lambda h: h / ".gemini" / "settings.json",
            gemini_cli.EVENT_ORDER,
            "gemini-cli",
            style="gemini",
            tool_events=frozenset({"AfterTool"}),
            names_event=True,
        ),
        guideline=lambda h: h / ".gemini" / "GEMINI.md",
        url="httpUrl",
    ),
    Agent(
        "qwen",
        "Qwen Code",
        lambda h: h / ".qwen" / "settings.json",
        "json",
        "plain",
        guideline=lambda h: h / ".qwen" / "QWEN.md",
        url="httpUrl",
    ),
    Agent(
        "antigravity",
        "Antigravity",
        lambda h: _antigravity(h) / "mcp_config.json",
        "json",
        "plain",
        guideline=lambda h: h / ".gemini" / "GEMINI.md",
        url="serverUrl",
    ),
    Agent(
        "antigravity-cli",
        "Antigravity CLI (agy)",
        lambda h: h / ".gemini" / "config" / "mcp_config.json",
        "json",
        "plain",
        hooks=Hooks(
            # `hooks` is a bundle name under agy's documented schema and the event map's
            # key under the Claude-like one some builds read: one file both ways.
            lambda h: h / ".gemini" / "config" / "hooks.json",
            antigravity.EVENT_ORDER,
            "antigravity-cli",
            matcher="",
            names_event=True,
        ),
        guideline=lambda h: h / ".gemini" / "GEMINI.md",
        url="serverUrl",
    ),
    Agent(
        "kiro",
        "Kiro",
        lambda h: h / ".kiro" / "settings" / "mcp.json",
        "json",
        "plain",
        guideline=lambda h: h / ".kiro" / "steering" / "agentmemory.md",
        url="url",
    ),
    Agent("warp", "Warp", lambda h: h / ".warp" / ".mcp.json", "json", "plain"),
    Agent(
        "cline",
        "Cline CLI",
        lambda h: _cline(h) / "cline_mcp_settings.json",
        "json",
        "plain",
        url="cline",
    ),
    Agent(
        "continue",
        "Continue",
        lambda h: h / ".continue" / "config.yaml",
        "yaml",
        "continue",
        url="continue",
    ),
    Agent(
        "zed",
        "Zed",
        lambda h: _xdg_config(h) / "zed" / "settings.json",
        "json",
        "plain",
        key="context_servers",
        guideline=lambda h: _xdg_config(h) / "zed" / "AGENTS.md",
        url="url",
    ),
    Agent(
        "droid",
        "Droid (Factory)",
        lambda h: h / ".factory" / "mcp.json",
        "json",
        "stdio",
        hooks=Hooks(lambda h: h / ".factory" / "hooks.json", DROID_EVENTS, "claude-code"),
        url="http",
    ),
    Agent(
        "dsh",
        "DeepSeek Harness",
        lambda h: _dsh(h) / "cordis.patch.yml",
        "yaml",
        "dsh",
        hooks=Hooks(lambda h: _dsh(h) / "agentmemory.hooks.json", CODEX_EVENTS, "claude-code"),
    ),
    Agent(
        "opencode",
        "OpenCode",
        lambda h: _xdg_config(h) / "opencode" / "opencode.json",
        "json",
        "opencode",
        key="mcp",
        hooks=Hooks(
            lambda h: _xdg_config(h) / "opencode" / "plugins" / "agentmemory.js",
            (
                "session.created",
                "chat.message",
                "tool.execute.after",
                "session.compacted",
                "session.idle",
                "session.deleted",
            ),
            "claude-code",
            style="plugin",
        ),
        guideline=lambda h: _xdg_config(h) / "opencode" / "AGENTS.md",
        url="opencode",
    ),
    Agent("openclaw", "OpenClaw", lambda h: h / ".openclaw" / "openclaw.json", "json", "plain"),
    Agent(
        "hermes",
        "Hermes Agent",
        lambda h: h / ".hermes" / "config.yaml",
        "yaml",
        "plain",
        key="mcp_servers",
        url="url",
    ),
    Agent(
        "vscode",
        "VS Code",
        _vscode,
        "json",
        "stdio",
        key="servers",
        hooks=COPILOT_HOOKS,
        note="VS Code starts it from the MCP servers list (or on the next chat)",
        url="http",
    ),
    Agent(
        "pi",
        "pi",
        lambda h: h / ".pi" / "agent" / "extensions" / "agentmemory" / "index.ts",
        "extension",
        "none",
        note="pi loads it on its next start (/reload in a running one); pi has no MCP client",
    ),
    Agent(
        "openhuman",
        "OpenHuman",
        lambda h: h / ".openhuman",
        "none",
        "none",
        note="OpenHuman has no config agentmemory can write: point its Memory integration "
        "at the REST API",
    ),
)
BY_NAME = {a.name: a for a in AGENTS}
NAMES = (*BY_NAME, "mcp")
"""Every `connect` target: the agents, and `mcp` for a generic block to paste."""


def hook_sharers(a: Agent) -> tuple[Agent, ...]:
    """The other agents that read `a`'s hooks file (Copilot CLI's and VS Code's is one):
    removing `a` keeps the hooks while one of them is connected."""
    if a.hooks is None:
        return ()
    return tuple(o for o in AGENTS if o is not a and o.hooks is a.hooks)


def agent(name: str) -> Agent:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; choose one of {', '.join(NAMES)}") from None
