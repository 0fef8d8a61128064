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
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"{self.path} (before)",
            tofile=f"{self.path} (after)",
        )
        # A file without a final newline would glue its last line to the next one.
        return "".join(
            ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines
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
    agent: str,
    home: Path,
    with_hooks: bool,
    hook_url: str = "",
    mcp_env: dict[str, str] | None = None,
) -> list[Change]:
    """The file changes that wire `agent` to agentmemory (nothing written yet).

    A non-default server is named by `hook_url` (put into the hook commands, which read
    nothing else) and by `mcp_env` (the MCP server's environment).
    """
    env = mcp_env or None
    mcp_file, hooks_file = config_files(agent, home)
    changes: list[Change]
    if agent == "codex":
        changes = [merge_codex_toml(mcp_file, with_hooks, env)]
    elif agent == "opencode":
        cmd = mcp_command()
        entry: dict[str, Any] = {"type": "local", "command": cmd, "enabled": True}
        if env:
            entry["environment"] = env
        changes = [merge_mcp_json(mcp_file, "mcp", entry)]
    else:
        changes = [merge_mcp_json(mcp_file, env=env)]
    if with_hooks and hooks_file is not None:
        events = CLAUDE_EVENTS if agent == "claude-code" else CODEX_EVENTS
        changes.append(merge_hooks_json(hooks_file, agent, events, hook_url))
    return changes


def config_files(agent: str, home: Path) -> tuple[Path, Path | None]:
    """The agent's MCP config file and its hooks file (None: the agent has no hooks)."""
    if agent == "claude-code":
        return home / ".claude.json", home / ".claude" / "settings.json"
    if agent == "codex":
        return home / ".codex" / "config.toml", home / ".codex" / "hooks.json"
    if agent == "cursor":
        return home / ".cursor" / "mcp.json", None
    if agent == "gemini-cli":
        return home / ".gemini" / "settings.json", None
    if agent == "opencode":
        return home / ".config" / "opencode" / "opencode.json", None
    raise ValueError(f"unknown agent {agent!r}; choose one of {', '.join(AGENTS)}")


HOOK_AGENTS = tuple(SCRIPTS)


@dataclass
class Wiring:
    """What an agent's config holds of ours (read back for `doctor`)."""

    agent: str
    mcp_command: list[str]
    hook_commands: list[str]

    @property
    def connected(self) -> bool:
        return bool(self.mcp_command or self.hook_commands)


def wiring(agent: str, home: Path) -> Wiring:
    mcp_file, hooks_file = config_files(agent, home)
    command: list[str] = []
    try:
        entry = _our_mcp_entry(agent, mcp_file)
    except (OSError, ValueError, AttributeError):  # unreadable, or not the shape we write
        entry = None
    if isinstance(entry, dict):
        raw = entry.get("command")
        args = entry.get("args") or []
        if isinstance(raw, str):
            command = [raw, *(str(a) for a in args if isinstance(a, str | int))]
        elif isinstance(raw, list):
            command = [str(c) for c in raw]
    hooks: list[str] = []
    if hooks_file is not None:
        try:
            groups = _load_json(hooks_file, _read(hooks_file)).get("hooks", {})
        except (OSError, ValueError):
            groups = {}
        hooks = [
            hook["command"]
            for event_groups in (list(groups.values()) if isinstance(groups, dict) else [])
            for group in _list(event_groups)
            for hook in _list(group.get("hooks") if isinstance(group, dict) else None)
            if _ours(hook, agent)
        ]
    return Wiring(agent, command, hooks)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _our_mcp_entry(agent: str, path: Path) -> Any:
    text = _read(path)
    if not text.strip():
        return None
    if agent == "codex":
        servers = tomlkit.parse(text).get("mcp_servers") or {}
        entry = servers.get(SERVER_NAME)
        return entry.unwrap() if entry is not None else None
    servers = _load_json(path, text).get("mcp" if agent == "opencode" else "mcpServers")
    return servers.get(SERVER_NAME) if isinstance(servers, dict) else None


def hook_target(command: str) -> tuple[str, list[str]]:
    """The URL an installed hook command sends to ("" when it names none) and the files
    it runs (interpreter and script), as `hook_command` wrote them."""
    try:
        words = shlex.split(command)
    except ValueError:
        return "", []
    url = ""
    while words and "=" in words[0] and not words[0].startswith(("/", ".")):
        key, _, value = words.pop(0).partition("=")
        if key == "AGENTMEMORY_URL":
            url = value
    files = [w for w in words if not w.startswith("-")]
    return url, files[:2]


def generic_block() -> str:
    cmd = mcp_command()
    block = {"mcpServers": {SERVER_NAME: {"command": cmd[0], "args": cmd[1:]}}}
    return json.dumps(block, indent=2)
