"""The viewer's login links and session cookies, as Jupyter does it: a one-time token in
the URL that `agentmemory viewer` opens (or the viewer logs at start) signs a browser in
with an HttpOnly, SameSite=Strict cookie; the token is then spent.

Both are signed with keys derived from the REST secret, never the secret itself: whoever
may read the secret (its owner, the CLI) can make a link without asking the viewer, and a
new secret signs every browser out. A token is `<expires>.<nonce>.<mac>`, a cookie
`<issued>.<nonce>.<mac>`: no state is needed to check either; the viewer remembers spent
nonces (workers/viewer/auth.py) so that a link works once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time

LOGIN_TTL = 10 * 60.0
"""What `agentmemory viewer` opens at once: ten minutes is plenty."""
START_TTL = 24 * 3600.0
"""The link the viewer logs at start (and `agentmemory start` shows): a day."""
MAX_TTL = START_TTL
"""No link lives longer: spent nonces are kept this long."""
SESSION_SECONDS = 30 * 86400
_LOGIN = b"agentmemory viewer login v1"
_SESSION = b"agentmemory viewer session v1"


class Invalid(ValueError):
    """Why a token or cookie does not sign anyone in (said to the person who tried)."""


def _key(secret: str, context: bytes) -> bytes:
    return hmac.new(secret.encode(), context, hashlib.sha256).digest()


def _mac(key: bytes, text: str) -> str:
    digest = hmac.new(key, text.encode(), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _sign(secret: str, context: bytes, stamp: int) -> str:
    body = f"{stamp}.{secrets.token_urlsafe(12)}"
    return f"{body}.{_mac(_key(secret, context), body)}"


def _open(secret: str, context: bytes, value: str) -> tuple[int, str]:
    parts = value.split(".")
    if len(parts) != 3 or not parts[0].isdigit():
        raise Invalid("this is not a viewer link")
    body = f"{parts[0]}.{parts[1]}"
    if not hmac.compare_digest(parts[2], _mac(_key(secret, context), body)):
        raise Invalid("this link is not for this viewer (or its secret changed since)")
    return int(parts[0]), parts[1]


def login_token(secret: str, ttl: float = LOGIN_TTL, now: float | None = None) -> str:
    expires = int((time.time() if now is None else now) + min(ttl, MAX_TTL))
    return _sign(secret, _LOGIN, expires)


def check_login(secret: str, token: str, now: float | None = None) -> tuple[str, float]:
    """(nonce, seconds left) of a valid token; Invalid says why not."""
    expires, nonce = _open(secret, _LOGIN, token)
    left = expires - (time.time() if now is None else now)
    if left <= 0:
        raise Invalid("this link has expired")
    return nonce, left


def session_cookie(secret: str, now: float | None = None) -> str:
    return _sign(secret, _SESSION, int(time.time() if now is None else now))


def check_session(secret: str, value: str, now: float | None = None) -> bool:
    try:
        issued, _ = _open(secret, _SESSION, value)
    except Invalid:
        return False
    age = (time.time() if now is None else now) - issued
    return 0 <= age < SESSION_SECONDS


def cookie_name(port: int) -> str:
    """Cookies are shared by every port of a host name (RFC 6265 8.5): the port in the
    name keeps two instances' viewers on one machine from replacing each other's."""
    return f"am_viewer_{port}"


def login_url(port: int, secret: str, ttl: float = LOGIN_TTL, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{port}/?token={login_token(secret, ttl)}"
