"""What the team keeps: the TEAM stream's events, and the `mem_team` bucket (shared items,
forget tombstones, version chains, registered peers).

`mem_team` keys:
- `item.<key>`: a TeamItem, one per shared record (this instance's and its peers').
- `gone.<key>`: a Tombstone: the record was forgotten by the team; it never comes back.
- `chain.<key of the root>`: a Chain, the versions of one shared memory.
- `peer.<domain>`: a Peer registered with `POST mesh/peers`.
- `link.<domain>`: a Link, what the round-trip probe last saw of that peer;
  `probe`: this instance's latest Probe.
(`<key>` is `kv_key(record id)`.)
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

import msgspec

from functions.kernel.records import Memory, Observation

TEAM_BUCKET = "mem_team"
TEAM_STREAM = "TEAM"
LOG_SUBJECT = "team.log"
"""`team.log.<origin>.<record token>`: the origin's latest event about that record (the
stream keeps one message per subject, so a forget replaces the share it undoes)."""

_TOKEN = re.compile(r"^[-_=A-Za-z0-9]{1,128}$")


def log_subject(origin: str, record_id: str) -> str:
    token = (
        record_id
        if _TOKEN.match(record_id)
        else "h" + hashlib.sha256(record_id.encode()).hexdigest()[:40]
    )
    return f"{LOG_SUBJECT}.{origin}.{token}"


def origin_of(subject: str) -> str:
    parts = subject.split(".")
    return parts[2] if len(parts) > 3 and subject.startswith(LOG_SUBJECT + ".") else ""


class TeamItem(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A record shared with a team, as every member holds it."""

    id: str
    """The record's id (one item per record, however often it is shared)."""
    kind: Literal["memory", "observation"]
    item_type: str
    """What the sharer called it: memory, pattern or observation."""
    team: str
    origin: str
    """The instance that shared it."""
    shared_by: str
    shared_at: str
    project: str = ""
    root: str = ""
    """Memories: the id of the first version, which names the version chain."""
    memory: Memory | None = None
    observation: Observation | None = None


class Tombstone(msgspec.Struct, omit_defaults=True, kw_only=True):
    id: str
    by: str
    """The instance whose forget it was."""
    at: str
    kind: str = ""


class Version(msgspec.Struct, array_like=True, frozen=True):
    version: int
    created_at: str
    gone: bool = False
    parent: str = ""
    """The version it was made from (its `supersedes`); empty for the first, and for
    versions noted before parents were kept (a chain with such a version falls back to the
    greatest version as head, with no conflict detection)."""


class Resolution(msgspec.Struct, omit_defaults=True, kw_only=True, frozen=True):
    """A person chose `head` over the other versions that competed with it (`over`). Of two
    resolutions of one chain the later (at, origin) holds, on every instance."""

    head: str
    over: list[str]
    at: str
    origin: str
    by: str = ""


class Chain(msgspec.Struct, omit_defaults=True, kw_only=True):
    """The versions of one shared memory, from every instance.

    Its leaves are the live versions no other version was made from (and no resolution
    put aside): one leaf is the head; two or more are a conflict (two machines edited the
    same version while apart), kept as they are and flagged until a person resolves it.
    Meanwhile the head is the resolution's choice when it is a leaf, else the greatest
    leaf by (version, created_at, id): every instance that has seen the same versions
    picks the same head, whatever the order they came in. A forgotten version is no leaf,
    and a chain whose newest versions were all forgotten has no live version."""

    root: str
    versions: dict[str, Version] = msgspec.field(default_factory=dict)
    resolution: Resolution | None = None

    def _legacy(self) -> bool:
        return any(not v.parent and i != self.root for i, v in self.versions.items())

    def leaves(self) -> list[str]:
        parents = {v.parent for v in self.versions.values() if v.parent}
        aside = set(self.resolution.over) if self.resolution else set()
        return sorted(
            i
            for i, v in self.versions.items()
            if not v.gone and i not in parents and i not in aside
        )

    def _rank(self, vid: str) -> tuple[int, str, str]:
        v = self.versions[vid]
        return (v.version, v.created_at, vid)

    def head(self) -> str | None:
        if not self.versions:
            return None
        if self._legacy():
            best = max(self.versions, key=self._rank)
            return None if self.versions[best].gone else best
        leaves = self.leaves()
        if not leaves:
            return None
        if self.resolution is not None and self.resolution.head in leaves:
            return self.resolution.head
        return max(leaves, key=self._rank)

    def conflict(self) -> list[str]:
        """The competing versions (empty: none)."""
        if self._legacy():
            return []
        leaves = self.leaves()
        return leaves if len(leaves) > 1 else []

    def lineage(self, vid: str) -> list[str]:
        """`vid` and the versions it was made from, newest first (within this chain)."""
        out: list[str] = []
        cur: str = vid
        while cur in self.versions and cur not in out:
            out.append(cur)
            cur = self.versions[cur].parent
        return out

    def alternates(self, head: str) -> list[str]:
        """The live versions off the head's own line: the branches it won over."""
        line = set(self.lineage(head))
        return sorted(i for i, v in self.versions.items() if not v.gone and i not in line)


class Peer(msgspec.Struct, omit_defaults=True, kw_only=True):
    name: str
    """Its JetStream domain (a leaf peer), or the name it was registered by (http)."""
    url: str = ""
    """Where its REST API is: for people with a leaf peer; what a sync calls with http."""
    registered_at: str = ""
    kind: Literal["leaf", "http"] = "leaf"
    """leaf: its TEAM stream is sourced over the leaf link; http: upstream's mesh, push and
    pull over REST (functions/team/http_peer.py), for an instance without a domain."""
    status: Literal["", "connected", "error"] = ""
    """http: how the last sync went ("": none yet)."""
    last_sync_at: str = ""
    """http: when a sync last succeeded (the next one exchanges what changed since)."""
    error: str = ""
    """http: what the last failed sync met."""


# ---- the TEAM stream's events -----------------------------------------------------
class Shared(msgspec.Struct, tag="shared", kw_only=True):
    item: TeamItem


class Forgotten(msgspec.Struct, tag="forgotten", kw_only=True):
    id: str
    kind: str
    team: str
    origin: str
    """The instance that forgot it."""
    at: str
    root: str = ""


class Probe(msgspec.Struct, tag="probe", kw_only=True):
    """A round-trip probe: each peer that gets it answers with an Echo on its own log, so
    an Echo coming back proves both directions carry the team's events."""

    id: str
    origin: str
    at: str


class Echo(msgspec.Struct, tag="echo", kw_only=True):
    probe: str
    to: str
    """The instance whose probe this answers."""
    origin: str
    at: str


class Resolved(msgspec.Struct, tag="resolved", kw_only=True):
    """A conflict of a shared memory's chain resolved on `origin`."""

    root: str
    team: str
    resolution: Resolution


class Link(msgspec.Struct, omit_defaults=True, kw_only=True):
    """What the probes say of one peer: its latest probe that reached us, and its latest
    echo of one of ours (times are this instance's clock, epoch seconds)."""

    heard: str = ""
    heard_at: float = 0.0
    echoed: str = ""
    echoed_at: float = 0.0


TeamEvent = Shared | Forgotten | Probe | Echo | Resolved
