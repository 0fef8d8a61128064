"""Who this instance is in its team: upstream's settings (TEAM_ID, USER_ID, TEAM_MODE) and
the engine's JetStream domain (ENGINE_NATS_DOMAIN, from `nats.domain`), which names it
among the linked instances."""

from __future__ import annotations

import getpass
import re

import msgspec

from engine.settings import worker_identity
from functions.team.settings import team_settings

LOCAL = "local"
"""The origin of an instance without a domain: it shares within itself only."""
NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class TeamConfig(msgspec.Struct, frozen=True, kw_only=True):
    team: str
    user: str
    mode: str
    """private: records are shared one by one (`team/share`); shared: every new memory is."""
    origin: str
    """This instance's JetStream domain (its name among linked instances), or `local`."""
    peers: tuple[str, ...]
    """Peers' domains named in AGENTMEMORY_MESH_PEERS (more are added by `POST mesh/peers`)."""

    @property
    def meshed(self) -> bool:
        return self.origin != LOCAL

    @classmethod
    def from_env(cls) -> TeamConfig:
        s = team_settings()
        origin = worker_identity().domain or LOCAL
        return cls(
            team=s.team,
            user=(s.user or _login())[:128] or "me",
            mode=s.mode,
            origin=origin,
            peers=tuple(p for p in dict.fromkeys(s.peers) if NAME.match(p) and p != origin),
        )


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return "me"
