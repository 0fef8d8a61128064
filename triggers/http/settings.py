"""HTTP server settings, read from the trigger worker's environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from engine.paths import Instance
from triggers.http.secret import load_secret

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


@dataclass
class HttpSettings:
    host: str = "127.0.0.1"
    """Bind address (`AGENTMEMORY_REST_HOST`); loopback unless the operator says otherwise."""
    port: int = 3111
    """`AGENTMEMORY_REST_PORT`, else the instance's REST port."""
    secret: str = ""
    """Bearer secret: `AGENTMEMORY_SECRET`, else `~/.agentmemory/secret`."""
    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    """`VIEWER_ALLOWED_ORIGINS`, comma separated; loopback origins are always allowed."""
    openapi_paths: tuple[str, ...] = ("/openapi.json",)
    """`HTTP_OPENAPI_PATHS`, comma separated: where the OpenAPI document is served."""
    title: str = "agentmemory"

    @classmethod
    def from_env(cls) -> HttpSettings:
        env = os.environ
        port = env.get("AGENTMEMORY_REST_PORT")
        origins = {o.strip().rstrip("/") for o in env.get("VIEWER_ALLOWED_ORIGINS", "").split(",")}
        paths = [p.strip() for p in env.get("HTTP_OPENAPI_PATHS", "/openapi.json").split(",")]
        return cls(
            host=env.get("AGENTMEMORY_REST_HOST", "127.0.0.1"),
            port=int(port) if port else Instance.resolve().ports.rest,
            secret=load_secret(),
            allowed_origins=frozenset(o for o in origins if o),
            openapi_paths=tuple(p for p in paths if p),
            title=env.get("HTTP_OPENAPI_TITLE", "agentmemory"),
        )

    def origin_allowed(self, origin: str) -> bool:
        if origin.rstrip("/") in self.allowed_origins:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK_HOSTS
