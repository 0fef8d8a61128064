"""The bearer secret that protects the REST surface (and the console, which reuses this).

`AGENTMEMORY_SECRET` wins; otherwise `~/.agentmemory/secret` is read, or generated once with
mode 0600 so that only its owner can read it.
"""

from __future__ import annotations

import fcntl
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from engine.settings import load, text

ENV_SECRET = "AGENTMEMORY_SECRET"


@dataclass(frozen=True)
class SecretSettings:
    """The bearer secret of the REST surface (and the console, the viewer, the MCP server
    and the CLI, which reuse it)."""

    secret: str = text(
        ENV_SECRET,
        "",
        "The REST bearer secret.",
        shown="~/.agentmemory/secret (generated once, 0600)",
    )


def given_secret() -> str:
    """AGENTMEMORY_SECRET, or "" when the secret file is meant."""
    return load(SecretSettings).secret


def secret_file() -> Path:
    return Path.home() / ".agentmemory" / "secret"


def load_secret(path: Path | None = None) -> str:
    given = given_secret()
    if given:
        return given
    path = path or secret_file()
    text = _read(path)
    if text:
        return text
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # One process at a time makes it (the memory replicas start together): under the lock
    # the file is read again, and a new secret is written whole, then moved into place. A
    # reader never sees a half-written or empty secret (an empty one made every request a
    # 401 on the replica that read it).
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        text = _read(path)
        if text:
            return text
        value = secrets.token_urlsafe(32)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(value + "\n")
        os.replace(tmp, path)
        return value


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def bearer_matches(header: str | None, secret: str) -> bool:
    """Constant-time check of an `Authorization: Bearer <secret>` header value."""
    if not header or not secret:
        return False
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token.strip().encode(), secret.encode())
