"""`agentmemory connect <agent>`: merge our MCP server (and hooks, where the agent runs
them) into the files the agent reads, or take them out again.

The server is a command the agent starts (`agentmemory mcp`, stdio: the default) or, with
`--transport http`, the REST port's `/agentmemory/mcp` URL with the bearer header, for the
agents whose config takes one (Agent.url); the others keep the command and are told so.

Every change is a merge: other servers, hooks and keys stay as they were; our own earlier
entries are replaced, so connecting twice changes nothing (and switching transports leaves
one entry). Each file is read once and changed in memory, so two wirings in one file
(Devin's servers and hooks) are one change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from workers.cli import formats, merge
from workers.cli.agents import AGENTS, NAMES, Agent, Hooks, agent, hook_sharers
from workers.cli.formats import SERVER_NAME, McpUrl, entry, url_entry
from workers.cli.wiring import Wiring, hook_target, wiring

HOOK_AGENTS = tuple(a.name for a in AGENTS if a.hooks is not None or a.format == "extension")
"""The agents whose events agentmemory captures (`--with-hooks`); the others are MCP only."""
GUIDELINE = """## Memory (agentmemory)

You have long-term memory across sessions through the agentmemory MCP server.
- Before starting a task, call `memory_smart_search` with the task in a few words to find
  past decisions, fixes and preferences instead of asking the user again.
- When something is settled (a decision and its reason, a root cause, a convention, a user
  preference), save it with `memory_save` as one self-contained statement.
- When the user corrects you, save the rule with `memory_lesson_save`.
Save facts, not transcripts; never save secrets."""

__all__ = [
    "AGENTS",
    "NAMES",
    "SERVER_NAME",
    "McpUrl",
    "Plan",
    "Wiring",
    "hook_target",
    "plan",
    "unplan",
    "wire",
    "wiring",
]


@dataclass
class Plan:
    """The file changes that (un)wire one agent, and what to tell the user."""

    changes: list[merge.Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hooks: bool = False
    """Hooks were part of the change."""


# ---- wiring ------------------------------------------------------------------------
def plan(
    name: str,
    home: Path,
    with_hooks: bool = False,
    hook_url: str = "",
    mcp_env: dict[str, str] | None = None,
    *,
    guidelines: bool = True,
    mcp_url: McpUrl | None = None,
) -> list[merge.Change]:
    """The file changes that wire `name` (nothing written yet)."""
    return wire(
        name, home, with_hooks, hook_url, mcp_env, guidelines=guidelines, mcp_url=mcp_url
    ).changes


def wire(
    name: str,
    home: Path,
    with_hooks: bool = False,
    hook_url: str = "",
    mcp_env: dict[str, str] | None = None,
    *,
    guidelines: bool = True,
    mcp_url: McpUrl | None = None,
) -> Plan:
    """`mcp_url`: the server by URL (`--transport http`) where the agent takes one."""
    a = agent(name)
    env = dict(mcp_env or {})
    fs, out = formats.Files(), Plan()
    path = a.file(home)
    if a.format == "none":
        out.notes.append(a.note)
        return out
    if mcp_url is not None and a.url is None and a.format != "extension":
        out.notes.append(f"{a.display} takes its MCP server as a command here: wrote that form")
    by_url = mcp_url if a.url is not None else None
    if by_url is not None:
        fs.secret.add(path)
        out.notes.append(
            f"{a.display} connects to {by_url.url} with the REST secret (the file is now "
            "readable by you only); it needs the service running: `agentmemory start`"
        )
    if a.format == "extension":
        fs.set_text(path, formats.pi_extension(hook_url))
        out.hooks = True
    elif a.format == "toml":
        formats.codex_server(fs.toml(path), env, with_hooks, by_url)
    elif a.shape == "continue":
        formats.continue_server(fs, path, env, by_url)
    elif a.shape == "dsh":
        formats.dsh_rows(fs, a, path, env, with_hooks, hook_url)
    else:
        ours = url_entry(a.url, by_url) if a.url and by_url else entry(a.shape, env)
        if a.format == "yaml":
            doc = fs.yaml(path, formats.yaml_map())
            if doc.get(a.key) is None:
                doc[a.key] = formats.yaml_map()
            doc[a.key][SERVER_NAME] = ours
        else:
            merge.table(fs.json(path), a.key, path)[SERVER_NAME] = ours
    if with_hooks and a.hooks is not None:
        hooks_file = a.hooks.file(home)
        if a.hooks.style == "plugin":
            fs.set_text(hooks_file, formats.opencode_plugin(hook_url))
        elif a.shape != "dsh":
            formats.hooks_json(fs.json(hooks_file), a, a.hooks, hook_url, hooks_file)
        out.hooks = True
    elif with_hooks and a.format != "extension":
        out.notes.append(f"{a.display} runs no hooks agentmemory installs: MCP only")
    # The guideline too where hooks capture: they record, the guideline says to search.
    if guidelines and a.guideline is not None:
        g = a.guideline(home)
        fs.set_text(g, merge.upsert_block(fs.text(g), GUIDELINE))
    if a.note:
        out.notes.append(a.note)
    out.changes = fs.changes()
    return out


def unplan(name: str, home: Path) -> Plan:
    """The changes that take our entries out of `name`'s files (others stay)."""
    a = agent(name)
    fs, out = formats.Files(), Plan()
    path = a.file(home)
    if a.format == "none":
        return out
    if a.format == "extension":
        fs.remove(path)  # the extension file is ours alone
    elif path.exists():
        _drop_server(fs, a, path)
    if a.hooks is not None and a.hooks.file(home).exists():
        # One hooks file for two agents: it stays while the other is connected.
        keep = [o for o in hook_sharers(a) if _has_server(o, home)]
        if keep:
            out.notes.append(
                f"kept the hooks in {a.hooks.file(home)}: {keep[0].display} reads the same "
                f"file and is still connected (`connect {keep[0].name} --remove` takes them out)"
            )
        else:
            _drop_hooks(fs, a.hooks, a.hooks.file(home))
            out.hooks = True
    if a.guideline is not None and a.guideline(home).exists():
        g = a.guideline(home)
        fs.set_text(g, merge.drop_block(fs.text(g)))
    out.changes = [c for c in fs.changes() if c.changed]
    return out


def _has_server(a: Agent, home: Path) -> bool:
    w = wiring(a.name, home)
    return bool(w.mcp_command or w.mcp_url)


def _drop_server(fs: formats.Files, a: Agent, path: Path) -> None:
    if a.format == "toml":
        servers = fs.toml(path).get(a.key)
        if servers is not None and SERVER_NAME in servers:
            del servers[SERVER_NAME]
    elif a.shape == "continue":
        doc = fs.yaml(path, None)
        if doc is not None and isinstance(doc.get("mcpServers"), list):
            doc["mcpServers"] = [s for s in doc["mcpServers"] if not formats.named(s)]
    elif a.shape == "dsh":
        rows = fs.yaml(path, None)
        if isinstance(rows, list):
            rows[:] = [r for r in rows if not formats.dsh_ours(r)]
    elif a.format == "yaml":
        doc = fs.yaml(path, None)
        if doc is not None and isinstance(doc.get(a.key), dict):
            doc[a.key].pop(SERVER_NAME, None)
    else:
        servers = fs.json(path).get(a.key)
        if isinstance(servers, dict):
            servers.pop(SERVER_NAME, None)


def _drop_hooks(fs: formats.Files, h: Hooks, path: Path) -> None:
    if h.style == "plugin":
        fs.remove(path)  # the plugin file is ours alone
        return
    doc = fs.json(path)
    hooks = doc.get(h.key)
    if not isinstance(hooks, dict):
        return
    formats.drop_our_hooks(hooks, h.script)
    if path.name.startswith(SERVER_NAME) and not hooks and set(doc) <= {"version", h.key}:
        fs.remove(path)  # our own file (Copilot's, DeepSeek Harness's), nothing else in it


def generic_block(env: dict[str, str] | None = None, mcp_url: McpUrl | None = None) -> str:
    """An `mcpServers` block for any MCP client, pointing at the chosen instance: the
    command, or the URL with its bearer header (the shape Claude Code's `.mcp.json` reads)."""
    item = url_entry("http", mcp_url) if mcp_url else entry("plain", dict(env or {}))
    return json.dumps({"mcpServers": {SERVER_NAME: item}}, indent=2)
