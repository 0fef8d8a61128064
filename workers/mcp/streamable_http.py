"""MCP over Streamable HTTP on the REST port: `POST /agentmemory/mcp`, `DELETE` to end a
session (upstream 0.9.34's route, for clients that take an MCP server by URL).

One function call per HTTP request, as for every other route: the http trigger checks the
bearer secret and the Origin, then hands the request here, where the SDK's Streamable HTTP
transport answers it with the server `agentmemory mcp` runs on stdio (server.build_app:
the same tools, resources and prompts), over this worker's bus connection. It answers in
JSON, never SSE: no tool streams or asks the client anything back, and a JSON answer fits
one function reply. Sessions (`Mcp-Session-Id`) are records in a KV bucket, not objects in
a process: every memory replica serves the REST port, and a client's next connection may
reach another one. docs/design/mcp-over-http.md says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import anyio
import msgspec
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from engine import Bucket, Client, Context, HttpRequest, HttpResponse
from engine.settings import load
from triggers.http.settings import LOOPBACK_HOSTS, HttpSettings
from workers.mcp import jsonrpc
from workers.mcp.caller import Caller, of_http
from workers.mcp.gateway import BusGateway, Gateway
from workers.mcp.server import build_app

PATH = "/agentmemory/mcp"
SESSIONS_BUCKET = "mcp_sessions"  # key: <session id>
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
SESSION_TTL = 24 * 3600.0
"""A session unused this long is forgotten (its id then answers 404, and the client starts a
new one, as the specification says it must)."""
TOUCH_EVERY = 600.0
"""A session in use is written again at most this often: its TTL restarts without a KV
write per request."""


class Session(msgspec.Struct, kw_only=True):
    protocol_version: str = ""
    """The version `initialize` settled on, for the requests that leave out the header."""
    client: str = ""
    """The client's name and version, as it introduced itself."""
    started: float = 0.0
    touched: float = 0.0


def request_caller(ctx: Any) -> Caller:
    """The caller this HTTP request names (put in the ASGI scope's state by `Transport`)."""
    caller = getattr(getattr(ctx.request, "state", None), "caller", None)
    return caller if isinstance(caller, Caller) else Caller()


def security() -> TransportSecuritySettings:
    """DNS rebinding protection for a loopback server: the Host a browser was tricked into
    sending (attacker.example resolving to 127.0.0.1) is refused, and an Origin must be a
    loopback one or one of VIEWER_ALLOWED_ORIGINS (the http trigger refuses the others
    first). A server bound beyond loopback was exposed on purpose: any Host is its own."""
    settings = load(HttpSettings)
    if settings.host not in LOOPBACK_HOSTS:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = ("127.0.0.1", "localhost", "[::1]")
    return TransportSecuritySettings(
        allowed_hosts=[*names, *(f"{n}:*" for n in names)],
        allowed_origins=[
            *(
                f"{scheme}://{n}{port}"
                for scheme in ("http", "https")
                for n in names
                for port in ("", ":*")
            ),
            *(o.rstrip("/") for o in settings.allowed_origins),
        ],
    )


@dataclass
class _Answer:
    """What the SDK's transport sent back for one request."""

    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)

    def response(self) -> HttpResponse:
        headers = {
            k: v for k, v in self.headers.items() if k not in ("content-type", "content-length")
        }
        ctype = self.headers.get("content-type", "")
        if not self.body:  # 202 for a notification: no body at all, not a JSON ""
            return HttpResponse(
                status=self.status, headers=headers, body="", content_type="text/plain"
            )
        if "json" in ctype:
            return HttpResponse(
                status=self.status, headers=headers, body=msgspec.Raw(bytes(self.body))
            )
        # The transport's plain-text refusals ("Invalid Host header"), as its JSON ones are.
        return _rpc_error(self.status, self.body.decode("utf-8", "replace"), headers=headers)


def _rpc_error(
    status: int, message: str, code: int = -32600, headers: dict[str, str] | None = None
) -> HttpResponse:
    """A JSON-RPC error with no request id, as the SDK's own transport refuses a request."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return HttpResponse(status=status, headers=headers or {}, body=body)


def _negotiated(body: bytes | bytearray) -> str:
    """The protocol version the server's reply to `initialize` settled on ("" if none)."""
    try:
        doc = msgspec.json.decode(bytes(body))
    except msgspec.DecodeError:
        return ""
    result = doc.get("result") if isinstance(doc, dict) else None
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    return version if isinstance(version, str) else ""


def _client_of(message: dict[str, Any]) -> str:
    """The client's name and version, as its `initialize` gives them."""
    info = (message.get("params") or {}).get("clientInfo")
    if not isinstance(info, dict):
        return ""
    return f"{info.get('name', '')} {info.get('version', '')}".strip()[:200]


class Transport:
    """The MCP server and its sessions, made once per process on the worker's bus.

    The SDK's session manager runs, stateless, in a task of its own for the process's
    life (as an ASGI server's lifespan would run it): each request then costs the exchange
    only, not a manager and its task group (0.7 ms of CPU a request against 0.5 ms,
    docs/design/mcp-over-http.md)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.gateway = BusGateway(client)
        self.app: Server[Any] = build_app(
            self._provider, caller_of=request_caller, remember_tools=False
        )
        self.manager = StreamableHTTPSessionManager(
            self.app, json_response=True, stateless=True, security_settings=security()
        )
        self._sessions: Bucket | None = None
        self._running: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()

    async def _serve(self) -> None:
        try:
            async with self.manager.run():
                self._ready.set()
                await self._stop.wait()
        finally:
            self._ready.set()  # a manager that failed to start fails its waiters

    @property
    def ended(self) -> bool:
        return self._running is not None and self._running.done()

    async def started(self) -> StreamableHTTPSessionManager:
        if self._running is None:
            self._running = asyncio.create_task(self._serve(), name="mcp-http")
        await self._ready.wait()
        if self.ended:
            raise RuntimeError("the MCP session manager has stopped")
        return self.manager

    async def close(self) -> None:
        if self._running is not None:
            self._stop.set()
            with contextlib.suppress(Exception):
                await self._running

    async def _provider(self) -> Gateway:
        return self.gateway

    async def sessions(self) -> Bucket:
        if self._sessions is None:
            self._sessions = await self.client.bucket(SESSIONS_BUCKET)
        return self._sessions

    async def session(self, sid: str) -> Session | None:
        bucket = await self.sessions()
        found: Session | None = await bucket.get(sid, Session)
        now = time.time()
        if found is not None and now - found.touched > TOUCH_EVERY:
            found.touched = now
            await bucket.put(sid, found, ttl=SESSION_TTL)
        return found

    async def post(self, req: HttpRequest) -> HttpResponse:
        headers = dict(req.headers)
        body = bytes(req.body) if isinstance(req.body, msgspec.Raw) else b""
        message: Any = msgspec.json.decode(body) if body else None  # JSON: the trigger checked
        wrong = jsonrpc.malformed(message)
        if wrong:
            return _rpc_error(400, f"Invalid Request: {wrong}")
        sid = headers.get(SESSION_HEADER)
        if sid is not None:
            found = await self.session(sid)
            if found is None:
                return _rpc_error(404, "Session not found")
            if found.protocol_version:
                headers.setdefault(VERSION_HEADER, found.protocol_version)
        answer = await self._exchange(req, headers, body)
        if sid is None and answer.status == 200 and message.get("method") == "initialize":
            version = _negotiated(answer.body)
            if version:
                sid = secrets.token_hex(16)
                now = time.time()
                record = Session(
                    protocol_version=version, client=_client_of(message), started=now, touched=now
                )
                await (await self.sessions()).put(sid, record, ttl=SESSION_TTL)
                answer.headers[SESSION_HEADER] = sid
        return answer.response()

    async def end(self, req: HttpRequest) -> HttpResponse:
        """DELETE: the client ends its session; its id answers 404 from now on."""
        sid = req.headers.get(SESSION_HEADER)
        if not sid:  # no session named: none to end
            return _rpc_error(404, "Session not found")
        bucket = await self.sessions()
        found: Session | None = await bucket.get(sid, Session)
        if found is None:
            return _rpc_error(404, "Session not found")
        await bucket.delete(sid)
        return HttpResponse(status=200, body="", content_type="text/plain")

    async def _exchange(self, req: HttpRequest, headers: dict[str, str], body: bytes) -> _Answer:
        """One request through the SDK's transport, stateless and in JSON, as ASGI."""
        scope: MutableMapping[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": req.method,
            "scheme": "http",
            "path": req.path,
            "raw_path": req.path.encode(),
            "root_path": "",
            "query_string": urlencode(req.query).encode(),
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            "client": None,
            "server": None,
            "state": {"caller": of_http(headers, req.query)},
        }
        delivered = False

        async def receive() -> MutableMapping[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await anyio.sleep_forever()  # the client is still there until the reply is sent
            raise AssertionError("unreachable")

        answer = _Answer()

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer.status = int(message["status"])
                for k, v in message.get("headers") or []:
                    answer.headers[k.decode("latin-1").lower()] = v.decode("latin-1")
            elif message["type"] == "http.response.body":
                answer.body.extend(message.get("body") or b"")

        await (await self.started()).handle_request(scope, receive, send)
        return answer


_transport: Transport | None = None


def transport(client: Client) -> Transport:
    global _transport
    if _transport is None or _transport.client is not client or _transport.ended:
        _transport = Transport(client)  # a manager runs once: an ended one is replaced
    return _transport


async def post(req: HttpRequest, ctx: Context) -> HttpResponse:
    return await transport(ctx.client).post(req)


async def end(req: HttpRequest, ctx: Context) -> HttpResponse:
    return await transport(ctx.client).end(req)


async def close(client: Client) -> None:
    """The worker stops: the session manager's task ends (sessions stay in KV)."""
    global _transport
    if _transport is not None:
        await _transport.close()
        _transport = None
