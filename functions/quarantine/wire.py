"""Requests and replies of the quarantine's routes (camelCase on the wire)."""

from __future__ import annotations

from typing import Annotated

import msgspec

RecordId = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
Reason = Annotated[str, msgspec.Meta(max_length=2000)]


class QuarantineIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    since: str = ""
    """ISO time: records written (or decided on) at or after it."""
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 200
    include_released: bool = False
    """Also the records an owner released (each with `held: false`): what a hold can undo."""


class DecisionView(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    state: str
    """held (by hand) or released; empty: none (held by chain only)."""
    by: str = ""
    at: str = ""
    reason: str = ""


class QuarantinedRecord(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    id: str
    held: bool
    """Whether it is held now (false: an owner released it)."""
    kind: str
    """observation, memory, summary or lesson."""
    project: str = ""
    session_id: str = ""
    timestamp: str = ""
    """When the record was written."""
    title: str = ""
    excerpt: str = ""
    """The record's stored text, cut (plain text: show it as text, never as markup)."""
    reasons: list[str] = msgspec.field(default_factory=list)
    """The write check's rule codes (docs/SECURITY.md), `manual` (held by hand), `chain`."""
    source: str = ""
    """Who wrote the words, as the write check saw it: user, tool, web, file, command, ..."""
    provenance: dict[str, str] = msgspec.field(default_factory=dict)
    """Where the record came from: hook type, tool, session, origin (import), instance (a
    teammate's)."""
    decision: DecisionView | None = None
    chain: list[str] = msgspec.field(default_factory=list)
    """Held records this one derives from (each holds it)."""
    derived: list[str] = msgspec.field(default_factory=list)
    """Records derived from this one that its hold holds."""


class QuarantineOut(msgspec.Struct, kw_only=True):
    records: list[QuarantinedRecord]
    """Held records newest first (then, with `includeReleased`, released ones)."""
    total: int
    """Held records matching the filters."""


class DecideIn(msgspec.Struct, rename="camel", kw_only=True):
    id: RecordId
    reason: Reason = ""
    """Kept in the audit log."""
    agent_id: str = ""
    """Who decides (header X-Agent-Id); empty: the owner."""


class DecideOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    id: str
    kind: str
    held: bool
    """The record's state now."""
    held_now: list[str] = msgspec.field(default_factory=list)
    """Records this decision holds (the record and, by chain, what derives from it)."""
    released_now: list[str] = msgspec.field(default_factory=list)
    """Records this decision lets back in."""
    chain_cut: bool = False
    """The walk of derived records stopped at its cap (functions/quarantine/chain.py)."""
