"""The memory worker's operations: every method of `MemoryService` (and of the replay
service beside it, which shares its store and write path) declared with `engine.operation`
(bus function, REST route, MCP tool), and the status page a browser gets at
`GET /agentmemory/status`."""

from __future__ import annotations

from engine import Context, HttpRequest, HttpResponse, Worker
from functions.memory.service import MemoryService
from functions.memory.status import status, status_html
from functions.replay.service import ReplayService


def register(worker: Worker, service: MemoryService | None = None) -> MemoryService:
    svc = service or MemoryService()
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)
    worker.serve(svc)
    worker.serve(ReplayService(svc))

    # The same status as an HTML page, for a browser (Accept: text/html) at the same path.
    @worker.function("mem::status-page", description="The status checks as an HTML page")
    async def status_page(req: HttpRequest, ctx: Context) -> HttpResponse:
        doc = await status(svc.store, svc.inbox)
        return HttpResponse(body=status_html(doc), content_type="text/html; charset=utf-8")

    worker.trigger(
        "http",
        "mem::status-page",
        method="GET",
        path="/agentmemory/status",
        accept="text/html",
        tags=["memory"],
    )
    return svc
