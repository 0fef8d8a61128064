"""Viewer settings, read from the viewer worker's environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from engine.paths import Instance
from triggers.http.secret import load_secret, secret_file

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class ViewerSettings:
    port: int = 3113
    """`AGENTMEMORY_VIEWER_PORT`, else the instance's viewer port."""
    rest_port: int = 3111
    """`AGENTMEMORY_REST_PORT`: where the viewer's REST calls go, with the secret."""
    secret: str = ""
    """The REST bearer secret (`AGENTMEMORY_SECRET`, else `~/.agentmemory/secret`): the
    viewer adds it to the calls it forwards (the page never sees it) and signs its login
    links and cookies with keys derived from it."""
    extra_origins: frozenset[str] = field(default_factory=frozenset)
    """`VIEWER_ALLOWED_ORIGINS`, comma separated: origins besides the viewer's own."""
    health_every: float = 15.0
    """`VIEWER_HEALTH_SECONDS`: how often the viewer process checks status, to push a change
    of health to the open pages (the pages themselves never poll)."""
    host: str = "127.0.0.1"
    """Always loopback."""
    auth: str = "token"
    """`VIEWER_AUTH`: `token` (default): a browser signs in with the one-time link
    `agentmemory viewer` opens and keeps a cookie; `none`: every local user and process that
    reaches the port acts with the REST secret (only for a trusted single-user machine)."""
    instance: int = 0
    """The instance number, for the commands the viewer's pages print."""

    @classmethod
    def from_env(cls) -> ViewerSettings:
        env = os.environ
        ports = Instance.resolve().ports
        origins = {o.strip().rstrip("/") for o in env.get("VIEWER_ALLOWED_ORIGINS", "").split(",")}
        auth = (env.get("VIEWER_AUTH") or "token").strip().lower()
        if auth not in ("token", "none"):
            raise ValueError(f"VIEWER_AUTH must be token or none, not {auth!r}")
        return cls(
            port=int(env.get("AGENTMEMORY_VIEWER_PORT") or ports.viewer),
            rest_port=int(env.get("AGENTMEMORY_REST_PORT") or ports.rest),
            secret=load_secret(),
            extra_origins=frozenset(o for o in origins if o),
            health_every=float(env.get("VIEWER_HEALTH_SECONDS") or 15.0),
            auth=auth,
            instance=Instance.resolve().number,
        )

    @property
    def secret_hint(self) -> str:
        """How a shell on this machine gets the REST secret, for the commands pages show."""
        if os.environ.get("AGENTMEMORY_SECRET", "").strip():
            return "$AGENTMEMORY_SECRET"
        return f"$(cat {secret_file()})"

    @property
    def origins(self) -> frozenset[str]:
        """The viewer's own origins (each loopback name at its port) and the extra ones."""
        own = {f"http://{h}:{self.port}" for h in LOOPBACK}
        return frozenset(own | self.extra_origins)
