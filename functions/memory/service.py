"""One process's memory service: the store, the capture inbox and the observer, and one
method per operation. Bus functions and REST routes both call these methods."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from engine import Client, FunctionError
from functions.memory import forget as forget_mod
from functions.memory import remember as remember_mod
from functions.memory import sessions, transfer
from functions.memory.inbox import Inbox
from functions.memory.observe import Observer
from functions.memory.status import livez, status
from functions.memory.store import MemoryStore
from functions.memory.wire import (
    CaptureRetryIn,
    ExportIn,
    ForgetIn,
    GetIn,
    ImportIn,
    ListIn,
    ObserveIn,
    ObserveOut,
    RememberIn,
    SessionEndIn,
    SessionStartIn,
    to_wire,
)
from functions.records import AuditEntry, Memory, Observation

log = logging.getLogger("functions.memory")
COUNTS_FLUSH = 5.0


class MemoryService:
    def __init__(self) -> None:
        self._store: MemoryStore | None = None
        self._observer: Observer | None = None
        self.inbox = Inbox()
        self._stop = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._counts: asyncio.Task[None] | None = None

    @property
    def store(self) -> MemoryStore:
        if self._store is None:
            raise FunctionError("UNAVAILABLE", "the memory service is starting", retryable=True)
        return self._store

    @property
    def observer(self) -> Observer:
        if self._observer is None:
            raise FunctionError("UNAVAILABLE", "the memory service is starting", retryable=True)
        return self._observer

    async def start(self, client: Client) -> None:
        store = await MemoryStore(client).open()
        self._store, self._observer = store, Observer(store, self.inbox)
        self._stop.clear()
        self._loop = asyncio.get_running_loop().create_task(
            self.inbox.run(self._observer.store_pending, self._stop)
        )
        self._counts = asyncio.get_running_loop().create_task(self._flush_counts_regularly())

    async def _flush_counts_regularly(self) -> None:
        # Replicas each count the observations they stored; the session's stored count is
        # their sum, caught up every COUNTS_FLUSH seconds rather than only at session end.
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=COUNTS_FLUSH)
            if self._store is not None and self._observer is not None:
                try:
                    await sessions.flush_counts(self._store, self._observer.session_counts)
                except Exception as exc:  # the bus is away: the counts wait for next time
                    log.debug("session counts not flushed: %s", exc)

    async def stop(self, client: Client) -> None:
        self._stop.set()
        for task in (self._loop, self._counts):
            if task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, timeout=5)
        if self._store is not None and self._observer is not None:
            with contextlib.suppress(Exception):
                await sessions.flush_counts(self._store, self._observer.session_counts)

    # ---- operations ----------------------------------------------------------------
    async def observe(self, req: ObserveIn) -> ObserveOut:
        return await self.observer.observe(req)

    async def session_start(self, req: SessionStartIn) -> dict[str, Any]:
        out = await sessions.start_session(self.store, req)
        return {"session": to_wire(out["session"]), "context": out["context"]}

    async def session_end(self, req: SessionEndIn) -> dict[str, Any]:
        return await sessions.end_session(self.store, req, self.observer.session_counts)

    async def remember(self, req: RememberIn) -> dict[str, Any]:
        return await remember_mod.remember(self.store, req)

    async def forget(self, req: ForgetIn) -> dict[str, Any]:
        return await forget_mod.forget(self.store, req, agent_id=req.agent_id)

    async def governance_delete(self, req: ForgetIn) -> dict[str, Any]:
        return await forget_mod.forget(
            self.store, req, agent_id=req.agent_id, action="governance-delete"
        )

    async def sessions(self, req: ListIn) -> dict[str, Any]:
        return {"sessions": to_wire(await sessions.list_sessions(self.store, req))}

    async def observations(self, req: ListIn) -> dict[str, Any]:
        return {"observations": to_wire(await sessions.list_observations(self.store, req))}

    async def memory(self, req: GetIn) -> dict[str, Any]:
        chain = await remember_mod.memory_chain(self.store, req.id)
        if not chain or not self.store.visible(chain[0].agent_id, req.agent_id):
            raise FunctionError("NOT_FOUND", f"no memory {req.id}", field="id")
        return {"memory": to_wire(chain[0]), "versions": to_wire(chain[1:])}

    async def observation(self, req: GetIn) -> dict[str, Any]:
        o = await self.store.get(self.store.observations, req.id, Observation)
        if o is None or not self.store.visible(o.agent_id, req.agent_id):
            raise FunctionError("NOT_FOUND", f"no observation {req.id}", field="id")
        return {"observation": to_wire(o)}

    async def memories(self, req: ListIn) -> dict[str, Any]:
        ms = [
            m
            for m in await self.store.load_all(self.store.memories, Memory)
            if self.store.visible(m.agent_id, req.agent_id)
            and not m.superseded_by
            and (not req.project or m.project == req.project)
        ]
        ms.sort(key=lambda m: m.updated_at, reverse=True)
        return {"memories": to_wire(ms[req.offset : req.offset + req.limit])}

    async def audit(self, req: ListIn) -> dict[str, Any]:
        keys = sorted(await self.store.keys(self.store.audit_log), reverse=True)
        picked = keys[req.offset : req.offset + req.limit]
        got = await asyncio.gather(
            *(self.store.get(self.store.audit_log, k, AuditEntry) for k in picked)
        )
        return {"entries": to_wire([e for e in got if e is not None])}

    async def export(self, req: ExportIn) -> dict[str, Any]:
        return await transfer.export(self.store, req)

    async def import_(self, req: ImportIn) -> dict[str, Any]:
        return await transfer.import_(self.store, req)

    async def capture(self, req: ListIn) -> dict[str, Any]:
        pending, dead = self.inbox.listing()
        return {
            "inbox": to_wire(pending[: req.limit]),
            "deadLetters": to_wire(dead[: req.limit]),
            "inboxSize": len(pending),
            "deadLetterCount": len(dead),
        }

    async def capture_retry(self, req: CaptureRetryIn) -> dict[str, Any]:
        moved = self.inbox.redrive(req.ids)
        stored, failed = await self.inbox.drain_once(self.observer.store_pending, force=True)
        return {"success": failed == 0, "redriven": moved, "stored": stored, "failed": failed}

    async def livez(self) -> dict[str, Any]:
        return livez(self.store)

    async def health(self) -> dict[str, Any]:
        doc = await status(self.store, self.inbox)
        return {k: doc[k] for k in ("status", "service", "version", "bootId", "uptimeSeconds")}

    async def status(self) -> dict[str, Any]:
        return await status(self.store, self.inbox)
