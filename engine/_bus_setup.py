"""Setting up the instance's bus before anything connects: its ports free, a nats-server
left running by a killed supervisor stopped, and the embedded nats-server made from
config/engine.yaml (store, limits, domain, leaf links and their credentials)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

from engine._config import EngineConfig
from engine._instance import Instance
from engine._nats_server import (
    LeafNodes,
    LeafRemote,
    LeafTls,
    NatsServer,
    ensure_credentials,
    leaf_allowlist,
)
from engine._paths import ENGINE_PORTS

log = logging.getLogger("engine.supervisor")


class StartError(RuntimeError):
    """The engine cannot start; the message says what to do."""


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a listener could bind `port` now. SO_REUSEADDR, as every server here sets it:
    sockets left in TIME-WAIT by closed client connections do not count as in use (without
    it a restart was refused for about a minute after clients had closed)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def check_ports(cfg: EngineConfig, inst: Instance) -> None:
    """Every port the instance listens on is free (the bus's own not, when it joins an
    external one); StartError naming what to do otherwise."""
    named = inst.ports.as_dict()
    if cfg.nats.url is not None:
        for p in ENGINE_PORTS:
            named.pop(p, None)
    for what, port in named.items():
        if not port_is_free(port):
            raise StartError(
                f"port {port} ({what}) on 127.0.0.1 is already in use; stop what holds "
                f"it (`ss -ltnp 'sport = :{port}'`) or move the block with --port/--instance"
            )


def kill_stale_server(inst: Instance) -> None:
    """A supervisor killed with SIGKILL leaves its nats-server running on our store: stop it."""
    prev = inst.read_pidfile() or {}
    pid = prev.get("nats_pid")
    if not pid:
        return
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if b"nats-server" in cmd and str(inst.data_dir).encode() in cmd:
        log.warning("stopping stale nats-server (pid %s) left by a previous run", pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.05)


def embedded_server(cfg: EngineConfig, inst: Instance, user: str, password: str) -> NatsServer:
    """The instance's own nats-server, as config/engine.yaml sets it up (not started)."""
    return NatsServer(
        store_dir=inst.data_dir / "nats",
        port=inst.ports.nats,
        monitor_port=inst.ports.nats_monitor,
        user=user,
        password=password,
        server_name="-".join(
            [inst.layout.name, str(inst.number)] + ([cfg.nats.domain] if cfg.nats.domain else [])
        ),
        log_file=inst.data_dir / "logs" / "nats-server.log",
        max_file_store=cfg.nats.max_file_store,
        max_memory_store=cfg.nats.max_memory_store,
        memory_limit=cfg.nats.memory_limit,
        sync=cfg.nats.sync,
        domain=cfg.nats.domain,
        leafnodes=leafnodes(cfg, inst),
    )


def leafnodes(config: EngineConfig, inst: Instance) -> LeafNodes | None:
    """The leaf links config/engine.yaml declares (`nats.leafnodes`), None for none."""
    cfg = config.nats.leafnodes
    if not cfg.active:
        return None

    def tls(t: Any) -> LeafTls | None:
        return LeafTls(t.cert_file, t.key_file, t.ca_file, t.verify) if t else None

    leaf = LeafNodes(
        listen=cfg.listen,
        allow=leaf_allowlist(cfg.share.streams, cfg.share.subjects),
        tls=tls(cfg.tls),
    )
    if cfg.listen:
        path = inst.data_dir / "nats" / "leaf-credentials.json"
        leaf.user, leaf.password = ensure_credentials(path, user="leaf")
        log.info("leaf link: peers connect to %s with %s", cfg.listen, path)
    for r in cfg.remotes:
        remote = LeafRemote(url=r.url, tls=tls(r.tls))
        if r.credentials:
            creds = Path(r.credentials).expanduser()
            if creds.suffix == ".creds":
                remote.creds_file = str(creds)
            else:
                try:
                    data = json.loads(creds.read_text())
                    remote.user, remote.password = data["user"], data["password"]
                except (OSError, ValueError, KeyError) as exc:
                    raise StartError(
                        f"nats.leafnodes.remotes: cannot read credentials {creds}: {exc}"
                    ) from None
        leaf.remotes.append(remote)
    return leaf
