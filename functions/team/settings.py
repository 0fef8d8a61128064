"""Team memory's settings, under upstream's names (TEAM_ID, USER_ID, TEAM_MODE), and the
mesh's own."""

from __future__ import annotations

from dataclasses import dataclass

from engine.settings import choice, flag, items, load, text


@dataclass(frozen=True)
class TeamSettings:
    """Team memory across machines (docs/TEAM.md)."""

    team: str = text("TEAM_ID", "default", "The team this instance shares with.")
    user: str = text(
        ("USER_ID", "AGENTMEMORY_AGENT_ID"),
        "",
        "Who shares (128 characters).",
        shown="the login name",
    )
    mode: str = choice(
        "TEAM_MODE",
        "private",
        ("private", "shared"),
        "private: records are shared one by one (team/share); shared: every new memory is.",
    )
    peers: tuple[str, ...] = items(
        "AGENTMEMORY_MESH_PEERS",
        (),
        "Peers' JetStream domains to follow (more are added by POST mesh/peers).",
    )
    allow_private: bool = flag(
        "AGENTMEMORY_MESH_ALLOW_PRIVATE",
        False,
        "Let a mesh peer's URL name a loopback or private address (a LAN).",
    )
    secret: str = text(
        "AGENTMEMORY_SECRET",
        "",
        "The bearer secret sent to mesh peers over HTTP (the REST secret they share).",
    )


def team_settings() -> TeamSettings:
    return load(TeamSettings)
