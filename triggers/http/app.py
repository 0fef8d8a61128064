"""The ASGI application of the http trigger: checks, then one function call per request.

Written against raw ASGI rather than starlette's Request/Response so that the hop in front
of the bus costs as little as possible; uvicorn (uvloop + httptools) serves it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import msgspec

from engine import Client, ErrorCode, FunctionError, HttpRequest, discover, tracing
from engine.protocol import HDR_COERCE, HDR_TRIGGER, MAX_JSON_DEPTH, maybe_too_deep, too_deep
from triggers.http.openapi import build_openapi
from triggers.http.routes import Route, RouteConfig, RouteTable
from triggers.http.secret import bearer_matches
from triggers.http.settings import HttpSettings

log = logging.getLogger("triggers.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_JSON = b"application/json"
_TOO_DEEP = object()
# The one error shape, for a refused bearer token too (upstream's bare {"error":
# "unauthorized"} is read by none of its clients).
_UNAUTHORIZED = FunctionError(
    "UNAUTHORIZED",
    "missing or wrong bearer token: send `Authorization: Bearer <secret>`",
    field="authorization",
    status=401,
).encode()
# A 401 names its scheme (RFC 9110): an MCP client reads it to know a bearer token is wanted.
_CHALLENGE = (b"www-authenticate", b'Bearer realm="agentmemory"')
_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class _Reply(msgspec.Struct, omit_defaults=True, kw_only=True):
    """engine.HttpResponse with the body kept raw: JSON passes through without re-encoding."""

    status: int = 200
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    body: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    content_type: str = "application/json"


class _Reject(Exception):
    def __init__(
        self, status: int, code: ErrorCode, message: str, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.error = FunctionError(code, message, field=field, status=status)


def error_body(err: FunctionError) -> bytes:
    return err.encode()


def _headless(send: Send) -> Send:
    """`send` for a HEAD request: the GET's status and headers, no body."""

    async def without_body(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return without_body


_HTTP_TRIGGER = {HDR_TRIGGER: "http"}
_HTTP_TRIGGER_COERCE = {HDR_TRIGGER: "http", HDR_COERCE: "strings"}


class HttpApp:
    def __init__(self, client: Client, table: RouteTable, settings: HttpSettings) -> None:
        self.client = client
        self.table = table
        self.settings = settings
        self._calls: set[asyncio.Task[Any]] = set()
        self._openapi: tuple[int, bytes] | None = None
        self._origins: dict[str, bool] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})

    async def drain(self, timeout: float) -> None:
        """Let calls whose clients already left finish (they are never cancelled)."""
        if self._calls:
            await asyncio.wait(set(self._calls), timeout=timeout)

    # ---- one request ------------------------------------------------------------------
    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method: str = scope["method"]
        if method == "HEAD":  # every GET route answers HEAD (a liveness probe's favourite)
            method, send = "GET", _headless(send)
        path: str = scope["path"]
        headers: dict[str, str] = {
            k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]
        }
        extra: list[tuple[bytes, bytes]] = []
        origin = headers.get("origin")
        if origin is not None:
            if not self._origin_ok(origin):
                await _send_error(
                    send, FunctionError("FORBIDDEN", f"origin {origin} is not allowed"), extra
                )
                return
            extra = [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"vary", b"Origin"),
            ]
            if method == "OPTIONS" and "access-control-request-method" in headers:
                await self._preflight(send, path, extra)
                return
        try:
            if method == "GET" and path in self.settings.openapi_paths:
                await _send(send, 200, await self._openapi_doc(), extra)
                return
            route, params, exists = self.table.match(method, path, headers.get("accept", ""))
            if route is None:
                if exists:
                    extra.append((b"allow", ", ".join(self.table.methods_for(path)).encode()))
                    raise _Reject(405, "METHOD_NOT_ALLOWED", f"{method} is not allowed on {path}")
                raise _Reject(404, "NOT_FOUND", f"no route for {method} {path}")
            auth = headers.pop("authorization", None)
            if route.requires_bearer and not bearer_matches(auth, self.settings.secret):
                await _send(send, 401, _UNAUTHORIZED, [*extra, _CHALLENGE])
                return
            body = await _read_body(route, headers, receive)
            payload, coerce = self._payload(route, method, path, params, scope, headers, body)
        except _Reject as rej:
            await _send_error(send, rej.error, extra)
            return
        await self._call(route, payload, coerce, send, extra, headers, method, path)

    def _request_object(
        self,
        route: Route,
        params: dict[str, str],
        scope: Scope,
        headers: dict[str, str],
        raw: msgspec.Raw | msgspec.UnsetType,
        decoded: Any,
    ) -> tuple[Any, bool]:
        """The request object of a "body" route, and whether it holds strings to coerce.

        The common case (a JSON body, nothing to merge) passes the body through as bytes;
        only a merge decodes it."""
        cfg = route.config
        source = cfg.source
        mapped = [(f, headers[h]) for h, f in cfg.headers.items() if headers.get(h)]
        if source == "body" and not params and not mapped:
            return (raw if isinstance(raw, msgspec.Raw) else b"{}"), False
        obj: dict[str, Any] = {}
        coerce = bool(params)
        if source in ("query", "merge"):
            qs: bytes = scope.get("query_string", b"")
            if qs:
                obj.update(parse_qsl(qs.decode("latin-1"), keep_blank_values=True))
                coerce = True
        if source in ("body", "merge") and isinstance(raw, msgspec.Raw):
            if not isinstance(decoded, dict):
                raise _Reject(400, "BAD_REQUEST", "the JSON body must be an object", "body")
            obj.update(decoded)
        obj.update(params)
        for name, value in mapped:
            if obj.get(name) in (None, ""):
                obj[name] = value
        return msgspec.Raw(_encoder.encode(obj)), coerce

    def _payload(
        self,
        route: Route,
        method: str,
        path: str,
        params: dict[str, str],
        scope: Scope,
        headers: dict[str, str],
        body: bytes,
    ) -> tuple[Any, bool]:
        cfg = route.config
        raw: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
        decoded: Any = None
        if body:
            ctype = headers.get("content-type", "").partition(";")[0].strip().lower()
            if method in WRITES and ctype not in cfg.content_types:
                raise _Reject(
                    415,
                    "UNSUPPORTED_MEDIA_TYPE",
                    f"Content-Type must be one of {', '.join(cfg.content_types)} (got {ctype or 'none'})",
                    "content-type",
                )
            if ctype.endswith("json") or not ctype:
                try:
                    decoded = _any_decoder.decode(body)
                except msgspec.DecodeError as exc:
                    raise _Reject(
                        400, "BAD_REQUEST", f"malformed JSON body: {exc}", "body"
                    ) from None
                except RecursionError:
                    decoded = _TOO_DEEP
                if decoded is _TOO_DEEP or (maybe_too_deep(body) and too_deep(decoded)):
                    raise _Reject(
                        400,
                        "BAD_REQUEST",
                        f"JSON body nested deeper than {MAX_JSON_DEPTH} levels",
                        "body",
                    )
                raw = msgspec.Raw(body)
            else:
                raw = msgspec.Raw(_encoder.encode(body.decode("utf-8", "replace")))
        if cfg.mode == "body":
            return self._request_object(route, params, scope, headers, raw, decoded)
        qs: bytes = scope.get("query_string", b"")
        query = dict(parse_qsl(qs.decode("latin-1"), keep_blank_values=True)) if qs else {}
        return HttpRequest(
            method=method, path=path, path_params=params, query=query, headers=headers, body=raw
        ), False

    async def _call(
        self,
        route: Route,
        payload: Any,
        coerce: bool,
        send: Send,
        extra: list[tuple[bytes, bytes]],
        headers: dict[str, str],
        method: str,
        path: str,
    ) -> None:
        cfg = route.config
        # "body" mode: the reply's JSON goes out as it came, decoded only to read a status.
        resp_type = bytes if cfg.mode == "body" else _Reply
        # The request's span: a child of the client's traceparent when it sent one.
        span = token = None
        if tracing.enabled():
            span = tracing.start(
                f"{method} {cfg.path}",
                tracing.SpanKind.SERVER,
                {"http.request.method": method, "http.route": cfg.path, "url.path": path},
                tracing.extract(headers),
            )
            token = tracing.attach(span)
        # Shielded: a client that hangs up (hooks exit after 500 ms) must not cancel the work.
        task = asyncio.ensure_future(
            self.client.call(
                route.function_id,
                payload,
                response=resp_type,
                timeout=cfg.timeout,
                headers=_HTTP_TRIGGER_COERCE if coerce else _HTTP_TRIGGER,
            )
        )
        if token is not None:
            tracing.detach(token)
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)
        try:
            reply = await asyncio.shield(task)
        except FunctionError as err:
            if span is not None:
                span.set_attribute("http.response.status_code", err.status)
                tracing.fail(span, err.code, err.message)
                span.end()
            await _send_error(send, err, extra)
            return
        except Exception as exc:
            log.exception("calling %s failed", route.function_id)
            if span is not None:
                tracing.fail(span, "INTERNAL", type(exc).__name__)
                span.end()
            await _send_error(
                send,
                FunctionError("INTERNAL", f"{route.function_id} failed: {type(exc).__name__}"),
                extra,
            )
            return
        if isinstance(reply, bytes):
            status = _status_of(cfg, reply)
        else:
            assert isinstance(reply, _Reply)
            status = reply.status
        if span is not None:
            span.set_attribute("http.response.status_code", status)
            span.end()
        if isinstance(reply, bytes):
            await _send(send, status, reply or b"null", extra)
            return
        hdrs = extra + [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers.items()
        ]
        if reply.status in (204, 304):
            await _send(send, reply.status, b"", hdrs, None)
        elif "json" in reply.content_type:
            await _send(
                send,
                reply.status,
                bytes(reply.body) if isinstance(reply.body, msgspec.Raw) else b"null",
                hdrs,
                reply.content_type.encode(),
            )
        else:
            text = (
                msgspec.json.decode(reply.body, type=str)
                if isinstance(reply.body, msgspec.Raw)
                else ""
            )
            await _send(send, reply.status, text.encode(), hdrs, reply.content_type.encode())

    async def _preflight(self, send: Send, path: str, extra: list[tuple[bytes, bytes]]) -> None:
        methods = self.table.methods_for(path) or ["GET", "POST", "PUT", "PATCH", "DELETE"]
        extra = [
            *extra,
            (b"access-control-allow-methods", ", ".join([*methods, "OPTIONS"]).encode()),
            (b"access-control-allow-headers", b"authorization, content-type"),
            (b"access-control-max-age", b"600"),
        ]
        await _send(send, 204, b"", extra, None)

    def _origin_ok(self, origin: str) -> bool:
        ok = self._origins.get(origin)
        if ok is None:
            ok = self.settings.origin_allowed(origin)
            if len(self._origins) < 1024:
                self._origins[origin] = ok
        return ok

    async def _openapi_doc(self) -> bytes:
        if self._openapi is None or self._openapi[0] != self.table.version:
            routes = self.table.routes()
            functions = {f.id: f for f in await discover(self.client)}
            doc = build_openapi(routes, self.settings.title, functions)
            self._openapi = (self.table.version, _encoder.encode(doc))
        return self._openapi[1]


def _status_of(cfg: RouteConfig, reply: bytes) -> int:
    if not cfg.status_field:
        return int(cfg.status)
    try:
        value = _any_decoder.decode(reply).get(cfg.status_field)
    except (msgspec.DecodeError, AttributeError):
        return int(cfg.status)
    return int(cfg.status_by.get(str(value), cfg.status))


async def _read_body(route: Route, headers: dict[str, str], receive: Receive) -> bytes:
    limit = route.config.max_body
    declared = headers.get("content-length")
    if declared is not None:
        try:
            too_big = int(declared) > limit
        except ValueError:
            raise _Reject(
                400, "BAD_REQUEST", "Content-Length is not a number", "content-length"
            ) from None
        if too_big:
            raise _Reject(413, "TOO_LARGE", f"request body exceeds {limit} bytes", "body")
    chunks: list[bytes] = []
    size = 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            break
        chunk: bytes = msg.get("body", b"")
        size += len(chunk)
        if size > limit:  # chunked uploads declare no length
            raise _Reject(413, "TOO_LARGE", f"request body exceeds {limit} bytes", "body")
        chunks.append(chunk)
        if not msg.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _send_error(send: Send, err: FunctionError, extra: list[tuple[bytes, bytes]]) -> None:
    await _send(send, err.status, error_body(err), extra)


async def _send(
    send: Send,
    status: int,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    content_type: bytes | None = _JSON,
) -> None:
    hdrs = [*headers, (b"content-length", str(len(body)).encode())]
    if content_type is not None:
        hdrs.append((b"content-type", content_type))
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body})
