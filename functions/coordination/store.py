"""Coordination's state: its buckets, opened once per process (by the `CoordinationService`,
`functions.coordination.coordination_service`), the audit log it shares with the memory service; and what
each concept's service stands on: that one store (`ConceptService`) and the routes it
declares under /agentmemory/ (`rest`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from engine import Bucket, Client, Entry, FunctionError
from functions.coordination import records as r
from functions.kernel.clock import iso_ms, now_ms
from functions.kernel.ids import kv_key
from functions.kernel.owned import routes
from functions.kernel.records import AUDIT_BUCKET, AuditEntry
from functions.kernel.store import write_audit

T = TypeVar("T")
AUDIT_RETRY = 30.0


class CoordStore:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.actions: Bucket
        self.leases: Bucket
        self.signals: Bucket
        self.receipts: Bucket
        self.checkpoints: Bucket
        self.sentinels: Bucket
        self.routines: Bucket
        self.runs: Bucket
        self.sketches: Bucket
        self.crystals: Bucket
        self.timers: Bucket
        self.cursors: Bucket
        self.audit_log: Bucket

    async def open(self) -> CoordStore:
        c = self.client
        self.actions = await c.bucket(r.ACTIONS_BUCKET)
        self.leases = await c.bucket(r.LEASES_BUCKET, marker_ttl=r.MARKER_TTL)
        self.signals = await c.bucket(r.SIGNALS_BUCKET)
        self.receipts = await c.bucket(r.RECEIPTS_BUCKET)
        self.checkpoints = await c.bucket(r.CHECKPOINTS_BUCKET)
        self.sentinels = await c.bucket(r.SENTINELS_BUCKET)
        self.routines = await c.bucket(r.ROUTINES_BUCKET)
        self.runs = await c.bucket(r.RUNS_BUCKET)
        self.sketches = await c.bucket(r.SKETCHES_BUCKET)
        self.crystals = await c.bucket(r.CRYSTALS_BUCKET)
        self.timers = await c.bucket(r.TIMERS_BUCKET, marker_ttl=r.MARKER_TTL)
        self.cursors = await c.bucket(r.CURSORS_BUCKET)
        self.audit_log = await c.bucket(AUDIT_BUCKET)
        return self

    async def audit(
        self,
        action: str,
        target_ids: list[str],
        *,
        actor: str = "",
        project: str = "",
        reason: str = "",
        **details: Any,
    ) -> AuditEntry:
        return await write_audit(
            self.audit_log,
            action,
            target_ids,
            reason=reason,
            actor=actor,
            project=project,
            details={k: v for k, v in details.items() if v not in (None, "", [])},
            # It records a commit already made: a gap would hide who held what (the
            # partition bench found some after elections).
            retry_for=AUDIT_RETRY,
        )

    # Typed per-key reads and writes (Bucket's own take `type=` beside an Any default).
    async def get(self, state: Bucket, key: str, type_: type[T]) -> T | None:
        got: T | None = await state.get(key, type_)
        return got

    async def entry(self, state: Bucket, key: str, type_: type[T]) -> Entry[T] | None:
        got: Entry[T] | None = await state.entry(key, type_)
        return got

    async def update(
        self, state: Bucket, key: str, fn: Callable[[T | None], T | None], type_: type[T]
    ) -> T | None:
        got: T | None = await state.update(key, fn, type=type_)
        return got

    async def all(self, state: Bucket, type_: type[T]) -> list[T]:
        return [v async for _k, v in state.scan(">", type_)]

    async def need(self, state: Bucket, id_: str, type_: type[T], field: str, what: str) -> T:
        got = await self.get(state, kv_key(id_), type_) if id_ else None
        if got is None:
            raise FunctionError("NOT_FOUND", f"no {what} {id_!r}", field=field)
        return got

    async def timer(self, kind: r.TimerKind, target_id: str, due_ms: int) -> None:
        """Arm a timer: its key expires at `due_ms` and the state trigger fires it."""
        ttl = max(1.0, (due_ms - now_ms()) / 1000)
        await self.timers.put(
            f"{kind}.{kv_key(target_id)}",
            r.Timer(kind=kind, target_id=target_id, due_at=iso_ms(due_ms)),
            ttl=ttl,
        )


AGENT = {"x-agent-id": "agentId"}
rest = routes("coordination", headers=AGENT)
"""A coordination route; `agentId` defaults to the `x-agent-id` header (upstream's)."""


class CoordOwner(Protocol):
    """The service that opens the process's one coordination store (its start hook)."""

    @property
    def cs(self) -> CoordStore: ...


Owner = TypeVar("Owner", bound=CoordOwner)


class ConceptService(Generic[Owner]):
    """One concept's operations, served beside their owner (of type `Owner`) over its store."""

    def __init__(self, owner: Owner) -> None:
        self.owner = owner

    @property
    def cs(self) -> CoordStore:
        return self.owner.cs
