"""The viewer's operations: the snapshot a page loads before it follows live events
(`GET /agentmemory/viewer/snapshot`), older activity page by page
(`GET /agentmemory/viewer/activity?before=`), and `GET /agentmemory/viewer`, which sends a
browser to the viewer's own port."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import msgspec

from engine import Client, Http, HttpRequest, HttpResponse, operation
from functions.kernel.clock import now_iso
from functions.kernel.owned import started
from functions.kernel.records import Memory, Session
from functions.kernel.store import MemoryStore
from functions.viewer.activity import Activity, ActivityItem
from functions.viewer.counts import CountsOut, ViewerCounts, viewer_counts
from functions.viewer.health import HealthView, health_and_report
from functions.viewer.overview import ConsolidationView, GraphView, Indexes, overview

log = logging.getLogger("functions.viewer")

VERSION = "0.2.0"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class SnapshotIn(msgspec.Struct, rename="camel", kw_only=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    """Activity items: the newest events of MEM_EVENTS."""


class SnapshotOut(msgspec.Struct, rename="camel", kw_only=True):
    """Ours (activity and what follows it live) and upstream's (0.9.30,
    src/triggers/viewer-streams.ts: ports, provider, flags, graph, consolidation, status,
    health, function metrics, counts, indexes, the status report)."""

    seq: int
    """The last MEM_EVENTS sequence the snapshot covers: follow live events after it."""
    at: str
    activity: list[ActivityItem]
    """Newest first."""
    counts: ViewerCounts
    projects: list[str]
    """Projects of the stored sessions and memories, for the pages' filters."""
    health: HealthView
    version: str
    more: bool = False
    """Events older than `activity` remain (`viewer/activity?before=`)."""
    rest_url: str = ""
    """The REST API, for the commands the pages show (never the secret itself)."""
    secret_hint: str = ""
    """How a shell gets the REST secret: `$(cat <its file>)` or `$AGENTMEMORY_SECRET`."""
    service: str = "agentmemory"
    viewer_port: int = 0
    viewer_skipped: bool = False
    streams_port: int | None = None
    rest_port: int = 0
    provider: str = "noop"
    embedding_provider: str = "none"
    flags: list[dict[str, Any]] = msgspec.field(default_factory=list)
    graph: GraphView | None = None
    consolidation: ConsolidationView | None = None
    status: Literal["healthy", "degraded", "critical"] = "healthy"
    circuit_breaker: dict[str, Any] | None = None
    function_metrics: list[dict[str, Any]] = msgspec.field(default_factory=list)
    indexes: Indexes | None = None
    report: dict[str, Any] | None = None
    """The status report (`GET status`)."""
    generated_at: str = ""


class CountsIn(msgspec.Struct, rename="camel", kw_only=True):
    agent_id: str = ""
    """With AGENTMEMORY_AGENT_SCOPE=isolated: count this agent's sessions and memories."""


class ActivityIn(msgspec.Struct, rename="camel", kw_only=True):
    before: Annotated[int, msgspec.Meta(ge=1)]
    """Events older than this MEM_EVENTS sequence (the oldest one a page holds)."""
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100


class ActivityOut(msgspec.Struct, kw_only=True):
    activity: list[ActivityItem]
    """Newest first."""
    more: bool
    """Older events remain."""


REDIRECT_SCHEMA = {
    "type": "object",
    "properties": {"viewer": {"type": "string", "format": "uri"}},
    "required": ["viewer"],
}


class ViewerService:
    def __init__(
        self,
        viewer_port: int,
        *,
        rest_port: int = 3111,
        secret_hint: str = "",
        activity: Activity | None = None,
    ) -> None:
        self.viewer_port = viewer_port
        self.rest_port = rest_port
        self.secret_hint = secret_hint
        self.activity = activity or Activity()
        """Shared with the live sockets of this process (the titles it has learnt)."""
        self._store: MemoryStore | None = None

    @property
    def store(self) -> MemoryStore:
        return started(self._store, "the viewer")

    async def start(self, client: Client) -> None:
        self._store = await MemoryStore(client).open()
        self.activity.store = self._store

    async def _between(self, after: int, last: int) -> list[ActivityItem]:
        """The feed lines of the events after `after` up to `last`, newest first."""
        out: list[ActivityItem] = []
        reader = self.store.events.read(after=after)
        async with contextlib.aclosing(reader) as messages:
            async for m in messages:
                if m.seq > last:
                    break
                item = await self.activity.item(m.seq, m.data, m.at)
                if item is not None:
                    out.append(item)
        out.reverse()
        return out

    @operation(
        "mem::viewer::snapshot",
        description="What the viewer shows on load: recent activity, counts, projects and "
        "health, with the MEM_EVENTS sequence to follow live events from.",
        http=Http("GET", "/agentmemory/viewer/snapshot", tags=["viewer"]),
    )
    async def snapshot(self, req: SnapshotIn) -> SnapshotOut:
        st = self.store
        info = await st.events.info()
        after = max(info.first_seq - 1, info.last_seq - req.limit, 0)
        activity = await self._between(after, info.last_seq) if info.messages else []
        sessions, memories, counts, (health, report) = await asyncio.gather(
            st.load_all(st.sessions, Session),
            st.load_all(st.memories, Memory),
            viewer_counts(st),
            health_and_report(st.client),
        )
        current = [m for m in memories if not m.superseded_by]
        projects = sorted({s.project for s in sessions} | {m.project for m in current} - {""})
        parts = await overview(st.client, report)
        at = now_iso()
        level = str((report or {}).get("status") or "")
        ports = (report or {}).get("service", {}).get("ports", {}) if report else {}
        return SnapshotOut(
            seq=info.last_seq,
            at=at,
            activity=activity,
            counts=counts,
            projects=projects,
            health=health,
            version=VERSION,
            more=bool(info.messages) and after >= info.first_seq,
            rest_url=f"http://127.0.0.1:{self.rest_port}",
            secret_hint=self.secret_hint,
            viewer_port=self.viewer_port,
            streams_port=ports.get("streams") if isinstance(ports, dict) else None,
            rest_port=self.rest_port,
            provider=parts.provider,
            embedding_provider=parts.embedding_provider,
            flags=parts.flags,
            graph=parts.graph,
            consolidation=parts.consolidation,
            status="critical" if level == "error" else "degraded" if level == "warn" else "healthy",
            function_metrics=parts.function_metrics,
            indexes=parts.indexes,
            report=report,
            generated_at=at,
        )

    @operation(
        "mem::viewer::counts",
        description="How many records of each kind there are (upstream's viewer counts)",
        http=Http("GET", "/agentmemory/counts", tags=["viewer"]),
    )
    async def counts(self, req: CountsIn) -> CountsOut:
        return CountsOut(counts=await viewer_counts(self.store, req.agent_id))

    @operation(
        "mem::viewer::activity",
        description="Older activity for the viewer's feed: the events before a sequence, "
        "newest first, as the snapshot shows them.",
        http=Http("GET", "/agentmemory/viewer/activity", tags=["viewer"]),
    )
    async def older(self, req: ActivityIn) -> ActivityOut:
        info = await self.store.events.info()
        last = min(req.before - 1, info.last_seq)
        after = max(info.first_seq - 1, last - req.limit, 0)
        items = await self._between(after, last) if info.messages and last > after else []
        return ActivityOut(activity=items, more=after >= info.first_seq)

    @operation(
        "mem::viewer::open",
        description="Open the viewer (a redirect to its port)",
        http=Http(
            "GET",
            "/agentmemory/viewer",
            auth="none",
            status=302,
            summary="Open the viewer: a browser is redirected to the viewer's port",
            tags=["viewer"],
            mode="http",
            response_schema=REDIRECT_SCHEMA,
        ),
    )
    async def open_viewer(self, req: HttpRequest) -> HttpResponse:
        """302 to the viewer on this host's loopback name (the REST port's Host header)."""
        host = urlsplit("//" + req.headers.get("host", "")).hostname or ""
        name = host if host in _LOOPBACK else "127.0.0.1"
        name = f"[{name}]" if ":" in name else name
        where = f"http://{name}:{self.viewer_port}/"
        return HttpResponse(
            status=302,
            headers={"location": where, "cache-control": "no-store"},
            body={"viewer": where},
        )
