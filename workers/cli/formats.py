"""Our entries in each agent format: the MCP server as a command or by URL, a Codex TOML
table, Continue's list, DeepSeek Harness's patch rows, Claude-shaped hook lists, the pi
extension. Pure edits of parsed documents; `connect` decides which to apply."""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import tomlkit

from workers.cli import merge
from workers.cli.agents import Agent, Hooks, UrlShape
from workers.hooks import SCRIPTS

SERVER_NAME = "agentmemory"
MCP_PATH = "/agentmemory/mcp"
URL_KEYS = ("url", "httpUrl", "serverUrl")
"""Where an agent's entry keeps the server's URL (read back by `wiring`)."""
HOOK_TIMEOUT = 10
"""Seconds an agent gives one of our hooks (it bounds itself well below: a hook spools
rather than wait)."""


@dataclass(frozen=True)
class McpUrl:
    """The MCP server by URL: the REST port's Streamable HTTP route and its bearer secret."""

    url: str
    secret: str

    @classmethod
    def of(cls, base: str, secret: str) -> McpUrl:
        return cls(base.rstrip("/") + MCP_PATH, secret)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}"}


def mcp_command() -> list[str]:
    script = Path(sys.executable).parent / "agentmemory"
    if script.exists():
        return [str(script), "mcp"]
    return [sys.executable, "-m", "workers.cli", "mcp"]


def hook_command(script: str, url: str = "", agent_id: str = "", event: str = "") -> str:
    # The real interpreter, not a venv or pyenv shim: a shim is a shell script that
    # costs more than the hook itself. `-S` skips site-packages: hooks are stdlib-only.
    python = os.path.realpath(sys.executable)
    prefix = f"AGENTMEMORY_URL={shlex.quote(url)} " if url else ""
    cmd = f"{prefix}{shlex.quote(python)} -S {shlex.quote(str(SCRIPTS[script]))}"
    if event:
        cmd += f" {shlex.quote(event)}"
    return f"{cmd} --agent={agent_id}" if agent_id and agent_id != script else cmd


def entry(shape: str, env: dict[str, str]) -> dict[str, Any]:
    """Our MCP entry in an agent's shape."""
    cmd = mcp_command()
    plain: dict[str, Any] = {"command": cmd[0], "args": cmd[1:]}
    if shape == "opencode":
        out: dict[str, Any] = {"type": "local", "command": cmd, "enabled": True}
        return {**out, "environment": env} if env else out
    if shape == "stdio":
        return {"type": "stdio", **plain, "env": env}
    if shape == "copilot":
        return {"type": "local", **plain, "env": env, "tools": ["*"]}
    if shape == "continue":
        return {"name": SERVER_NAME, **plain, **({"env": env} if env else {})}
    return {**plain, "env": env} if env else plain


def url_entry(shape: UrlShape, mcp: McpUrl) -> dict[str, Any]:
    """Our MCP entry by URL in an agent's shape (Codex's TOML is `codex_url_server`)."""
    where: dict[str, Any] = {"url": mcp.url, "headers": mcp.headers}
    if shape == "http":
        return {"type": "http", **where}
    if shape == "copilot":
        return {"type": "http", **where, "tools": ["*"]}
    if shape == "httpUrl":
        return {"httpUrl": mcp.url, "headers": mcp.headers}
    if shape == "serverUrl":
        return {"serverUrl": mcp.url, "headers": mcp.headers}
    if shape == "cline":
        return {"type": "streamableHttp", **where}
    if shape == "opencode":
        return {"type": "remote", **where, "enabled": True}
    if shape == "continue":
        return {
            "name": SERVER_NAME,
            "type": "streamable-http",
            "url": mcp.url,
            "requestOptions": {"headers": mcp.headers},
        }
    return where


class Files:
    """Each file read once, changed in memory, turned into one Change."""

    def __init__(self) -> None:
        self.before: dict[Path, str] = {}
        self.docs: dict[Path, Any] = {}
        self.kinds: dict[Path, str] = {}
        self.secret: set[Path] = set()
        """Files given a credential: written readable by their owner only."""
        self.removed: set[Path] = set()

    def _load(self, path: Path, kind: str) -> Any:
        if path not in self.docs:
            text = merge.read(path)
            self.before[path], self.kinds[path] = text, kind
            loaders = {
                "json": merge.load_json,
                "toml": merge.load_toml,
                "yaml": merge.load_yaml,
            }
            self.docs[path] = loaders[kind](path, text) if kind in loaders else text
        return self.docs[path]

    def json(self, path: Path) -> dict[str, Any]:
        doc: dict[str, Any] = self._load(path, "json")
        return doc

    def toml(self, path: Path) -> tomlkit.TOMLDocument:
        doc: tomlkit.TOMLDocument = self._load(path, "toml")
        return doc

    def yaml(self, path: Path, empty: Any) -> Any:
        if self._load(path, "yaml") is None:
            self.docs[path] = empty
        return self.docs[path]

    def text(self, path: Path) -> str:
        text: str = self._load(path, "text")
        return text

    def set_text(self, path: Path, text: str) -> None:
        self._load(path, "text")
        self.docs[path] = text

    def remove(self, path: Path) -> None:
        """The file goes: it held only what we wrote."""
        self._load(path, "text")
        self.removed.add(path)

    def changes(self) -> list[merge.Change]:
        out = []
        for path, doc in self.docs.items():
            kind, before = self.kinds[path], self.before[path]
            if path in self.removed:
                out.append(merge.Change(path, before, "", remove=True))
                continue
            if kind == "json":
                after = merge.dump_json(doc) if doc or before else ""
            elif kind == "toml":
                after = tomlkit.dumps(doc)
            elif kind == "yaml":
                # a list emptied by a removal (a patch file that held only our rows) is
                # written so; a file that parsed to nothing and stayed so is left alone
                emptied = doc is not None and bool(before.strip())
                after = merge.dump_yaml(doc) if doc or emptied else before
            else:
                after = doc
            out.append(merge.Change(path, before, after, private=path in self.secret))
        return out


def yaml_map() -> Any:
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap()


def codex_server(
    doc: tomlkit.TOMLDocument, env: dict[str, str], with_hooks: bool, mcp: McpUrl | None = None
) -> None:
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    item = tomlkit.table()
    if mcp is not None:
        # Codex refuses an inline bearer_token; its http_headers are sent as written.
        item["url"] = mcp.url
        headers = tomlkit.inline_table()
        headers.update(mcp.headers)
        item["http_headers"] = headers
    else:
        cmd = mcp_command()
        item["command"] = cmd[0]
        item["args"] = cmd[1:]
        if env:
            item["env"] = env
    servers[SERVER_NAME] = item
    if with_hooks:
        features = doc.get("features")
        if features is None:
            features = tomlkit.table()
            doc["features"] = features
        features["codex_hooks"] = True


def named(item: Any) -> bool:
    return isinstance(item, dict) and item.get("name") == SERVER_NAME


def continue_server(fs: Files, path: Path, env: dict[str, str], mcp: McpUrl | None = None) -> None:
    ours = url_entry("continue", mcp) if mcp is not None else entry("continue", env)
    # Continue reads config.yaml; a config.json is its legacy form, used when no YAML exists.
    legacy = path.with_name("config.json")
    if not path.exists() and legacy.exists():
        doc = fs.json(legacy)
        servers = [s for s in doc.get("mcpServers") or [] if not named(s)]
        doc["mcpServers"] = [*servers, ours]
        if mcp is not None:
            fs.secret.add(legacy)
        return
    fresh = yaml_map()
    fresh.update({"name": "Local config", "version": "1.0.0", "schema": "v1"})
    doc = fs.yaml(path, fresh)
    servers = [s for s in doc.get("mcpServers") or [] if not named(s)]
    doc["mcpServers"] = [*servers, ours]
    if mcp is not None:
        fs.secret.add(path)


def dsh_ours(row: Any) -> bool:
    inserted = row.get("insert") if isinstance(row, dict) else None
    return isinstance(inserted, list) and any(
        isinstance(i, dict) and i.get("id") in (SERVER_NAME, f"{SERVER_NAME}-hooks")
        for i in inserted
    )


def dsh_rows(
    fs: Files, a: Agent, path: Path, env: dict[str, str], with_hooks: bool, url: str
) -> None:
    rows = fs.yaml(path, [])
    rows[:] = [r for r in rows if not dsh_ours(r)]
    cmd = mcp_command()
    config: dict[str, Any] = {
        "transport": "stdio",
        "serverName": SERVER_NAME,
        "command": cmd[0],
        "args": cmd[1:],
    }
    if env:
        config["env"] = env
    server = {"id": SERVER_NAME, "name": "@deepseek-ai/dsh-mcp-client", "config": config}
    rows.append({"insert": [server]})
    if with_hooks and a.hooks is not None:
        hooks_file = path.with_name("agentmemory.hooks.json")  # = a.hooks.file(home)
        hooks_json(fs.json(hooks_file), a, a.hooks, url, hooks_file)
        rows.append(
            {
                "insert": [
                    {
                        "id": f"{SERVER_NAME}-hooks",
                        "name": "@deepseek-ai/dsh-hooks-claude-code",
                        "config": {"configPath": str(hooks_file)},
                    }
                ]
            }
        )


def ours(hook: Any, script: str) -> bool:
    if not isinstance(hook, dict):
        return False
    name = SCRIPTS[script].name
    return any(
        isinstance(c, str) and name in c and "hooks" in c
        for c in (hook.get("command"), hook.get("bash"))
    )


def our_commands(hooks: Any, script: str) -> list[str]:
    """The commands of ours in an event map, nested in groups (Claude's shape) or listed
    flat (Cursor's, Copilot's)."""
    found: list[str] = []
    for entries in hooks.values() if isinstance(hooks, dict) else []:
        for item in entries if isinstance(entries, list) else []:
            nested = item.get("hooks") if isinstance(item, dict) else None
            for hook in nested if isinstance(nested, list) else [item]:
                if ours(hook, script):
                    found.append(str(hook.get("command") or hook.get("bash")))
    return found


def drop_our_hooks(hooks: dict[str, Any], script: str) -> None:
    """Our entries out of every event; another's stay, and an event left empty goes."""
    for event in list(hooks):
        entries = hooks[event] if isinstance(hooks[event], list) else []
        kept = []
        for item in entries:
            if not isinstance(item, dict):
                kept.append(item)
            elif isinstance(item.get("hooks"), list):
                item["hooks"] = [h for h in item["hooks"] if not ours(h, script)]
                if item["hooks"]:
                    kept.append(item)
            elif not ours(item, script):
                kept.append(item)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]


def hooks_json(doc: dict[str, Any], a: Agent, h: Hooks, url: str, path: Path) -> None:
    """Our hooks merged into a hooks document: earlier ones of ours replaced, the user's
    kept, in the agent's style (agents.HookStyle)."""
    if h.version is not None:
        doc.setdefault("version", h.version)
    hooks = merge.table(doc, h.key, path)
    drop_our_hooks(hooks, h.script)
    for event in h.events:
        agent_id = a.name if h.names_agent else h.script
        command = hook_command(h.script, url, agent_id, event if h.names_event else "")
        hooks[event] = [*hooks.get(event, []), _entry(h, event, command)]


def _entry(h: Hooks, event: str, command: str) -> dict[str, Any]:
    if h.style == "cursor":
        return {"command": command, "timeout": HOOK_TIMEOUT}
    if h.style == "copilot":
        # `bash`/`timeoutSec` for Copilot CLI, `command`/`timeout` for VS Code.
        return {
            "type": "command",
            "bash": command,
            "command": command,
            "timeoutSec": HOOK_TIMEOUT,
            "timeout": HOOK_TIMEOUT,
        }
    hook: dict[str, Any] = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}
    if h.style == "gemini":
        hook = {"name": SERVER_NAME, **hook, "timeout": HOOK_TIMEOUT * 1000}
    group: dict[str, Any] = {"hooks": [hook]}
    if event in h.tool_events:
        group = {"matcher": h.matcher, **group}
    return group


def opencode_plugin(url: str) -> str:
    template = files("workers.hooks").joinpath("opencode", "agentmemory.js").read_text()
    env = {"AGENTMEMORY_URL": url} if url else {}
    # JSON literals are JavaScript literals: a path with a quote stays one string.
    return (
        template.replace('"__AGENTMEMORY_PYTHON__"', json.dumps(os.path.realpath(sys.executable)))
        .replace('"__AGENTMEMORY_HOOK__"', json.dumps(str(SCRIPTS["claude-code"])))
        .replace("__AGENTMEMORY_ENV__", json.dumps(env))
    )


def pi_extension(url: str) -> str:
    template = files("workers.hooks").joinpath("pi", "index.ts").read_text()
    env = {"AGENTMEMORY_URL": url} if url else {}
    return (
        template.replace("__AGENTMEMORY_PYTHON__", os.path.realpath(sys.executable))
        .replace("__AGENTMEMORY_HOOK__", str(SCRIPTS["claude-code"]))
        .replace("__AGENTMEMORY_ENV__", json.dumps(env))
    )
