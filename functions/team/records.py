"""What the team keeps: the TEAM stream's events, and the `mem_team` bucket (shared items,
forget tombstones, version chains, registered peers).

`mem_team` keys:
- `item.<key>`: a TeamItem, one per shared record (this instance's and its peers').
- `gone.<key>`: a Tombstone: the record was forgotten by the team; it never comes back.
- `chain.<key of the root>`: a Chain, the versions of one shared memory.
- `peer.<domain>`: a Peer registered with `POST mesh/peers`.
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


class Chain(msgspec.Struct, omit_defaults=True, kw_only=True):
    """The versions of one shared memory, from every instance. The head, the one live
    version, is the greatest by (version, created_at, id) over all versions ever seen,
    forgotten ones included: every instance that has seen the same versions picks the same
    head, whatever the order they came in (a forgotten head leaves no live version)."""

    root: str
    versions: dict[str, Version] = msgspec.field(default_factory=dict)

    def head(self) -> str | None:
        if not self.versions:
            return None
        best = max(self.versions.items(), key=lambda kv: (kv[1].version, kv[1].created_at, kv[0]))
        return None if best[1].gone else best[0]


class Peer(msgspec.Struct, omit_defaults=True, kw_only=True):
    name: str
    """Its JetStream domain."""
    url: str = ""
    """Where its REST API is, for people (the mesh itself goes over the leaf link)."""
    registered_at: str = ""


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


TeamEvent = Shared | Forgotten
