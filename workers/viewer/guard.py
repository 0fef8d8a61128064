"""Who may use the viewer, and what a page may load.

The viewer answers loopback only, lets in only its owner's browser (workers/viewer/auth.py)
and forwards the REST secret itself. So it must not be driven by anyone else's page either: a Host that is not a loopback name is
refused (DNS rebinding: evil.example resolving to 127.0.0.1), and so is an Origin that is
not the viewer's own (a page on another site or another local port posting to it, or
opening its live socket). Every response carries a Content-Security-Policy with a nonce
made for that response: only the page's own nonce-tagged module runs (and what it
imports), no inline script or handler, and the page talks to its own origin alone.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
NONCE_KEY = "csp_nonce"


def loopback_host(host: str) -> str | None:
    """`host` rebuilt from its parts when it names a loopback address (with a valid port,
    if any), else None: what goes into the policy is never the raw header."""
    try:
        parts = urlsplit(f"//{host}")
        name, port = parts.hostname or "", parts.port
    except ValueError:
        return None
    if name not in LOOPBACK_NAMES:
        return None
    name = f"[{name}]" if ":" in name else name
    return f"{name}:{port}" if port else name


def policy(nonce: str, host: str) -> str:
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'nonce-{nonce}' 'strict-dynamic'",
            f"style-src 'self' 'nonce-{nonce}'",
            "img-src 'self' data:",
            "font-src 'self'",
            f"connect-src 'self' ws://{host}",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
            "object-src 'none'",
        ]
    )


def _refusal(status: int, message: str, field: str) -> tuple[Message, Message]:
    body = msgspec.json.encode({"error": {"code": "FORBIDDEN", "message": message, "field": field}})
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    return start, {"type": "http.response.body", "body": body}


class ViewerGuard:
    """Pure ASGI middleware, so the live socket and streamed bodies pass untouched."""

    def __init__(self, app: ASGIApp, origins: frozenset[str]) -> None:
        self.app = app
        self.origins = origins

    def _problem(self, headers: dict[str, str]) -> tuple[str, str] | None:
        host = headers.get("host", "")
        if loopback_host(host) is None:
            return f"the viewer answers loopback hosts only, not {host[:80]!r}", "Host"
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/") not in self.origins:
            return f"origin {origin[:80]} is not the viewer's own", "Origin"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        problem = self._problem(headers)
        if problem is not None:
            message, field = problem
            if scope["type"] == "websocket":
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
                return
            start, body = _refusal(403, message, field)
            await send(start)
            await send(body)
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        nonce = secrets.token_urlsafe(18)
        scope.setdefault("state", {})[NONCE_KEY] = nonce
        csp = policy(nonce, loopback_host(headers["host"]) or "127.0.0.1").encode()

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [
                    (b"content-security-policy", csp),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cross-origin-opener-policy", b"same-origin"),
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
