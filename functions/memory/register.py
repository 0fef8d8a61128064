"""The memory worker's operations: every method of `MemoryService` and of the services that
share its store (slots, facets, relations, provenance, listings, governance, files, replay,
the service's own surface, MCP resources and prompts), each declared with
`engine.operation` (bus function, REST route, MCP tool); and the HTML page a browser gets
at `GET /agentmemory/status`. (`GET /agentmemory/viewer` is the viewer worker's: a
redirect to the viewer's port.)"""

from __future__ import annotations

from engine import Client, Context, HttpRequest, HttpResponse, Worker
from functions.memory.facets import FacetService
from functions.memory.files import FileService
from functions.memory.governance import GovernanceService
from functions.memory.listings import ListingService
from functions.memory.mcp_content import McpContentService
from functions.memory.provenance import ProvenanceService
from functions.memory.relations import RelationService
from functions.memory.service import MemoryService
from functions.memory.slots import SlotService
from functions.memory.status import status, status_html
from functions.memory.surface import SurfaceService
from functions.replay.service import ReplayService


def register(worker: Worker, service: MemoryService | None = None) -> MemoryService:
    svc = service or MemoryService()
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)
    worker.serve(svc)
    slots = SlotService(svc)
    for part in (
        slots,
        FacetService(svc),
        RelationService(svc),
        ProvenanceService(svc),
        ListingService(svc),
        GovernanceService(svc),
        FileService(svc),
        ReplayService(svc),
        SurfaceService(svc),
        McpContentService(svc),
    ):
        worker.serve(part)

    async def seed(client: Client) -> None:
        await slots.seed()

    worker.on_start(seed)

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
