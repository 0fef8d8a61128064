"""`agentmemory connect <agent>`: merge our MCP server and hooks into an agent's config.

Every change is a merge: other servers, hooks and keys stay as they were; our own earlier
entries are replaced, so connecting twice changes nothing. Files are written atomically
after a one-time `.bak` copy of the original.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from workers.hooks import SCRIPTS

AGENTS = ("claude-code", "codex", "cursor", "gemini-cli", "opencode", "mcp")
SERVER_NAME = "agentmemory"

CLAUDE_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "SubagentStart",
    "SubagentStop",
    "Stop",
    "SessionEnd",
)
CODEX_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "Stop",
)
TOOL_EVENTS = {"PreToolUse", "PostToolUse", "PostToolUseFailure"}


@dataclass
class Change:
    path: Path
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"{self.path} (before)",
                tofile=f"{self.path} (after)",
            )
        )

    def write(self) -> None:
        if not self.changed:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        backup = self.path.with_name(self.path.name + ".agentmemory.bak")
        if self.path.exists() and not backup.exists():
            shutil.copy2(self.path, backup)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(self.after)
        if self.path.exists():
            os.chmod(tmp, self.path.stat().st_mode & 0o777)
        os.replace(tmp, self.path)


def mcp_command() -> list[str]:
    script = Path(sys.executable).parent / "agentmemory"
    if script.exists():
        return [str(script), "mcp"]
    return [sys.executable, "-m", "workers.cli.main", "mcp"]


def hook_command(host: str, url: str = "") -> str:
    # The real interpreter, not a venv or pyenv shim: a shim is a shell script that
    # costs more than the hook itself. `-S` skips site-packages: hooks are stdlib-only.
    python = os.path.realpath(sys.executable)
    prefix = f"AGENTMEMORY_URL={shlex.quote(url)} " if url else ""
    return f"{prefix}{shlex.quote(python)} -S {shlex.quote(str(SCRIPTS[host]))}"


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _load_json(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix it or move it aside") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def _dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def merge_mcp_json(
    path: Path,
    key: str = "mcpServers",
    entry: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> Change:
    before = _read(path)
    data = _load_json(path, before)
    cmd = mcp_command()
    servers = data.setdefault(key, {})
    if not isinstance(servers, dict):
        raise ValueError(f"{path}: `{key}` is not an object")
    servers[SERVER_NAME] = entry or {
        "type": "stdio",
        "command": cmd[0],
        "args": cmd[1:],
        "env": env or {},
    }
    return Change(path, before, _dump_json(data))


def _ours(hook: Any, host: str) -> bool:
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    return isinstance(command, str) and SCRIPTS[host].name in command and "hooks" in command


def merge_hooks_json(path: Path, host: str, events: tuple[str, ...], url: str = "") -> Change:
    before = _read(path)
    data = _load_json(path, before)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError(f"{path}: `hooks` is not an object")
    command = hook_command(host, url)
    for event in events:
        groups = [g for g in hooks.get(event, []) if isinstance(g, dict)]
        kept = []
        for group in groups:
            group["hooks"] = [h for h in group.get("hooks", []) if not _ours(h, host)]
            if group["hooks"]:
                kept.append(group)
        ours: dict[str, Any] = {"hooks": [{"type": "command", "command": command, "timeout": 10}]}
        if event in TOOL_EVENTS:
            ours = {"matcher": "*", **ours}
        hooks[event] = [*kept, ours]
    return Change(path, before, _dump_json(data))


def merge_codex_toml(path: Path, with_hooks: bool, env: dict[str, str] | None = None) -> Change:
    before = _read(path)
    try:
        doc = tomlkit.parse(before) if before.strip() else tomlkit.document()
    except Exception as exc:
        raise ValueError(f"{path} is not valid TOML ({exc}); fix it or move it aside") from None
    cmd = mcp_command()
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    entry = tomlkit.table()
    entry["command"] = cmd[0]
    entry["args"] = cmd[1:]
    if env:
        entry["env"] = env
    servers[SERVER_NAME] = entry
    if with_hooks:
        features = doc.get("features")
        if features is None:
            features = tomlkit.table()
            doc["features"] = features
        features["codex_hooks"] = True
    return Change(path, before, tomlkit.dumps(doc))


def plan(
    agent: str, home: Path, with_hooks: bool, where: dict[str, str] | None = None
) -> list[Change]:
    """The file changes that wire `agent` to agentmemory (nothing written yet).

    `where` locates a non-default instance: AGENTMEMORY_URL goes into the hook commands,
    the rest (data dir, port, instance) into the MCP server's environment.
    """
    where = dict(where or {})
    url = where.pop("AGENTMEMORY_URL", "")
    env = where or None
    if agent == "claude-code":
        changes = [merge_mcp_json(home / ".claude.json", env=env)]
        if with_hooks:
            settings = home / ".claude" / "settings.json"
            changes.append(merge_hooks_json(settings, "claude-code", CLAUDE_EVENTS, url))
        return changes
    if agent == "codex":
        changes = [merge_codex_toml(home / ".codex" / "config.toml", with_hooks, env)]
        if with_hooks:
            hooks = home / ".codex" / "hooks.json"
            changes.append(merge_hooks_json(hooks, "codex", CODEX_EVENTS, url))
        return changes
    if agent == "cursor":
        return [merge_mcp_json(home / ".cursor" / "mcp.json", env=env)]
    if agent == "gemini-cli":
        return [merge_mcp_json(home / ".gemini" / "settings.json", env=env)]
    if agent == "opencode":
        cmd = mcp_command()
        entry: dict[str, Any] = {"type": "local", "command": cmd, "enabled": True}
        if env:
            entry["environment"] = env
        return [merge_mcp_json(home / ".config" / "opencode" / "opencode.json", "mcp", entry)]
    raise ValueError(f"unknown agent {agent!r}; choose one of {', '.join(AGENTS)}")


def generic_block() -> str:
    cmd = mcp_command()
    block = {"mcpServers": {SERVER_NAME: {"command": cmd[0], "args": cmd[1:]}}}
    return json.dumps(block, indent=2)
