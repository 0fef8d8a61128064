"""Viewer settings, read from the viewer worker's environment."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from engine.paths import Instance, current_layout
from engine.settings import choice, duration, load
from triggers.http.secret import given_secret, load_secret, secret_file
from triggers.http.settings import HttpSettings

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True)
class ViewerSettings:
    """The viewer: what agents remembered, live, on a loopback port."""

    port: int = 3113
    """The layout's viewer port (`AGENTMEMORY_VIEWER_PORT`), else the instance's."""
    rest_port: int = 3111
    """The layout's REST port: where the viewer's REST calls go, with the secret."""
    secret: str = ""
    """The REST bearer secret (`AGENTMEMORY_SECRET`, else `~/.agentmemory/secret`): the
    viewer adds it to the calls it forwards (the page never sees it) and signs its login
    links and cookies with keys derived from it."""
    extra_origins: frozenset[str] = field(default_factory=frozenset)
    """`VIEWER_ALLOWED_ORIGINS` (triggers/http/settings.py): origins besides the viewer's
    own."""
    health_every: float = duration(
        "VIEWER_HEALTH_SECONDS",
        15.0,
        "How often the viewer checks status, to push a change of health to open pages.",
    )
    host: str = "127.0.0.1"
    """Always loopback."""
    auth: str = choice(
        "VIEWER_AUTH",
        "token",
        ("token", "none"),
        "token: a browser signs in with the one-time link `agentmemory viewer` opens; none: "
        "every local user and process that reaches the port acts with the REST secret.",
    )
    instance: int = 0
    """The instance number, for the commands the viewer's pages print."""

    @classmethod
    def from_env(cls) -> ViewerSettings:
        inst = Instance.resolve()
        lay = current_layout()
        origins = load(HttpSettings).allowed_origins
        return dataclasses.replace(
            load(cls),
            port=lay.given_port("viewer") or inst.ports.viewer,
            rest_port=lay.given_port("rest") or inst.ports.rest,
            secret=load_secret(),
            extra_origins=frozenset(o.rstrip("/") for o in origins),
            instance=inst.number,
        )

    @property
    def secret_hint(self) -> str:
        """How a shell on this machine gets the REST secret, for the commands pages show."""
        if given_secret():
            return "$AGENTMEMORY_SECRET"
        return f"$(cat {secret_file()})"

    @property
    def origins(self) -> frozenset[str]:
        """The viewer's own origins (each loopback name at its port) and the extra ones."""
        own = {f"http://{h}:{self.port}" for h in LOOPBACK}
        return frozenset(own | self.extra_origins)
