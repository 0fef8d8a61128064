"""The memory worker: `python -m workers.memory`. The write path (`MemoryService`) and the
families served beside it over its store (slots, facets, relations, provenance, listings,
governance, files, replay, the service's own surface, MCP resources and prompts), the
coordination layer, and, unless AGENTMEMORY_SEARCH=off, retrieval in the same process.
(`GET /agentmemory/viewer` is the viewer worker's: a redirect to the viewer's port.)"""

from __future__ import annotations

from engine import Client, Worker
from functions.coordination.actions.action_service import ActionService
from functions.coordination.checkpoints.checkpoint_service import CheckpointService
from functions.coordination.coordination_service import CoordinationService
from functions.coordination.crystals.crystal_service import CrystalService
from functions.coordination.diagnose import CoordinationDiagnostics
from functions.coordination.leases.lease_service import LeaseService
from functions.coordination.records import CHECKPOINTS_BUCKET, LEASES_BUCKET, TIMERS_BUCKET
from functions.coordination.routines.routine_service import RoutineService
from functions.coordination.sentinels.sentinel_service import SentinelService
from functions.coordination.signals.signal_service import SignalService
from functions.coordination.sketches.sketch_service import SketchService
from functions.facets.facet_service import FacetService
from functions.files.file_service import FileService
from functions.governance.governance_service import GovernanceService
from functions.listings.listing_service import ListingService
from functions.mcp_content.mcp_content_service import McpContentService
from functions.memory.compress_model import QUEUE as COMPRESS_QUEUE
from functions.memory.compress_model import requested as auto_compress_requested
from functions.memory.memory_service import MemoryService
from functions.memory.session_idle import IDLE_BUCKET
from functions.memory.settings import memory_settings
from functions.provenance.provenance_service import ProvenanceService
from functions.quarantine.quarantine_service import QuarantineService
from functions.relations.relation_service import RelationService
from functions.replay.replay_service import ReplayService
from functions.slots.slot_service import SlotService
from functions.surface.surface_service import SurfaceService

SWEEP_SCHEDULE = "@every 2m"
"""The fallback for leases whose expiry marker nobody acted on (the state trigger on the
marker hands an expired lease back first)."""
CRYSTALS_SCHEDULE = "17 3 * * *"


def serve_memory(worker: Worker, service: MemoryService | None = None) -> MemoryService:
    """The write path and the families over its store."""
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
        QuarantineService(svc),
    ):
        worker.serve(part)

    async def seed(client: Client) -> None:
        await slots.seed()

    worker.on_start(seed)
    # the idle finaliser: a session's expired wait (a KV TTL's marker) ends it, once
    worker.trigger("state", "mem::session-finalize", bucket=IDLE_BUCKET, deliver="new")
    if auto_compress_requested():
        worker.trigger(
            "queue", "mem::compress-model", queue=COMPRESS_QUEUE, concurrency=2, timeout=180,
            max_attempts=5,
        )  # fmt: skip
    return svc


def serve_coordination(
    worker: Worker, service: CoordinationService | None = None
) -> CoordinationService:
    """The coordination operations (both memory replicas serve them, so the :3111 routes
    reach them in-process): the owner of the store and each concept's service over it, and
    the triggers that drive them: state triggers on leases (expiry), timers and checkpoints,
    and cron for the sweep and the daily crystals. The pattern sentinels' scan of MEM_EVENTS
    is a cron trigger that exists only while a pattern sentinel watches (the owner's
    `patterns` arms and disarms it): an idle install has no firing every two seconds."""
    svc = service or CoordinationService()
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)
    worker.serve(svc)
    for part in (
        ActionService(svc),
        LeaseService(svc),
        RoutineService(svc),
        SignalService(svc),
        CheckpointService(svc),
        SentinelService(svc),
        SketchService(svc),
        CrystalService(svc),
        CoordinationDiagnostics(svc),
    ):
        worker.serve(part)
    worker.trigger("state", "mem::lease-changed", bucket=LEASES_BUCKET, deliver="new")
    worker.trigger("state", "mem::coord-timer", bucket=TIMERS_BUCKET, deliver="new")
    worker.trigger("state", "mem::sentinel-checkpoint", bucket=CHECKPOINTS_BUCKET, deliver="new")
    worker.trigger("cron", "mem::coord-sweep", schedule=SWEEP_SCHEDULE, catch_up="skip")
    worker.trigger("cron", "mem::crystal-auto", schedule=CRYSTALS_SCHEDULE)
    return svc


def build() -> Worker:
    worker = Worker("memory", description="agentmemory write path and REST API")
    serve_memory(worker)
    serve_coordination(worker)
    # AGENTMEMORY_SEARCH=off runs the write path alone (tests of the write path, or a
    # deployment that hosts retrieval in another worker).
    if memory_settings().search:
        # imported here: the index's libraries (numpy, faiss) are ~20 MB a replica that
        # the write path alone never uses
        from workers.search import serve_search

        serve_search(worker)
    return worker


if __name__ == "__main__":
    build().run()
