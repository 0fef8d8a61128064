"""Upstream's mesh over HTTP, for a peer registered by `url` on an instance without a
JetStream domain (no leaf link to carry the TEAM stream): a sync pushes what this instance's
team has shared since the last good sync to `<url>/agentmemory/mesh/receive` and pulls
`<url>/agentmemory/mesh/export?since=<lastSyncAt>`, with upstream's Bearer
`AGENTMEMORY_SECRET` (both instances share it), 30 s, no redirects. What comes back is
stored as `mesh/receive` stores a push (newer versions win). The peer's status
(`connected` / `error`), `lastSyncAt` and last error are kept on its record.

As upstream, a URL is refused when it is not http(s), carries credentials, or names a
loopback or private address (also after resolving it); `AGENTMEMORY_MESH_ALLOW_PRIVATE=true`
(ours) lets one through, for a LAN or a test.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec

from engine import FunctionError
from functions.team.settings import team_settings

TIMEOUT = 30.0
ALLOW_PRIVATE = "AGENTMEMORY_MESH_ALLOW_PRIVATE"


class Pulled(msgspec.Struct, kw_only=True):
    """The part of a peer's `mesh/export` reply a sync applies."""

    memories: list[dict[str, Any]] = msgspec.field(default_factory=list)
    observations: list[dict[str, Any]] = msgspec.field(default_factory=list)
    forgotten: list[str] = msgspec.field(default_factory=list)


def _private(ip: str) -> bool:
    try:
        a = ipaddress.ip_address(ip)
    except ValueError:
        return True  # not an address we can judge: refuse
    return a.is_private or a.is_loopback or a.is_link_local or a.is_unspecified


async def check_url(url: str) -> str:
    """The URL without a trailing slash, or a 422 naming `url` (a string of the declared
    shape that names no peer this instance may call: refused, as docs/API.md has it)."""

    def bad(why: str) -> FunctionError:
        return FunctionError("UNPROCESSABLE", f"peer URL refused: {why}", field="url")

    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad("it must be an http(s) URL with a host")
    if parts.username or parts.password:
        raise bad("it must not carry credentials")
    if team_settings().allow_private:
        return url.strip().rstrip("/")
    host = parts.hostname
    if host == "localhost" or host.endswith(".localhost"):
        raise bad(f"private/local address not allowed (set {ALLOW_PRIVATE}=true for a LAN)")
    try:
        ipaddress.ip_address(host)
        addrs = [host]
    except ValueError:
        try:
            infos = await asyncio.to_thread(socket.getaddrinfo, host, parts.port or 443)
        except OSError as exc:
            raise bad(f"{host} does not resolve: {exc}") from None
        addrs = [str(i[4][0]) for i in infos]
    if any(_private(a) for a in addrs):
        raise bad(f"private/local address not allowed (set {ALLOW_PRIVATE}=true for a LAN)")
    return url.strip().rstrip("/")


def secret() -> str:
    return team_settings().secret


async def exchange(url: str, since: str, push: dict[str, list[dict[str, Any]]]) -> Pulled:
    """Push `push` to the peer's mesh/receive, pull its mesh/export since `since`: what it
    had. Raises httpx errors and ValueError (a reply that is not what upstream's routes
    answer)."""
    headers = {"Authorization": f"Bearer {secret()}"}
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=TIMEOUT, follow_redirects=False
    ) as http:
        if push["memories"] or push["observations"]:
            r = await http.post("/agentmemory/mesh/receive", json=push)
            r.raise_for_status()
        r = await http.get("/agentmemory/mesh/export", params={"since": since} if since else {})
        r.raise_for_status()
        try:
            return msgspec.json.decode(r.content, type=Pulled)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ValueError(f"mesh/export answered something else: {exc}") from None
