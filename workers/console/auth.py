"""Who may use the console: loopback hosts and origins only, and the holder of the secret.

A browser proves the secret once (login form, or `?token=` in the URL) and then carries an
HttpOnly, SameSite=Strict cookie; API clients send `Authorization: Bearer <secret>`. The
cookie holds an HMAC of the secret, not the secret itself, so a leaked cookie jar does not
leak the REST bearer.
"""

from __future__ import annotations

import hashlib
import hmac
import html
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from triggers.http.secret import bearer_matches

COOKIE = "am_console"
ICON = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect width='32' height='32' rx='7' fill='%230b4fb3'/%3E%3Ccircle cx='11' cy='12' r='3.2' fill='%23fff'/%3E%3Ccircle cx='21' cy='10' r='2.4' fill='%23fff'/%3E%3Ccircle cx='20' cy='21' r='3.6' fill='%23fff'/%3E%3C/svg%3E"
"""The favicon, inline: no request for it (a login page asking for /favicon.ico got a 404)."""
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_OPEN_PATHS = frozenset({"/login", "/healthz"})


def session_token(secret: str) -> str:
    return hmac.new(secret.encode(), b"agentmemory-console-session", hashlib.sha256).hexdigest()


def is_loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK


def _host_is_loopback(host: str) -> bool:
    # Host checks stop DNS rebinding: a page on evil.example resolving to 127.0.0.1.
    return (urlsplit(f"//{host}").hostname or "") in LOOPBACK


def _error(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    body: dict[str, object] = {"code": code, "message": message}
    if field:
        body["field"] = field
    return JSONResponse({"error": body}, status_code=status)


def _cookie_header(value: str, max_age: int) -> str:
    return f"{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}"


def login_page(error: str = "", status: int = 200) -> HTMLResponse:
    note = f'<p class="err" id="login-error">{html.escape(error)}</p>' if error else ""
    return HTMLResponse(
        "<!doctype html><html><head><meta charset='utf-8'><title>agentmemory console · login"
        f"</title><link rel='icon' href=\"{ICON}\"><style>body{{font:15px system-ui;"
        "background:#111827;color:#e5e7eb;display:flex;justify-content:center;padding-top:15vh}"
        "form{background:#1f2937;padding:2em;border-radius:8px}label{font-weight:600}"
        "input{display:block;margin:.6em 0 1em;padding:.55em;width:22em;background:#0b1220;"
        "color:#e5e7eb;border:1px solid #475569;border-radius:5px;font:inherit}"
        "button{background:#60a5fa;color:#0b1220;border:0;border-radius:5px;padding:.55em 1.4em;"
        "font:inherit;font-weight:700;cursor:pointer}button:hover{background:#93c5fd}"
        "button:focus-visible,input:focus-visible{outline:3px solid #93c5fd;outline-offset:2px}"
        ".err{color:#f87171}</style></head><body><form method='post' action='/login'>"
        "<h2>agentmemory console</h2><label for='secret'>Secret (AGENTMEMORY_SECRET or "
        "~/.agentmemory/secret)</label><input id='secret' name='secret' type='password' "
        f"autofocus>{note}<button type='submit'>Sign in</button></form></body></html>",
        status_code=status,
    )


class ConsoleAuth:
    """Pure ASGI middleware so streamed responses (live tails) pass through untouched."""

    def __init__(self, app: ASGIApp, secret: str) -> None:
        if not secret:
            raise ValueError("the console needs a secret")
        self.app = app
        self.secret = secret
        self.token = session_token(secret)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        path: str = scope["path"]
        response = await self._check(scope, receive, headers, path)
        if response is None:
            await self.app(scope, receive, send)
        else:
            await response(scope, receive, send)

    async def _check(
        self, scope: Scope, receive: Receive, headers: dict[str, str], path: str
    ) -> Response | None:
        if not _host_is_loopback(headers.get("host", "")):
            return _error(403, "FORBIDDEN", "the console answers loopback hosts only", "Host")
        origin = headers.get("origin")
        if origin and not is_loopback_origin(origin):
            return _error(403, "FORBIDDEN", f"origin {origin} is not loopback", "Origin")
        if path == "/login":
            return await self._login(scope, receive)
        if path == "/logout":
            resp = RedirectResponse("/login", status_code=303)
            resp.headers["set-cookie"] = _cookie_header("", 0)
            return resp
        if path in _OPEN_PATHS:
            return None
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" in query:
            if not hmac.compare_digest(query["token"].encode(), self.secret.encode()):
                return login_page("that token is not the secret", 401)
            rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
            # "//host" would be read by the browser as another site: never redirect there.
            target = path if not path.startswith("//") else "/"
            resp = RedirectResponse(target + (f"?{rest}" if rest else ""), status_code=303)
            resp.headers["set-cookie"] = _cookie_header(self.token, 7 * 86400)
            return resp
        if bearer_matches(headers.get("authorization"), self.secret):
            return None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:
            jar = SimpleCookie()
        morsel = jar.get(COOKIE)
        if morsel is not None and hmac.compare_digest(morsel.value.encode(), self.token.encode()):
            return None
        if path.startswith("/api/"):
            return _error(
                401, "UNAUTHORIZED", "sign in, or send Authorization: Bearer <secret>", "secret"
            )
        return RedirectResponse("/login", status_code=303)

    async def _login(self, scope: Scope, receive: Receive) -> Response:
        if scope.get("method") != "POST":
            return login_page()
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body") or len(body) > 8192:
                break
        given = dict(parse_qsl(body.decode("utf-8", "replace"))).get("secret", "")
        if not given or not hmac.compare_digest(given.encode(), self.secret.encode()):
            return login_page("wrong secret", 401)
        resp = RedirectResponse("/", status_code=303)
        resp.headers["set-cookie"] = _cookie_header(self.token, 7 * 86400)
        return resp
