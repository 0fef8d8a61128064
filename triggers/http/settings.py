"""HTTP server settings, read from the trigger worker's environment."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from urllib.parse import urlsplit

from engine.paths import Instance, current_layout
from engine.settings import items, load, text
from triggers.http.secret import load_secret

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


@dataclass
class HttpSettings:
    """The REST server (the `http` trigger plug-in)."""

    host: str = text(
        "AGENTMEMORY_REST_HOST",
        "127.0.0.1",
        "The REST server's bind address: loopback unless the operator says otherwise.",
    )
    port: int = 3111
    """The layout's REST port (`AGENTMEMORY_REST_PORT`), else the instance's."""
    secret: str = ""
    """Bearer secret: `AGENTMEMORY_SECRET`, else `~/.agentmemory/secret` (secret.py)."""
    allowed_origins: tuple[str, ...] = items(
        "VIEWER_ALLOWED_ORIGINS",
        (),
        "Browser origins allowed besides loopback ones (the viewer's too).",
    )
    openapi_paths: tuple[str, ...] = items(
        "HTTP_OPENAPI_PATHS", ("/openapi.json",), "Where the OpenAPI document is served."
    )
    title: str = text("HTTP_OPENAPI_TITLE", "agentmemory", "The OpenAPI document's title.")

    @classmethod
    def from_env(cls) -> HttpSettings:
        s = load(cls)
        return dataclasses.replace(
            s,
            port=current_layout().given_port("rest") or Instance.resolve().ports.rest,
            secret=load_secret(),
            allowed_origins=tuple(o.rstrip("/") for o in s.allowed_origins),
        )

    def origin_allowed(self, origin: str) -> bool:
        if origin.rstrip("/") in self.allowed_origins:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK_HOSTS
