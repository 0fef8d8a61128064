"""`agentmemory doctor`: each check says what is wrong and the command that fixes it."""

from __future__ import annotations

import json
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

import httpx

from workers.cli.target import Target, secret_path
from workers.hooks import SCRIPTS, _spool
from workers.hooks._hookcore import Settings


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run(target: Target, home: Path) -> list[Check]:
    inst = target.instance
    running = inst.running_pid() is not None
    out: list[Check] = []
    ports = inst.ports
    named = {"REST": ports.rest, "streams": ports.streams, "viewer": ports.viewer}
    named |= {"console": ports.console, "NATS": ports.nats, "NATS monitor": ports.nats_monitor}
    busy = [f"{n} :{p}" for n, p in named.items() if not _port_free(p)]
    if running:
        out.append(
            Check("ports", True, f"held by the running engine ({', '.join(busy) or 'none'})")
        )
    elif busy:
        out.append(
            Check(
                "ports",
                False,
                f"in use by another program: {', '.join(busy)}",
                f"stop that program, or run on another block: agentmemory start --instance {inst.number + 1}",
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

    sp = secret_path()
    if os.environ.get("AGENTMEMORY_SECRET"):
        out.append(Check("secret", True, "AGENTMEMORY_SECRET is set"))
    elif not sp.exists():
        out.append(Check("secret", True, f"{sp} is generated on first start"))
    else:
        mode = stat.S_IMODE(sp.stat().st_mode)
        out.append(Check("secret", not mode & 0o077, f"{sp} mode {mode:o}", f"chmod 600 {sp}"))

    if running:
        try:
            r = httpx.get(
                f"http://127.0.0.1:{ports.nats_monitor}/healthz?js-enabled-only=true", timeout=2
            )
            ok = r.status_code == 200
            out.append(
                Check(
                    "NATS",
                    ok,
                    f"healthz {r.status_code}",
                    "" if ok else "agentmemory stop && agentmemory start",
                )
            )
        except httpx.HTTPError as exc:
            out.append(
                Check(
                    "NATS",
                    False,
                    f"monitor port not answering ({type(exc).__name__})",
                    "agentmemory stop && agentmemory start",
                )
            )
        with target.client(timeout=3) as rest:
            alive = rest.alive()
        out.append(
            Check(
                "REST",
                alive,
                target.url + "/agentmemory/livez",
                "" if alive else "check logs in " + str(inst.logs),
            )
        )
    else:
        out.append(Check("engine", False, "not running", "agentmemory start --detach"))

    settings_file = home / ".claude" / "settings.json"
    try:
        hooked = SCRIPTS["claude-code"].name in json.dumps(
            json.loads(settings_file.read_text()).get("hooks", {})
        )
    except (OSError, ValueError, AttributeError):
        hooked = False
    out.append(
        Check(
            "claude-code hooks",
            hooked,
            str(settings_file),
            "" if hooked else "agentmemory connect claude-code --with-hooks",
        )
    )
    codex_hooks = home / ".codex" / "hooks.json"
    if (home / ".codex").exists():
        try:
            wired = SCRIPTS["codex"].name in codex_hooks.read_text()
        except OSError:
            wired = False
        fix = "" if wired else "agentmemory connect codex --with-hooks"
        out.append(Check("codex hooks", wired, str(codex_hooks), fix))
    backlog = len(_spool.read(Settings()))
    out.append(
        Check(
            "hook spool",
            backlog == 0,
            f"{backlog} event(s) waiting",
            "" if backlog == 0 else "agentmemory start (drains the spool)",
        )
    )
    return out
