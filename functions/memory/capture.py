"""Upstream's capture surface (0.9.30, src/functions/capture.ts) over our capture inbox.

Upstream keeps every accepted hook event in a server-side inbox until it is stored, retries
it with backoff, and sets it aside as dead after its attempts; our write path does the same
with the capture inbox (functions/memory/inbox.py), which holds only the events JetStream
could not take at once. `GET capture` lists it in upstream's shape, `POST capture/retry`
puts dead or waiting entries back in line, `POST capture/drain` runs one pass now.

Upstream's hook-side spool files (`spool`) are the hooks' business here: our hooks keep
their own offline spool on the agent's machine and drain it themselves when a request gets
through (workers/hooks), so `spool` is empty. Figures are this process's (each memory
replica has its own), as upstream's are its one process's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec

from engine import FunctionError
from functions.kernel import clock
from functions.kernel.names import SOME_NAMES, TEXT, at_least_one_of, names
from functions.memory.inbox import CaptureCounts, Inbox, Pending

InboxState = Literal["pending", "retrying", "dead"]
PREVIEW = 160


def _iso(epoch: float) -> str | None:
    return clock.iso(datetime.fromtimestamp(epoch, UTC)) if epoch > 0 else None


class CaptureListIn(msgspec.Struct, rename="camel", kw_only=True):
    status: str = ""
    """pending, retrying or dead (anything else: all)."""
    limit: Annotated[int, msgspec.Meta(ge=1)] = 50
    """Clamped to 500."""


class InboxItem(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    key: str
    event_id: str
    event_source: Literal["client", "server"]
    """client: the hook sent an eventId; server: the dedup key stands for one."""
    session_id: str
    project: str
    hook_type: str
    observation_id: str
    status: InboxState
    attempts: int
    accepted_at: str
    updated_at: str
    next_attempt_at: str | None = None
    dead_at: str | None = None
    last_error: str | None = None
    preview: str


class CapturePolicy(msgspec.Struct, rename="camel", kw_only=True):
    max_attempts: int
    retry_interval_ms: int
    """The first retry's delay; each next one doubles, up to a minute."""
    dedup_retention_hours: int = 0
    """0: an event's dedup claim is the stored observation itself, kept while it is."""
    inbox_max: int
    dead_max: int = 0
    """0: dead entries are kept until retried (no cap)."""
    events_max: int = 0
    """0: accepted events are not kept apart from the observations they became."""


class InboxSummary(msgspec.Struct, rename="camel", kw_only=True):
    pending: int
    retrying: int
    dead: int
    oldest_accepted_at: str | None
    next_attempt_at: str | None
    last_error: str | None


class SinceStart(msgspec.Struct, rename="camel", kw_only=True):
    accepted: int
    completed: int
    duplicates: int
    retried: int
    recovered: int
    dead_lettered: int
    rejected: int
    pruned: int


class DrainResult(msgspec.Struct, rename="camel", kw_only=True):
    claimed: int
    delivered: int
    duplicates: int = 0
    rejected: int = 0
    expired: int = 0
    corrupt: int = 0
    remaining: int
    error: str | msgspec.UnsetType = msgspec.UNSET
    skipped: Literal["locked", "empty", "disabled"] | msgspec.UnsetType = msgspec.UNSET


class BootDrain(DrainResult, rename="camel", kw_only=True):
    at: str


class CaptureStatus(msgspec.Struct, rename="camel", kw_only=True):
    policy: CapturePolicy
    inbox: InboxSummary | None
    since_start: SinceStart
    last_sweep_at: str | None
    last_prune_at: str | None = None
    """No pruning pass here: dead entries stay until retried."""
    last_boot_drain: BootDrain | None = None
    spool: list[dict[str, Any]] = msgspec.field(default_factory=list)
    """Upstream's hook spools, read by its server; ours drain themselves (see module)."""


class CaptureOut(msgspec.Struct, kw_only=True):
    capture: CaptureStatus | None
    total: int
    """Entries in the inbox with this status (all statuses: every one)."""
    items: list[InboxItem]
    """Newest update first."""


class CaptureRetryIn(msgspec.Struct, rename="camel", kw_only=True):
    event_id: str = ""
    """The event to retry: its eventId, or its observation id or capture key."""
    all: bool = False
    """Retry every dead or waiting entry."""
    ids: list[str] = msgspec.field(default_factory=list)
    """Observation ids (ours, before upstream's eventId)."""


CaptureRetryRequest = Annotated[
    CaptureRetryIn,
    msgspec.Meta(
        extra_json_schema=at_least_one_of(eventId=TEXT, all={"const": True}, ids=SOME_NAMES)
    ),
]
"""An event to retry, or all of them."""


class CaptureRetryOut(msgspec.Struct, kw_only=True):
    matched: int
    """Entries the request named (dead or waiting)."""
    recovered: int
    """Of those, stored by this retry."""
    dead: int
    """Dead entries left after it."""
    waiting: int
    """Entries still waiting after it."""


class CaptureDrainOut(msgspec.Struct, kw_only=True):
    results: list[DrainResult]
    """One per spool: here the capture inbox of this process."""


def key_of(p: Pending) -> str:
    return "cap_" + p.dedup_key[:40]


def state_of(p: Pending, dead: bool) -> InboxState:
    return "dead" if dead else ("retrying" if p.attempts > 0 else "pending")


def preview(p: Pending) -> str:
    o = p.observation
    what = o.raw or o.narrative or o.title
    return f"{o.tool_name or o.hook_type}: {what}"[:PREVIEW]


def item(p: Pending, dead: bool) -> InboxItem:
    o = p.observation
    updated = _iso(p.updated_at) or p.accepted_at
    return InboxItem(
        key=key_of(p),
        event_id=o.event_id or key_of(p),
        event_source="client" if o.event_id else "server",
        session_id=o.session_id,
        project=o.project,
        hook_type=o.hook_type,
        observation_id=o.id,
        status=state_of(p, dead),
        attempts=p.attempts,
        accepted_at=p.accepted_at,
        updated_at=updated,
        next_attempt_at=None if dead else _iso(p.next_at),
        dead_at=updated if dead else None,
        last_error=p.last_error[:500] or None,
        preview=preview(p),
    )


def status(inbox: Inbox) -> CaptureStatus:
    pending, dead = inbox.pending_entries(), inbox.dead_entries()
    waiting = [p for p in pending if p.attempts == 0]
    retrying = [p for p in pending if p.attempts > 0]
    accepted = sorted(p.accepted_at for p in (*pending, *dead) if p.accepted_at)
    due = sorted(p.next_at for p in pending if p.next_at > 0)
    errors = sorted(
        ((p.updated_at, p.last_error) for p in (*pending, *dead) if p.last_error), reverse=True
    )
    c: CaptureCounts = inbox.counts
    return CaptureStatus(
        policy=CapturePolicy(
            max_attempts=inbox.max_attempts,
            retry_interval_ms=int(inbox.base_delay * 1000),
            inbox_max=inbox.max_entries,
        ),
        inbox=InboxSummary(
            pending=len(waiting),
            retrying=len(retrying),
            dead=len(dead),
            oldest_accepted_at=accepted[0] if accepted else None,
            next_attempt_at=_iso(due[0]) if due else None,
            last_error=errors[0][1] if errors else None,
        ),
        since_start=SinceStart(
            accepted=c.accepted,
            completed=c.completed,
            duplicates=c.duplicates,
            retried=c.retried,
            recovered=c.recovered,
            dead_lettered=c.dead_lettered,
            rejected=c.rejected,
            pruned=c.pruned,
        ),
        last_sweep_at=_iso(inbox.last_sweep_at),
    )


def listing(inbox: Inbox, req: CaptureListIn) -> CaptureOut:
    limit = min(req.limit, 500)
    rows = [(p, False) for p in inbox.pending_entries()] + [(p, True) for p in inbox.dead_entries()]
    if req.status in ("pending", "retrying", "dead"):
        rows = [(p, d) for p, d in rows if state_of(p, d) == req.status]
    rows.sort(key=lambda r: r[0].updated_at, reverse=True)
    return CaptureOut(
        capture=status(inbox),
        total=len(rows),
        items=[item(p, d) for p, d in rows[:limit]],
    )


StoreFn = Callable[[Pending], Awaitable[object]]


async def retry(inbox: Inbox, store: StoreFn, req: CaptureRetryIn) -> CaptureRetryOut:
    # the same test as CaptureRetryRequest's schema: a blank eventId or id names nothing
    if not (req.event_id.strip() or req.all or names(req.ids)):
        raise FunctionError(
            "BAD_REQUEST",
            "pass an eventId, or all: true to retry every dead or waiting capture",
            field="eventId",
        )
    wanted = {req.event_id.strip(), *names(req.ids)} - {""}

    def named(p: Pending) -> bool:
        o = p.observation
        return req.all or bool({o.event_id, o.id, key_of(p), p.dedup_key} & wanted)

    keys = {p.dedup_key for p in inbox.dead_entries() if named(p)}
    keys |= {p.dedup_key for p in inbox.pending_entries() if named(p)}
    inbox.redrive_matching(named)
    before = inbox.counts.recovered
    await inbox.drain_once(store, force=True)
    left = {p.dedup_key for p in inbox.pending_entries()}
    dead = {p.dedup_key for p in inbox.dead_entries()}
    return CaptureRetryOut(
        matched=len(keys),
        recovered=min(len(keys), inbox.counts.recovered - before),
        dead=len(dead & keys),
        waiting=len(left & keys),
    )


async def drain(inbox: Inbox, store: StoreFn) -> CaptureDrainOut:
    """One pass over the inbox now (due or not); dead entries stay (capture/retry)."""
    before = inbox.pending_entries()
    if not before:
        return CaptureDrainOut(
            results=[DrainResult(claimed=0, delivered=0, remaining=0, skipped="empty")]
        )
    if inbox.disk_full():
        return CaptureDrainOut(
            results=[
                DrainResult(claimed=0, delivered=0, remaining=len(before), error=inbox.disk_full())
            ]
        )
    dup = inbox.counts.duplicates
    stored, _failed = await inbox.drain_once(store, force=True)
    return CaptureDrainOut(
        results=[
            DrainResult(
                claimed=len(before),
                delivered=stored,
                duplicates=inbox.counts.duplicates - dup,
                remaining=len(inbox.pending_entries()),
            )
        ]
    )
