"""`agentmemory doctor`: each check says what is wrong and the command that fixes it.

Only what the user set up is judged: the agents whose config holds our entries (or that
`--agent` names). An agent they never connected is not a failure.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

from engine.config import ConfigError, load_config
from engine.disk import DEFAULT_MIN_FREE, free_bytes, mb, parse_size
from engine.paths import default_config
from triggers.http.secret import given_secret
from workers.cli import connect
from workers.cli.settings import cli_settings
from workers.cli.target import Target, secret_path
from workers.hooks import SCRIPTS, _delivery
from workers.hooks._settings import DEFAULT_URL, Settings


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    # A failure's fix; on a passing check, an optional next step.
    fix: str = ""


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run(target: Target, home: Path, agents: list[str] | None = None) -> list[Check]:
    out: list[Check] = []
    running = False
    if not target.remote:
        running = target.instance.running_pid() is not None
        out += _local(target, running)
    out.append(_secret_file())
    if target.remote or running:
        out += _rest(target)
    else:
        out.append(Check("engine", False, "not running", target.hint("start --detach", local=True)))
    out += _agents(target, home, agents or [])
    out.append(_spool_backlog(target))
    return out


def _local(target: Target, running: bool) -> list[Check]:
    inst = target.instance
    ports = inst.ports
    out: list[Check] = []
    named = {"REST": ports.rest, "streams": ports.streams, "viewer": ports.viewer}
    named |= {"console": ports.console, "NATS": ports.nats, "NATS monitor": ports.nats_monitor}
    busy = [f"{n} :{p}" for n, p in named.items() if not _port_free(p)]
    if running:
        out.append(
            Check("ports", True, f"held by the running engine ({', '.join(busy) or 'none'})")
        )
    elif busy:
        # Another block, not this instance's flags: its data dir belongs to this one.
        other = ["agentmemory", "start", "--detach", "--instance", str(inst.number + 1)]
        if "--port" in target.flags():
            other += ["--port", str(target.anchor)]
        out.append(
            Check(
                "ports",
                False,
                f"in use by another program: {', '.join(busy)}",
                f"stop that program, or run on another block: {' '.join(other)}",
            )
        )
    else:
        out.append(Check("ports", True, "all six ports are free"))

    dd = inst.data_dir
    if not dd.exists():
        out.append(Check("data dir", True, f"{dd} will be created on first start"))
    else:
        mode = stat.S_IMODE(dd.stat().st_mode)
        writable = os.access(dd, os.W_OK)
        ok = writable and not mode & 0o077
        fix = "" if ok else f"chmod 700 {dd}" + ("" if writable else f" && chown $USER {dd}")
        out.append(Check("data dir", ok, f"{dd} mode {mode:o}, writable={writable}", fix))
    out.append(_disk(dd))

    if running:
        restart = (
            f"{target.hint('stop', local=True)} && {target.hint('start --detach', local=True)}"
        )
        try:
            r = httpx.get(
                f"http://127.0.0.1:{ports.nats_monitor}/healthz?js-enabled-only=true", timeout=2
            )
            ok = r.status_code == 200
            out.append(Check("NATS", ok, f"healthz {r.status_code}", "" if ok else restart))
        except httpx.HTTPError as exc:
            detail = f"monitor port not answering ({type(exc).__name__})"
            out.append(Check("NATS", False, detail, restart))
    return out


def _disk(dd: Path) -> Check:
    """The engine keeps `nats.min_free_disk` free on the data dir's disk: below it observe
    answers a retryable 503 (docs/design/durability.md)."""
    try:
        reserve = parse_size(load_config(default_config()).nats.min_free_disk)
    except (ConfigError, ValueError):
        reserve = DEFAULT_MIN_FREE
    free = free_bytes(dd)
    if free >= reserve:
        return Check("disk", True, f"{mb(free)} free on the disk holding {dd}")
    return Check(
        "disk",
        False,
        f"the disk holding {dd} is full: {mb(free)} free, {mb(reserve)} kept free "
        "(observations are refused with a retryable 503 meanwhile)",
        f"free space on that disk (`du -sh {dd}/*` shows what the data dir holds); "
        "writes resume by themselves",
    )


def _secret_file() -> Check:
    sp = secret_path()
    if given_secret():
        return Check("secret", True, "AGENTMEMORY_SECRET is set")
    if not sp.exists():
        return Check("secret", True, f"{sp} is generated on first start")
    mode = stat.S_IMODE(sp.stat().st_mode)
    ok = not mode & 0o077
    return Check("secret", ok, f"{sp} mode {mode:o}", "" if ok else f"chmod 600 {sp}")


def _rest(target: Target) -> list[Check]:
    with target.client(timeout=3) as rest:
        alive = rest.alive()
        accepted = rest.authorized() if alive else None
    livez = target.url + "/agentmemory/livez"
    if not alive:
        fix = (
            f"check that agentmemory runs at {target.url}"
            if target.remote
            else f"see the logs in {target.instance.logs}"
        )
        return [Check("REST", False, f"{livez} is not answering", fix)]
    checks = [Check("REST", True, livez)]
    if accepted is False:
        checks.append(
            Check(
                "secret accepted",
                False,
                "the server answers 401 to our secret",
                "set AGENTMEMORY_SECRET to the server's secret (its ~/.agentmemory/secret)",
            )
        )
    else:
        checks.append(Check("secret accepted", True, "an authenticated request succeeds"))
    return checks


def _agents(target: Target, home: Path, chosen: list[str]) -> list[Check]:
    wired = {a.name: connect.wiring(a.name, home) for a in connect.AGENTS}
    judged = [a for a, w in wired.items() if w.connected or a in chosen]
    if not judged:
        return [
            Check(
                "agents",
                True,
                "none connected yet",
                target.hint("connect claude-code --with-hooks"),
            )
        ]
    out: list[Check] = []
    for agent in judged:
        w = wired[agent]
        hooks = agent in connect.HOOK_AGENTS
        reconnect = target.hint(f"connect {agent}" + (" --with-hooks" if hooks else ""))
        if not w.connected:
            out.append(Check(agent, False, "not connected", reconnect))
            continue
        if w.mcp_url:
            out.append(_mcp_url(target, agent, w))
        else:
            out.append(_mcp_entry(agent, w, reconnect))
        if hooks:
            out.append(_hooks(target, agent, w, reconnect))
    return out


def _runnable(path: str) -> bool:
    return bool(shutil.which(path)) if os.sep not in path else os.access(path, os.X_OK)


def _mcp_entry(agent: str, w: connect.Wiring, reconnect: str) -> Check:
    name = f"{agent} MCP server"
    if not w.mcp_command:
        return Check(name, False, "no agentmemory entry in its MCP config", reconnect)
    program = w.mcp_command[0]
    if not _runnable(program):
        return Check(name, False, f"{program} does not exist or cannot run", reconnect)
    return Check(name, True, " ".join(w.mcp_command))


def _mcp_url(target: Target, agent: str, w: connect.Wiring) -> Check:
    """An entry by URL: this server's MCP route, with the secret it checks."""
    name = f"{agent} MCP server"
    reconnect = target.hint(f"connect {agent} --transport http")
    expected = connect.McpUrl.of(target.url, target.secret)
    if w.mcp_url.rstrip("/") != expected.url:
        return Check(name, False, f"{w.mcp_url}, not this server ({expected.url})", reconnect)
    if not target.secret or w.mcp_bearer != target.secret:
        return Check(name, False, f"{w.mcp_url} with another secret than the server's", reconnect)
    return Check(name, True, f"{w.mcp_url} (bearer secret)")


def _hooks(target: Target, agent: str, w: connect.Wiring, reconnect: str) -> Check:
    name = f"{agent} hooks"
    if not w.hook_commands:
        return Check(
            name, True, "not installed (the MCP tools work; sessions are not captured)", reconnect
        )
    missing = sorted(
        {f for cmd in w.hook_commands for f in connect.hook_target(cmd)[1] if not os.path.exists(f)}
    )
    if missing:
        return Check(
            name,
            False,
            f"{len(w.hook_commands)} installed, but {', '.join(missing)} is missing",
            reconnect,
        )
    urls = {connect.hook_target(cmd)[0] for cmd in w.hook_commands}
    # A hook without its own AGENTMEMORY_URL reads the agent's environment, else the default.
    default = cli_settings().url or DEFAULT_URL
    sends_to = {(u or default).rstrip("/") for u in urls}
    if sends_to != {target.url}:
        return Check(
            name,
            False,
            f"send to {', '.join(sorted(sends_to))}, not to this server ({target.url})",
            reconnect,
        )
    return Check(name, True, f"{len(w.hook_commands)} installed, sending to {target.url}")


def _spool_backlog(target: Target) -> Check:
    backlog = len(_delivery.read(Settings()))
    if backlog == 0:
        return Check("hook spool", True, "no event waiting")
    if target.remote:
        drain = [os.path.realpath(sys.executable), "-S", str(SCRIPTS["claude-code"]), "--drain"]
        fix = f"AGENTMEMORY_URL={shlex.quote(target.url)} {shlex.join(drain)}"
    else:
        fix = f"{target.hint('start --detach', local=True)} (drains the spool)"
    return Check("hook spool", False, f"{backlog} event(s) waiting to be sent", fix)
