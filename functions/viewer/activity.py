"""What the viewer's activity feed shows of a MEM_EVENTS event: one line per event, the same
whether it came in the snapshot, a page of older events, or live (so a page renders all
alike), labelled by one clock: when JetStream stored the event, the order the feed is in.
The record's own time (an agent's timestamp, an imported transcript's) is `happened`, when
it differs.

A removal names what it removed: the viewer keeps the titles of the records whose events it
read (an LRU), and a superseded memory is still stored; only a record forgotten long before
any event of it was read is shown by its id."""

from __future__ import annotations

from collections import OrderedDict
from datetime import UTC, datetime
from typing import Literal

import msgspec

from functions.kernel.clock import iso, parse
from functions.kernel.records import (
    MemEvent,
    Memory,
    MemoryAdded,
    ObservationAdded,
    QuarantineChanged,
    RecordsRemoved,
    SummaryAdded,
)
from functions.kernel.store import MemoryStore

DETAIL_MAX = 300
TITLES = 20_000
"""Records whose titles the viewer keeps, to name them when they are removed."""
SAME_TIME = 60.0
"""A record's own time within this many seconds of its arrival is not shown apart."""
_decoder = msgspec.json.Decoder(MemEvent)


class Removed(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    id: str
    title: str = ""
    kind: str = ""
    """memory, observation, summary, or "" when not known."""


class ActivityItem(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    seq: int
    """The event's MEM_EVENTS sequence: the feed's order."""
    kind: Literal["observation", "memory", "summary", "removed"]
    id: str
    """The record's id (the first one, for a removal)."""
    at: str
    """When memory took it in (JetStream stored the event): the feed's one clock."""
    title: str
    happened: str = ""
    """The record's own time (an agent's, an imported transcript's), when it differs."""
    type: str = ""
    """The observation's or memory's type."""
    session_id: str = ""
    project: str = ""
    agent_id: str = ""
    detail: str = ""
    ids: list[str] = msgspec.field(default_factory=list)
    """A removal: every id removed."""
    removed: list[Removed] = msgspec.field(default_factory=list)
    """A removal: what each removed record was."""
    action: str = ""
    """A removal: forget, auto-forget, superseded, team, restore... (see `title`)."""
    origin: str = ""
    version: int = 0
    """A memory: its version (1 for a first one)."""
    supersedes: str = ""
    """A memory: the version it replaced."""
    instance: str = ""
    """A shared record that came from a peer: its instance."""


def _cut(text: str) -> str:
    return text if len(text) <= DETAIL_MAX else text[: DETAIL_MAX - 1] + "…"


def _iso(epoch: float) -> str:
    return iso(datetime.fromtimestamp(epoch, UTC)) if epoch else ""


def _happened(own: str, at: float) -> str:
    when = parse(own) if own else None
    if when is None or not at or abs(when.timestamp() - at) < SAME_TIME:
        return ""
    return own


def removal_kind(ev: RecordsRemoved) -> tuple[str, str]:
    """(what kind of removal, how the feed says it)."""
    why = ev.reason.lower()
    if ev.action in ("forget", "governance-delete"):
        return "forget", "Forgotten"
    if why.startswith("superseded") or why == "evolved" or "edited" in why:
        return "superseded", "Replaced by a newer version"
    if ev.action == "team" or why.startswith("forgotten on"):
        return "team", ev.reason[:1].upper() + ev.reason[1:] if ev.reason else "Removed by the team"
    if ev.action == "auto-forget" or "decay" in why or "ttl" in why or "low value" in why:
        return "auto-forget", "Forgotten by the lifecycle"
    if "restore" in why or ev.action == "snapshot-restore":
        return "restore", "Removed by a snapshot restore"
    if why.startswith("heal"):
        return "heal", "Cleaned up (heal)"
    return ev.action or "removed", "Removed"


class Titles:
    """id -> (kind, title) of the records whose events were read, newest kept."""

    def __init__(self, size: int = TITLES) -> None:
        self.size = size
        self._known: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def learn(self, record_id: str, kind: str, title: str) -> None:
        self._known[record_id] = (kind, title)
        self._known.move_to_end(record_id)
        while len(self._known) > self.size:
            self._known.popitem(last=False)

    def get(self, record_id: str) -> tuple[str, str] | None:
        return self._known.get(record_id)


class Activity:
    """Turns MEM_EVENTS messages into feed lines (shared by the snapshot, the pages of
    older events and every live socket of one viewer process)."""

    def __init__(self, store: MemoryStore | None = None, titles: Titles | None = None) -> None:
        self.store = store
        self.titles = titles or Titles()

    def line(self, seq: int, data: bytes, at: float) -> ActivityItem | RecordsRemoved | None:
        """The feed line of one event, or the removal still to be named (see `name`);
        None for an event this viewer cannot read."""
        try:
            event = _decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        when = _iso(at)
        if isinstance(event, ObservationAdded):
            o = event.observation
            title = o.title or o.hook_type
            self.titles.learn(o.id, "observation", title)
            if o.revision:
                return None  # the compression model's rewrite: the first row stands
            return ActivityItem(
                seq=seq, kind="observation", id=o.id, at=when or o.timestamp, title=title,
                happened=_happened(o.timestamp, at), type=o.type, session_id=o.session_id,
                project=o.project, agent_id=o.agent_id, detail=_cut(o.narrative),
                origin=o.origin, instance=o.instance,
            )  # fmt: skip
        if isinstance(event, MemoryAdded):
            m = event.memory
            title = m.title or _cut(m.content)
            self.titles.learn(m.id, "memory", title)
            own = m.updated_at or m.created_at
            return ActivityItem(
                seq=seq, kind="memory", id=m.id, at=when or own, title=title,
                happened=_happened(own, at), type=m.type, project=m.project,
                agent_id=m.agent_id, detail=_cut(m.content), version=m.version,
                supersedes=m.supersedes or "", instance=m.instance,
            )  # fmt: skip
        if isinstance(event, SummaryAdded):
            s = event.summary
            title = s.title or f"Summary of {s.session_id}"
            self.titles.learn(f"summary:{s.session_id}", "summary", title)
            return ActivityItem(
                seq=seq, kind="summary", id=f"summary:{s.session_id}", at=when or s.created_at,
                title=title, happened=_happened(s.created_at, at), session_id=s.session_id,
                project=s.project, agent_id=s.agent_id, detail=_cut(s.narrative),
            )  # fmt: skip
        if isinstance(event, QuarantineChanged):
            return None  # a decision on records already in the feed (the Quarantine page's)
        return event

    async def item(self, seq: int, data: bytes, at: float) -> ActivityItem | None:
        got = self.line(seq, data, at)
        if isinstance(got, RecordsRemoved):
            return await self.name(seq, got, _iso(at))
        return got

    async def name(self, seq: int, ev: RecordsRemoved, at: str) -> ActivityItem:
        removed = [await self._what(i) for i in ev.ids[:20]]
        action, verb = removal_kind(ev)
        named = [r.title for r in removed if r.title]
        more = len(ev.ids) - 1
        if named:
            title = f"{verb}: {named[0]}" + (f" and {more} more" if more > 0 else "")
        else:
            noun = removed[0].kind or "record" if removed else "record"
            title = (
                f"{verb}: {noun} {ev.ids[0]}"
                if len(ev.ids) == 1
                else f"{verb}: {len(ev.ids)} records"
            )
        return ActivityItem(
            seq=seq, kind="removed", id=ev.ids[0] if ev.ids else "", at=at, title=title,
            detail=ev.reason if ev.reason and ev.reason != ev.action else "", ids=ev.ids,
            removed=removed, action=action,
        )  # fmt: skip

    async def _what(self, record_id: str) -> Removed:
        known = self.titles.get(record_id)
        if known is not None:
            return Removed(id=record_id, kind=known[0], title=known[1])
        st = self.store
        if st is not None and record_id.startswith("mem_"):
            m = await st.get(st.memories, record_id, Memory)
            if m is not None:  # superseded versions are still stored
                return Removed(id=record_id, kind="memory", title=m.title or _cut(m.content))
        if st is not None and record_id.startswith("obs_"):
            o = await st.get_observation(record_id)
            if o is not None:
                return Removed(id=record_id, kind="observation", title=o.title or o.hook_type)
        kind = (
            "memory"
            if record_id.startswith("mem_")
            else "observation"
            if record_id.startswith("obs_")
            else ""
        )
        return Removed(id=record_id, kind=kind)
