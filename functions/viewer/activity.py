"""What the viewer's activity feed shows of a MEM_EVENTS event: one line per event, the same
whether it came in the snapshot or live (so a page renders both alike)."""

from __future__ import annotations

from typing import Literal

import msgspec

from functions.kernel.records import (
    MemEvent,
    MemoryAdded,
    ObservationAdded,
    RecordsRemoved,
    SummaryAdded,
)

DETAIL_MAX = 300
_decoder = msgspec.json.Decoder(MemEvent)


class ActivityItem(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    seq: int
    """The event's MEM_EVENTS sequence."""
    kind: Literal["observation", "memory", "summary", "removed"]
    id: str
    """The record's id (the first one, for a removal)."""
    at: str
    """When it happened (the observation's timestamp, the memory's or summary's time)."""
    title: str
    type: str = ""
    """The observation's or memory's type."""
    session_id: str = ""
    project: str = ""
    agent_id: str = ""
    detail: str = ""
    ids: list[str] = msgspec.field(default_factory=list)
    """A removal: every id removed."""
    origin: str = ""


def _cut(text: str) -> str:
    return text if len(text) <= DETAIL_MAX else text[: DETAIL_MAX - 1] + "…"


def item_of(seq: int, data: bytes) -> ActivityItem | None:
    """The feed line of one MEM_EVENTS message; None for one this viewer cannot read."""
    try:
        event = _decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if isinstance(event, ObservationAdded):
        o = event.observation
        return ActivityItem(
            seq=seq, kind="observation", id=o.id, at=o.timestamp, title=o.title or o.hook_type,
            type=o.type, session_id=o.session_id, project=o.project, agent_id=o.agent_id,
            detail=_cut(o.narrative), origin=o.origin,
        )  # fmt: skip
    if isinstance(event, MemoryAdded):
        m = event.memory
        return ActivityItem(
            seq=seq, kind="memory", id=m.id, at=m.updated_at or m.created_at,
            title=m.title or _cut(m.content), type=m.type, project=m.project,
            agent_id=m.agent_id, detail=_cut(m.content),
        )  # fmt: skip
    if isinstance(event, SummaryAdded):
        s = event.summary
        return ActivityItem(
            seq=seq, kind="summary", id=f"summary:{s.session_id}", at=s.created_at,
            title=s.title or f"Summary of {s.session_id}", session_id=s.session_id,
            project=s.project, agent_id=s.agent_id, detail=_cut(s.narrative),
        )  # fmt: skip
    assert isinstance(event, RecordsRemoved)
    return ActivityItem(
        seq=seq, kind="removed", id=event.ids[0] if event.ids else "", at="",
        title=f"{len(event.ids)} record(s) removed", detail=event.reason, ids=event.ids,
    )  # fmt: skip
