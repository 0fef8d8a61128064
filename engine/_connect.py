"""Joining the bus: one place that turns the engine's environment into a NATS connection."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import nats
from nats.aio.client import Client as NATS

from engine import _natspy
from engine.settings import worker_identity

log = logging.getLogger("engine.connect")

_CLOSED: weakref.WeakKeyDictionary[NATS, asyncio.Event] = weakref.WeakKeyDictionary()
_RECONNECTED: weakref.WeakKeyDictionary[NATS, asyncio.Event] = weakref.WeakKeyDictionary()


def default_url() -> str:
    """The embedded server of this process's instance (its layout's `nats` port)."""
    from engine._paths import current_layout

    lay = current_layout()
    return f"nats://127.0.0.1:{lay.ports_for(lay.default_instance()).nats}"


def default_replicas() -> int:
    """The instance's JetStream replica count (ENGINE_REPLICAS, 1 to 5), 1 when unset."""
    return worker_identity().replicas


def closed_event(nc: NATS) -> asyncio.Event | None:
    """Set once `nc` (a connection made by `connect`) is closed for good: waiters learn it
    without polling. None for a connection made elsewhere."""
    return _CLOSED.get(nc)


def reconnected_event(nc: NATS) -> asyncio.Event | None:
    """Set at the next reconnect of `nc` (a connection made by `connect`), so a waiter can
    ask the bus again for what the lost server held (a pull request lives on the server that
    took it). Take it before waiting: each reconnect sets the event and puts a fresh one in
    its place. None for a connection made elsewhere."""
    return _RECONNECTED.get(nc)


PING_INTERVAL = 5
MAX_OUTSTANDING_PINGS = 3


def _on_this_machine(url: str) -> bool:
    """Whether the server listens on one of this machine's own addresses (a node beside
    this host, in its network namespace): this machine can bind it."""
    host = urlparse(url if "://" in url else f"nats://{url}").hostname
    if not host:
        return False
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_DGRAM)
    except OSError:
        return False
    for family, _, _, _, addr in found:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind((addr[0], 0))
            except OSError:
                continue
            return True
    return False


def _servers(url: str) -> tuple[list[str], bool]:
    """The servers of a NATS URL list, and whether their order is to be kept: when some
    but not all are on this machine, those first (all local, a loopback cluster, or none,
    a remote one: the list as given, shuffled by the client)."""
    servers = [u.strip() for u in url.split(",") if u.strip()]
    if len(servers) < 2:
        return servers, False
    mine = [u for u in servers if _on_this_machine(u)]
    if not mine or len(mine) == len(servers):
        return servers, False
    return mine + [u for u in servers if u not in mine], True


def connect_options(
    url: str | None = None, credentials: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """Options for nats.connect: `credentials` is our 0600 JSON user/password file or a
    NATS `.creds` file; reconnects forever so a restarted server is picked up again."""
    ident = worker_identity()
    servers, ordered = _servers(url or ident.nats_url or default_url())
    opts: dict[str, Any] = {
        "servers": servers,
        # A host whose own node is among the servers talks to it first: its calls then stay
        # on that node (nats-server hands a request to a local queue member first), and a
        # partition that cuts another node off does not cut this host's processes off.
        "dont_randomize": ordered,
        "name": name or ident.worker or "engine-client",
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": 0.2,
        "connect_timeout": 2,
        "allow_reconnect": True,
        # A link cut without a reset (a partition, a machine gone) shows only as missing
        # pongs: nats-py's defaults (every 2 min, 2 missed) left a worker on a dead node for
        # ~4 minutes; these notice it in 15-20 s and move to another node.
        "ping_interval": PING_INTERVAL,
        "max_outstanding_pings": MAX_OUTSTANDING_PINGS,
    }
    creds = credentials or ident.credentials
    if creds:
        path = Path(creds)
        if path.suffix == ".creds":
            opts["user_credentials"] = str(path)
        else:
            data = json.loads(path.read_text())
            opts["user"] = data["user"]
            opts["password"] = data["password"]

    async def _err(e: Exception) -> None:
        log.debug("nats: %s", e)

    async def _disc() -> None:
        log.info("nats: disconnected, reconnecting")

    opts["error_cb"] = _err
    opts["disconnected_cb"] = _disc
    return opts


async def connect(
    url: str | None = None, credentials: str | None = None, name: str | None = None, **extra: Any
) -> NATS:
    opts = connect_options(url, credentials, name)
    closed = asyncio.Event()
    user_closed = extra.pop("closed_cb", None)

    async def _closed() -> None:
        closed.set()
        if user_closed is not None:
            await user_closed()

    user_reconnected = extra.pop("reconnected_cb", None)

    async def _reconnected() -> None:
        old = _RECONNECTED.get(nc)
        _RECONNECTED[nc] = asyncio.Event()
        if old is not None:
            old.set()
        if user_reconnected is not None:
            await user_reconnected()

    opts["closed_cb"] = _closed
    opts["reconnected_cb"] = _reconnected
    opts.update(extra)
    nc = await nats.connect(**opts)
    _CLOSED[nc] = closed
    _RECONNECTED[nc] = asyncio.Event()
    _natspy.install(nc)  # nats-py's header code, faster: every call carries headers
    return nc
