"""The bearer secret that protects the REST surface (and the console, which reuses this).

`AGENTMEMORY_SECRET` wins; otherwise `~/.agentmemory/secret` is read, or generated once with
mode 0600 so that only its owner can read it.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

ENV_SECRET = "AGENTMEMORY_SECRET"


def secret_file() -> Path:
    return Path.home() / ".agentmemory" / "secret"


def load_secret(path: Path | None = None) -> str:
    env = os.environ.get(ENV_SECRET, "").strip()
    if env:
        return env
    path = path or secret_file()
    if path.exists():
        text = path.read_text().strip()
        if text:
            return text
    value = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # O_EXCL: two processes starting together must not each write a different secret.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return value


def bearer_matches(header: str | None, secret: str) -> bool:
    """Constant-time check of an `Authorization: Bearer <secret>` header value."""
    if not header or not secret:
        return False
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token.strip().encode(), secret.encode())
