"""The repairs heal applies, each made the way the store itself would: through the event
stream for the indexes, compare-and-set for records, the owner's own sweeps for sessions,
TTLs and profiles, every change audited.

A fix is a coroutine function of no argument answering what it did (`Fix`); the checks
(checks.py) attach one to each finding they can repair. One sweep or refold fixes every
finding of its kind: those fixes are the same bound method each time, so heal runs each
once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from functions.diagnostics.wire import Inferred
from functions.kernel.ids import kv_key
from functions.kernel.records import (
    SLOTS_BUCKET,
    Memory,
    MemoryAdded,
    ObservationAdded,
    RecordsRemoved,
    SessionSummary,
    Slot,
    SummaryAdded,
)
from functions.kernel.store import MemoryStore
from functions.lifecycle.wire import AutoForgetIn, DigestIn, SweepIn

if TYPE_CHECKING:
    from functions.lifecycle.lifecycle_service import LifecycleService  # the owner

Fix = Callable[[], Awaitable[str]]


class Fixes:
    """The repairs, over the store of the lifecycle service that serves diagnostics."""

    def __init__(self, owner: LifecycleService) -> None:
        self.owner = owner

    @property
    def store(self) -> MemoryStore:
        return self.owner.store

    async def sweep(self) -> str:
        out = await self.owner.sweep(SweepIn(stale_hours=24))
        return f"swept sessions: abandoned {len(out.abandoned)}"

    async def auto_forget(self) -> str:
        out = await self.owner.auto_forget(AutoForgetIn())
        return f"auto-forget removed {sum(out.removed.values())}"

    async def refold(self) -> str:
        out = await self.owner.digest_events(DigestIn())
        return f"profiles refolded: {out.folded}"

    def unsupersede(self, mid: str) -> Fix:
        return self._superseded(mid, None, "dangling supersededBy cleared", "is current again")

    def supersede(self, mid: str, by: str) -> Fix:
        return self._superseded(
            mid, by, f"superseded by {by}: no longer latest", f"is superseded by {by}"
        )

    def _superseded(self, mid: str, by: str | None, reason: str, result: str) -> Fix:
        """The fix setting a memory's `supersededBy` to `by` (None: clearing it)."""

        async def fix() -> str:
            def put(cur: Memory | None) -> Memory | None:
                if cur is None or bool(cur.superseded_by) == bool(by):
                    return None
                cur.superseded_by = by
                return cur

            m = await self.store.memories.update(kv_key(mid), put, type=Memory)
            if m is not None:
                await self.store.publish(MemoryAdded(memory=m))
            await self.store.audit("heal", [mid], reason=reason)
            return f"memory {mid} {result}"

        return fix

    async def infer_projects(self) -> str:
        got = await self.store.client.call(
            "mem::migrate", {"step": "infer-memory-projects"}, response=Inferred, timeout=300
        )
        await self.store.audit("heal", [], reason="infer-memory-projects run")
        return f"infer-memory-projects: {got.updated} scoped, {got.ambiguous} ambiguous"

    def drop_summary(self, sid: str) -> Fix:
        async def fix() -> str:
            await self.store.summaries.delete(kv_key(sid))
            await self.store.publish(RecordsRemoved(ids=[f"summary:{sid}"], reason="heal"))
            await self.store.audit("heal", [sid], reason="orphan summary removed")
            return f"summary of {sid} removed"

        return fix

    def delete(self, bucket: str, key: str) -> Fix:
        async def fix() -> str:
            await (await self.store.client.bucket(bucket)).delete(key)
            await self.store.audit("heal", [key], reason=f"orphan {bucket} entry removed")
            return f"{bucket} {key} removed"

        return fix

    def trim_slot(self, key: str) -> Fix:
        async def fix() -> str:
            def trim(cur: Slot | None) -> Slot | None:
                if cur is None or len(cur.content) <= cur.size_limit:
                    return None
                cur.content = cur.content[-cur.size_limit :]
                return cur

            await (await self.store.client.bucket(SLOTS_BUCKET)).update(key, trim, type=Slot)
            return f"slot {key} trimmed to its limit"

        return fix

    def drop_from_index(self, ids: list[str]) -> Fix:
        async def fix() -> str:
            await self.store.publish(RecordsRemoved(ids=ids, reason="heal: orphan index entries"))
            await self.store.audit("heal", ids[:50], reason="orphan index entries dropped")
            return f"{len(ids)} orphan index entries dropped"

        return fix

    def reindex(self, ids: list[str]) -> Fix:
        async def fix() -> str:
            st = self.store
            n = 0
            for rid in ids:
                event: Any = None
                if rid.startswith("summary:"):
                    sm = await st.get(st.summaries, rid.removeprefix("summary:"), SessionSummary)
                    event = SummaryAdded(summary=sm) if sm else None
                elif (m := await st.get(st.memories, rid, Memory)) is not None:
                    event = MemoryAdded(memory=m)
                elif (o := await st.get_observation(rid)) is not None:
                    event = ObservationAdded(observation=o)
                if event is not None:
                    await st.publish(event)
                    n += 1
            await st.audit("heal", ids[:50], reason="unindexed records re-published")
            return f"{n} records re-published to the indexes"

        return fix
