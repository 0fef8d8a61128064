"""One process's memory service: the store, the capture inbox and the observer, and one
method per operation. Each operation is declared once, on its method: the bus function,
its REST route and its MCP tool (`engine.operation`); the memory worker serves them."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from engine import Client, FunctionError, HttpRequest, HttpResponse, Tool, operation
from functions.kernel.models import clients
from functions.kernel.owned import routes, started
from functions.kernel.records import AuditEntry, Memory, Observation
from functions.kernel.store import MemoryStore
from functions.kernel.views import AuditEntryView, MemoryView, ObservationView, SessionView, as_view
from functions.memory import compress_model, sessions, transfer
from functions.memory import forget as forget_mod
from functions.memory import remember as remember_mod
from functions.memory import status as status_mod
from functions.memory.inbox import Inbox
from functions.memory.observe import Observer
from functions.memory.session_idle import FinalizeOut, IdleChange, SessionIdle
from functions.memory.settings import memory_settings
from functions.memory.wire import (
    AuditIn,
    AuditOut,
    CaptureOut,
    CaptureRetryIn,
    CaptureRetryOut,
    ExportIn,
    ExportOut,
    ForgetOut,
    ForgetRequest,
    GetIn,
    Health,
    ImportOut,
    ImportRequest,
    ListIn,
    Livez,
    MemoriesIn,
    MemoriesOut,
    MemoryOut,
    ObservationOut,
    ObservationsOut,
    ObserveIn,
    ObserveOut,
    RememberIn,
    RememberOut,
    SessionEndIn,
    SessionEndOut,
    SessionsOut,
    SessionStartIn,
    SessionStartOut,
    StatusOut,
)

log = logging.getLogger("functions.memory")
COUNTS_FLUSH = 5.0
AGENT = {"x-agent-id": "agentId"}
"""A request's agent, from the header the hooks and clients send, unless the body names one."""


rest = routes("memory", headers=AGENT)
"""A route of the memory surface under /agentmemory/."""


class MemoryService:
    def __init__(self) -> None:
        self._store: MemoryStore | None = None
        self._observer: Observer | None = None
        self.inbox = Inbox()
        self._stop = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._counts: asyncio.Task[None] | None = None
        self._auto_compress = False
        self.idle = SessionIdle(memory_settings().finalize_idle_ms)

    @property
    def store(self) -> MemoryStore:
        return started(self._store, "the memory service")

    @property
    def observer(self) -> Observer:
        return started(self._observer, "the memory service")

    async def start(self, client: Client) -> None:
        store = await MemoryStore(client).open()
        self._store, self._observer = store, Observer(store, self.inbox)
        await self.idle.open(client)
        self._auto_compress = compress_model.enabled(clients.client(client))
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
                    counts = self._observer.session_counts
                    await sessions.flush_counts(self._store, counts, self.idle)
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
                await sessions.flush_counts(self._store, self._observer.session_counts, self.idle)

    # ---- operations ----------------------------------------------------------------
    @operation(
        "mem::observe",
        description="Record a hook observation",
        http=rest(
            "POST",
            "observe",
            max_body=17 * 1024 * 1024,  # a 16 MiB hook body and its envelope; cut to size
            status=201,
            status_field="status",
            status_by={"accepted": 201, "duplicate": 200, "retrying": 202},
        ),
    )
    async def observe(self, req: ObserveIn) -> ObserveOut:
        out = await self.observer.observe(req)
        if self._auto_compress and out.status == "accepted":
            await self._enqueue_compression(out.observation_id)
        return out

    async def _enqueue_compression(self, obs_id: str) -> None:
        # The keyless record is stored and acknowledged; the model's rewrite is extra, so a
        # failed enqueue is logged, not the caller's error.
        try:
            await self.store.client.call("engine::enqueue", {  # functions/ never import triggers/
                "queue": compress_model.QUEUE, "msg_id": f"compress:{obs_id}",
                "payload": compress_model.CompressIn(id=obs_id),
            })  # fmt: skip
        except Exception:
            log.exception("could not enqueue %s for the compression model", obs_id)

    @operation(
        "mem::compress-model",
        description="Rewrite a stored observation with the compression model "
        "(AGENTMEMORY_AUTO_COMPRESS; run by the compress queue's trigger)",
        timeout=180,
    )
    async def rewrite_observation(
        self, req: compress_model.CompressIn
    ) -> compress_model.CompressOut:
        model = clients.client(self.store.client)
        outcome = await compress_model.compress_with_model(self.store, model, req.id)
        return compress_model.CompressOut(outcome=outcome)

    @operation(
        "mem::session-start",
        description="Start (or resume) a session; returns context",
        http=rest("POST", "session/start"),
    )
    async def session_start(self, req: SessionStartIn) -> SessionStartOut:
        return await sessions.start_session(self.store, req)

    @operation(
        "mem::session-end",
        description="End a session (`final: false`: a turn of it; the session ends after "
        "AGENTMEMORY_FINALIZE_IDLE_MS of silence); an unknown or ended one: ended false",
        http=rest("POST", "session/end"),
    )
    async def session_end(self, req: SessionEndIn) -> SessionEndOut:
        return await sessions.end_session(self.store, req, self.observer.session_counts, self.idle)

    @operation(
        "mem::session-finalize",
        description="State trigger: a session's idle period ran out (mem_session_idle)",
    )
    async def session_finalize(self, change: IdleChange) -> FinalizeOut:
        return await self.idle.expired(self.store, change)

    @operation(
        "mem::remember",
        description="Explicitly save an important insight, decision, or pattern to long-term "
        "memory.",
        http=rest("POST", "remember", status=201),
        tool=Tool("memory_save", tier="core,basic"),
    )
    async def remember(self, req: RememberIn) -> RememberOut:
        return await remember_mod.remember(self.store, req)

    @operation(
        "mem::forget",
        description="Forget memories, observations or a whole session (audited)",
        http=rest("POST", "forget"),
        tool=Tool("memory_forget"),
    )
    async def forget(self, req: ForgetRequest) -> ForgetOut:
        return await forget_mod.forget(self.store, req, agent_id=req.agent_id)

    @operation(
        "mem::governance-delete",
        description="Delete memories by id, with a reason (audited)",
        http=rest("DELETE", "governance/memories"),
        tool=Tool("memory_governance_delete"),
    )
    async def governance_delete(self, req: ForgetRequest) -> ForgetOut:
        return await forget_mod.forget(
            self.store, req, agent_id=req.agent_id, action="governance-delete"
        )

    @operation(
        "mem::sessions",
        description="List recent sessions with their status and observation counts.",
        http=rest("GET", "sessions"),
        tool=Tool("memory_sessions", tier="core,basic"),
    )
    async def sessions(self, req: ListIn) -> SessionsOut:
        found = await sessions.list_sessions(self.store, req)
        return SessionsOut(as_view(found, list[SessionView]))

    @operation(
        "mem::observations",
        description="List observations (?sessionId=)",
        http=rest("GET", "observations"),
    )
    async def observations(self, req: ListIn) -> ObservationsOut:
        found = await sessions.list_observations(self.store, req)
        return ObservationsOut(as_view(found, list[ObservationView]))

    @operation(
        "mem::observation",
        description="One observation",
        http=rest("GET", "observations/{id}"),
    )
    async def observation(self, req: GetIn) -> ObservationOut:
        o = await self.store.get(self.store.observations, req.id, Observation)
        if o is None or not self.store.visible(o.agent_id, req.agent_id):
            raise FunctionError("NOT_FOUND", f"no observation {req.id}", field="id")
        return ObservationOut(as_view(o, ObservationView))

    @operation(
        "mem::memories",
        description="List current memories (?project=&agentId=&type=)",
        http=rest("GET", "memories"),
    )
    async def memories(self, req: MemoriesIn) -> MemoriesOut:
        ms = [
            m
            for m in await self.store.load_all(self.store.memories, Memory)
            if self.store.visible(m.agent_id, req.agent_id)
            and not m.superseded_by
            and (not req.project or m.project == req.project)
            and (not req.type or m.type == req.type)
        ]
        ms.sort(key=lambda m: m.updated_at, reverse=True)
        return MemoriesOut(as_view(ms[req.offset : req.offset + req.limit], list[MemoryView]))

    @operation(
        "mem::memory",
        description="One memory with its older versions",
        http=rest("GET", "memories/{id}"),
    )
    async def memory(self, req: GetIn) -> MemoryOut:
        chain = await remember_mod.memory_chain(self.store, req.id)
        if not chain or not self.store.visible(chain[0].agent_id, req.agent_id):
            raise FunctionError("NOT_FOUND", f"no memory {req.id}", field="id")
        return MemoryOut(as_view(chain[0], MemoryView), as_view(chain[1:], list[MemoryView]))

    @operation(
        "mem::audit",
        description="The audit log, newest first: deletions, imports, merges.",
        http=rest("GET", "audit"),
        tool=Tool("memory_audit"),
    )
    async def audit(self, req: AuditIn) -> AuditOut:
        keys = sorted(await self.store.keys(self.store.audit_log), reverse=True)
        if not req.operation:
            keys = keys[req.offset : req.offset + req.limit]
        entries: list[AuditEntry] = []
        skip = req.offset if req.operation else 0
        for at in range(0, len(keys), 256):  # newest first, until the page is full
            got = await asyncio.gather(
                *(self.store.get(self.store.audit_log, k, AuditEntry) for k in keys[at : at + 256])
            )
            for e in got:
                if e is None or (req.operation and e.action != req.operation):
                    continue
                if skip:
                    skip -= 1
                    continue
                entries.append(e)
            if len(entries) >= req.limit:
                break
        return AuditOut(as_view(entries[: req.limit], list[AuditEntryView]))

    @operation(
        "mem::export",
        description="Export sessions, observations, memories and summaries as one JSON "
        "document (?maxSessions=&offset=)",
        http=rest("GET", "export"),
        tool=Tool("memory_export", tier="basic"),
    )
    async def export(self, req: ExportIn) -> ExportOut:
        return await transfer.export(self.store, req)

    @operation(
        "mem::import",
        description="Import an export (strategy merge|replace|skip)",
        http=rest("POST", "import", max_body=8 * 1024 * 1024),
    )
    async def import_(self, req: ImportRequest) -> ImportOut:
        return await transfer.import_(self.store, req)

    @operation(
        "mem::capture",
        description="The capture inbox and its dead letters",
        http=rest("GET", "capture"),
    )
    async def capture(self, req: ListIn) -> CaptureOut:
        pending, dead = self.inbox.listing()
        return CaptureOut(
            inbox=pending[: req.limit],
            dead_letters=dead[: req.limit],
            inbox_size=len(pending),
            dead_letter_count=len(dead),
        )

    @operation(
        "mem::capture-retry",
        description="Replay the inbox and dead letters",
        http=rest("POST", "capture/retry"),
    )
    async def capture_retry(self, req: CaptureRetryIn) -> CaptureRetryOut:
        moved = self.inbox.redrive(req.ids)
        stored, failed = await self.inbox.drain_once(self.observer.store_pending, force=True)
        return CaptureRetryOut(success=failed == 0, redriven=moved, stored=stored, failed=failed)

    @operation(
        "mem::livez",
        description="Liveness",
        http=rest("GET", "livez", auth="none", source="none"),
    )
    async def livez(self) -> Livez:
        return status_mod.livez(self.store)

    @operation(
        "mem::health",
        description="Health",
        http=rest("GET", "health", auth="none", source="none"),
    )
    async def health(self) -> Health:
        return status_mod.health(self.store)

    @operation(
        "mem::status",
        description="What is wrong and how to fix it",
        http=rest("GET", "status", source="none"),
    )
    async def status(self) -> StatusOut:
        return await status_mod.status(self.store, self.inbox)

    @operation(
        "mem::status-page",
        description="The status checks as an HTML page",
        http=rest("GET", "status", accept="text/html", mode="http"),
    )
    async def status_page(self, req: HttpRequest) -> HttpResponse:
        doc = await status_mod.status(self.store, self.inbox)
        return HttpResponse(
            body=status_mod.status_html(doc), content_type="text/html; charset=utf-8"
        )
