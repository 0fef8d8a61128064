"""What an agent's config holds of ours, read back for `agentmemory doctor` and
`upgrade`: the MCP command or URL and the hook commands we wrote."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from workers.cli import merge
from workers.cli.agents import Agent, agent, hook_sharers
from workers.cli.formats import SERVER_NAME, URL_KEYS, named, our_commands


@dataclass
class Wiring:
    """What an agent's config holds of ours (read back for `doctor`)."""

    agent: str
    mcp_command: list[str]
    hook_commands: list[str]
    mcp_url: str = ""
    """The server's URL when the entry names one (`connect --transport http`)."""
    mcp_bearer: str = ""
    """The bearer token that entry sends."""

    @property
    def connected(self) -> bool:
        return bool(self.mcp_command or self.mcp_url or self.hook_commands)


def wiring(name: str, home: Path) -> Wiring:
    a = agent(name)
    command: list[str] = []
    url = bearer = ""
    try:
        found = _our_entry(a, a.file(home))
    except (OSError, ValueError, AttributeError, TypeError):  # unreadable, or not our shape
        found = None
    if isinstance(found, dict):
        raw, args = found.get("command"), found.get("args") or []
        if isinstance(raw, str):
            command = [raw, *(str(x) for x in args if isinstance(x, str | int))]
        elif isinstance(raw, list):
            command = [str(c) for c in raw]
        url, bearer = _url_of(found)
    hooks: list[str] = []
    if a.hooks is not None and a.hooks.style == "plugin":
        hooks = [str(a.hooks.file(home))] if a.hooks.file(home).exists() else []
    elif a.hooks is not None:
        path = a.hooks.file(home)
        if a.shape == "dsh":
            path = a.file(home).with_name("agentmemory.hooks.json")
        try:
            groups = merge.load_json(path, merge.read(path)).get(a.hooks.key, {})
        except (OSError, ValueError):
            groups = {}
        hooks = our_commands(groups, a.hooks.script)
        if hook_sharers(a) and not (command or url):
            hooks = []  # another agent's hooks (one file for two): this one is not wired
    elif a.format == "extension" and a.file(home).exists():
        hooks = [str(a.file(home))]
    return Wiring(name, command, hooks, url, bearer)


def _url_of(found: dict[str, Any]) -> tuple[str, str]:
    """The URL and bearer token of an entry by URL, in any agent's shape."""
    url = next((str(found[k]) for k in URL_KEYS if isinstance(found.get(k), str)), "")
    options = found.get("requestOptions")
    headers = (
        found.get("headers")
        or found.get("http_headers")
        or (options.get("headers") if isinstance(options, dict) else None)
        or {}
    )
    auth = str(headers.get("Authorization", "")) if isinstance(headers, dict) else ""
    scheme, _, token = auth.partition(" ")
    return url, token.strip() if scheme.lower() == "bearer" else ""


def _our_entry(a: Agent, path: Path) -> Any:
    text = merge.read(path)
    if not text.strip() or a.format in ("none", "extension"):
        return None
    if a.format == "toml":
        servers = tomlkit.parse(text).get(a.key) or {}
        item = servers.get(SERVER_NAME)
        return item.unwrap() if item is not None else None
    if a.shape == "continue":
        doc = merge.load_yaml(path, text) or {}
        return next((s for s in doc.get("mcpServers") or [] if named(s)), None)
    if a.shape == "dsh":
        rows = merge.load_yaml(path, text) or []
        for row in rows:
            for item in (row.get("insert") or []) if isinstance(row, dict) else []:
                if isinstance(item, dict) and item.get("id") == SERVER_NAME:
                    return item.get("config")
        return None
    doc = merge.load_yaml(path, text) if a.format == "yaml" else merge.load_json(path, text)
    servers = (doc or {}).get(a.key)
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
    found = [w for w in words if not w.startswith("-")]
    return url, found[:2]
