"""One process's memory service: the store, the capture inbox and the observer, and one
method per operation. Each operation is declared once, on its method: the bus function,
its REST route and its MCP tool (`engine.operation`); the memory worker serves them."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from engine import Client, FunctionError, HttpRequest, HttpResponse, Tool, operation
from functions.kernel.clock import now_iso
from functions.kernel.models import clients
from functions.kernel.owned import routes, started
from functions.kernel.store import MemoryStore
from functions.kernel.views import MemoryView, ObservationView, SessionView, as_view
from functions.memory import (
    audit_log,
    compress_model,
    locate,
    memory_list,
    metrics,
    sessions,
    status_report,
    transfer,
)
from functions.memory import capture as capture_mod
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
        if self._store is not None:
            with contextlib.suppress(Exception):
                await self._store.close()

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
        "mem::observations-locate",
        description="The session of each observation id (?ids=a,b)",
        http=rest("GET", "observations/locate"),
    )
    async def observations_locate(self, req: locate.LocateIn) -> locate.LocateOut:
        return await locate.locate(self.store, req)

    @operation(
        "mem::observation",
        description="One observation",
        http=rest("GET", "observations/{id}"),
    )
    async def observation(self, req: GetIn) -> ObservationOut:
        o = await self.store.get_observation(req.id)
        if o is None or not self.store.visible(o.agent_id, req.agent_id):
            raise FunctionError("NOT_FOUND", f"no observation {req.id}", field="id")
        return ObservationOut(as_view(o, ObservationView))

    @operation(
        "mem::memories",
        description="List memories, newest first (?project=&agentId=&type=&limit=&cursor=)",
        http=rest("GET", "memories"),
    )
    async def memories(self, req: MemoriesIn) -> MemoriesOut:
        return await memory_list.list_memories(self.store, req)

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
        return await audit_log.read_audit(self.store, req)

    @operation(
        "mem::export",
        description="Export sessions, observations, memories and summaries as one JSON "
        "document (?maxSessions=&offset=)",
        http=rest("GET", "export", status_field="oversized", status_by={"True": 413}),
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
        description="The capture inbox: events accepted and not yet stored, and the dead ones",
        http=rest("GET", "capture"),
    )
    async def capture(self, req: capture_mod.CaptureListIn) -> capture_mod.CaptureOut:
        return capture_mod.listing(self.inbox, req)

    @operation(
        "mem::capture-retry",
        description="Retry a dead or waiting capture (eventId), or all of them (all: true)",
        http=rest("POST", "capture/retry"),
    )
    async def capture_retry(
        self, req: capture_mod.CaptureRetryRequest
    ) -> capture_mod.CaptureRetryOut:
        return await capture_mod.retry(self.inbox, self.observer.store_pending, req)

    @operation(
        "mem::capture-drain",
        description="Store what waits in the capture inbox now",
        http=rest("POST", "capture/drain"),
    )
    async def capture_drain(self) -> capture_mod.CaptureDrainOut:
        return await capture_mod.drain(self.inbox, self.observer.store_pending)

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
    async def status(self) -> status_report.StatusOut:
        return await status_report.report(self.store, self.inbox)

    @operation(
        "mem::metrics-reset",
        description="Clear the function counters that status reports",
        http=rest("POST", "metrics/reset"),
    )
    async def metrics_reset(self) -> metrics.MetricsResetOut:
        return await metrics.reset(self.store.client, now_iso())

    @operation(
        "mem::status-page",
        description="The status checks as an HTML page",
        http=rest("GET", "status", accept="text/html", mode="http"),
    )
    async def status_page(self, req: HttpRequest) -> HttpResponse:
        doc = await status_report.report(self.store, self.inbox)
        return HttpResponse(
            body=status_report.status_html(doc),
            content_type="text/html; charset=utf-8",
            headers={"cache-control": "no-store"},
        )
