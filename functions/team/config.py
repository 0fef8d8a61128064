"""Who this instance is in its team: upstream's settings (TEAM_ID, USER_ID, TEAM_MODE) and
the engine's JetStream domain (ENGINE_NATS_DOMAIN, from `nats.domain`), which names it
among the linked instances."""

from __future__ import annotations

import getpass
import os
import re

import msgspec

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
        env = os.environ
        user = env.get("USER_ID") or env.get("AGENTMEMORY_AGENT_ID") or _login()
        peers = [p.strip() for p in env.get("AGENTMEMORY_MESH_PEERS", "").split(",")]
        origin = env.get("ENGINE_NATS_DOMAIN", "").strip() or LOCAL
        return cls(
            team=env.get("TEAM_ID", "").strip() or "default",
            user=user.strip()[:128] or "me",
            mode="shared" if env.get("TEAM_MODE", "").strip() == "shared" else "private",
            origin=origin,
            peers=tuple(p for p in dict.fromkeys(peers) if p and NAME.match(p) and p != origin),
        )


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return "me"
