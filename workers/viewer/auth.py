"""Only the viewer's owner gets in, with nothing to set up (workers/viewer/tokens.py).

A request carrying `?token=` (the link `agentmemory viewer` opens) is checked, its nonce
spent (a KV create in `mem_viewer`: atomic across restarts, so a link works once), and
answered with a redirect that drops the token and sets the session cookie. After that the
cookie (or `Authorization: Bearer <REST secret>`, for scripts) lets a request through; one
without gets 401: the page says how to open the viewer, `/agentmemory/*` gets a JSON
error and `/live` an HTTP 401 on its handshake. Static files are open (they hold no data).
`VIEWER_AUTH=none` turns this off for a trusted single-user machine.
"""

from __future__ import annotations

import html
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine import Bucket, Client
from triggers.http.secret import bearer_matches
from workers.viewer import tokens

VIEWER_BUCKET = "mem_viewer"
"""Spent login nonces (`login.<nonce>`), kept as long as a link can live."""
_OPEN = ("/static/", "/healthz", "/favicon.svg")


class Spent:
    """The login nonces already used."""

    def __init__(self, state: Bucket) -> None:
        self.state = state

    @classmethod
    async def open(cls, client: Client) -> Spent:
        return cls(await client.bucket(VIEWER_BUCKET, ttl=tokens.MAX_TTL + 60))

    async def spend(self, nonce: str) -> bool:
        """True the first time a nonce is spent."""
        return await self.state.create("login." + nonce, 1) is not None


def how_to_open(instance: int, problem: str = "") -> bytes:
    """The page a browser without the cookie gets (no script: nothing runs before login)."""
    cmd = "agentmemory viewer" + (f" --instance {instance}" if instance else "")
    note = f'<p class="err" id="login-problem">{html.escape(problem)}.</p>' if problem else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Open the viewer · agentmemory</title>
<link rel="stylesheet" href="/static/app.css"><link rel="icon" href="/favicon.svg" type="image/svg+xml">
</head><body><main id="main" class="login">
<h1>Open the viewer from its link</h1>{note}
<p>The viewer shows what your agents remembered, so it opens only for the person who runs
it. In a terminal on this machine, run:</p>
<pre class="cmd"><code id="login-command">{html.escape(cmd)}</code></pre>
<p>It opens this page with a one-time link that signs this browser in (for 30 days). The
link the engine printed when it started works once too.</p>
<p class="muted">A trusted single-user machine can turn the login off with
<code>VIEWER_AUTH=none</code> in <code>~/.agentmemory/.env</code>.</p>
</main></body></html>""".encode()


def _json(message: str) -> bytes:
    return msgspec.json.encode(
        {"error": {"code": "UNAUTHORIZED", "message": message, "field": "cookie"}}
    )


class ViewerAuth:
    """Pure ASGI middleware (inside ViewerGuard), so the live socket passes untouched."""

    def __init__(
        self, app: ASGIApp, secret: str, port: int, instance: int, spent: Spent | None
    ) -> None:
        self.app = app
        self.secret = secret
        self.cookie = tokens.cookie_name(port)
        self.instance = instance
        self.spent = spent
        """None: the login is off (VIEWER_AUTH=none)."""

    def _signed_in(self, headers: dict[str, str]) -> bool:
        if bearer_matches(headers.get("authorization"), self.secret):
            return True
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header signs nobody in
            return False
        morsel = jar.get(self.cookie)
        return morsel is not None and tokens.check_session(self.secret, morsel.value)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            self.spent is None
            or scope["type"] not in ("http", "websocket")
            or path.startswith(_OPEN)
        ):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        token = next((v for k, v in query if k == "token"), None)
        if token is not None and scope["type"] == "http":
            await self._login(scope, send, token, [(k, v) for k, v in query if k != "token"])
            return
        if self._signed_in(headers):
            await self.app(scope, receive, send)
            return
        message = "open the viewer with `agentmemory viewer`: it signs this browser in"
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            if "websocket.http.response" in scope.get("extensions", {}):
                await _send(
                    send, "websocket.http.response", 401, "application/json", _json(message)
                )
            else:
                await send({"type": "websocket.close", "code": 1008, "reason": message})
            return
        if path.startswith("/agentmemory/"):
            await _send(send, "http.response", 401, "application/json", _json(message))
        else:
            await _send(send, "http.response", 401, "text/html; charset=utf-8",
                        how_to_open(self.instance))  # fmt: skip

    async def _login(
        self, scope: Scope, send: Send, token: str, rest: list[tuple[str, str]]
    ) -> None:
        assert self.spent is not None
        try:
            nonce, _ = tokens.check_login(self.secret, token)
            if not await self.spent.spend(nonce):
                raise tokens.Invalid(
                    "this link was used already: a link signs one browser in, once"
                )
        except tokens.Invalid as why:
            page = how_to_open(self.instance, str(why))
            await _send(send, "http.response", 401, "text/html; charset=utf-8", page)
            return
        path = scope.get("path", "/")
        target = (path if not path.startswith("//") else "/") + (
            f"?{urlencode(rest)}" if rest else ""
        )
        cookie = (
            f"{self.cookie}={tokens.session_cookie(self.secret)}; Path=/; HttpOnly; "
            f"SameSite=Strict; Max-Age={tokens.SESSION_SECONDS}"
        )
        start: Message = {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", target.encode("latin-1")),
                (b"set-cookie", cookie.encode("latin-1")),
                (b"cache-control", b"no-store"),
                (b"content-length", b"0"),
            ],
        }
        await send(start)
        await send({"type": "http.response.body", "body": b""})


async def _send(send: Send, kind: str, status: int, content_type: str, body: bytes) -> None:
    await send(
        {
            "type": f"{kind}.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": f"{kind}.body", "body": body})
