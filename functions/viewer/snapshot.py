"""The viewer's operations: the snapshot a page loads before it follows live events
(`GET /agentmemory/viewer/snapshot`), and `GET /agentmemory/viewer`, which sends a browser
to the viewer's own port."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Annotated
from urllib.parse import urlsplit

import msgspec

from engine import Client, FunctionError, Http, HttpRequest, HttpResponse, operation
from engine import tracing as _tracing
from functions.kernel.clock import now_iso
from functions.kernel.owned import started
from functions.kernel.records import LESSONS_BUCKET, Memory, Session
from functions.kernel.store import MemoryStore
from functions.memory.wire import Check
from functions.viewer.activity import ActivityItem, item_of

log = logging.getLogger("functions.viewer")

VERSION = "0.1.0"
STATUS_TIMEOUT = 3.0
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class SnapshotIn(msgspec.Struct, rename="camel", kw_only=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    """Activity items: the newest events of MEM_EVENTS."""


class Counts(msgspec.Struct, kw_only=True):
    sessions: int
    observations: int
    """As the sessions count them."""
    memories: int
    """Current ones (older versions left out)."""
    lessons: int


class HealthView(msgspec.Struct, kw_only=True):
    status: str
    """ok, degraded, or unknown when the status could not be read."""
    checks: list[Check]


class SnapshotOut(msgspec.Struct, kw_only=True):
    seq: int
    """The last MEM_EVENTS sequence the snapshot covers: follow live events after it."""
    at: str
    activity: list[ActivityItem]
    """Newest first."""
    counts: Counts
    projects: list[str]
    """Projects of the stored sessions and memories, for the pages' filters."""
    health: HealthView
    version: str


async def health_of(client: Client) -> HealthView:
    """`mem::status` as the viewer shows it; `unknown` when the memory worker is away."""
    try:
        with _tracing.untraced():
            doc = await client.call("mem::status", None, timeout=STATUS_TIMEOUT)
        checks = msgspec.convert(doc.get("checks", []), list[Check])
        return HealthView(status=str(doc.get("status", "unknown")), checks=checks)
    except (FunctionError, msgspec.ValidationError, AttributeError) as exc:
        detail = exc.message if isinstance(exc, FunctionError) else str(exc)
        return HealthView(
            status="unknown",
            checks=[
                Check(
                    name="memory",
                    ok=False,
                    detail=f"the memory worker did not answer: {detail}",
                    fix="start the engine (`agentmemory start`) and check `agentmemory status`",
                )
            ],
        )


REDIRECT_SCHEMA = {
    "type": "object",
    "properties": {"viewer": {"type": "string", "format": "uri"}},
    "required": ["viewer"],
}


class ViewerService:
    def __init__(self, viewer_port: int) -> None:
        self.viewer_port = viewer_port
        self._store: MemoryStore | None = None

    @property
    def store(self) -> MemoryStore:
        return started(self._store, "the viewer")

    async def start(self, client: Client) -> None:
        self._store = await MemoryStore(client).open()

    @operation(
        "mem::viewer::snapshot",
        description="What the viewer shows on load: recent activity, counts, projects and "
        "health, with the MEM_EVENTS sequence to follow live events from.",
        http=Http("GET", "/agentmemory/viewer/snapshot", tags=["viewer"]),
    )
    async def snapshot(self, req: SnapshotIn) -> SnapshotOut:
        st = self.store
        info = await st.events.info()
        activity: list[ActivityItem] = []
        after = max(info.first_seq - 1, info.last_seq - req.limit, 0)
        if info.messages:
            reader = st.events.read(after=after)
            async with contextlib.aclosing(reader) as messages:
                async for m in messages:
                    if m.seq > info.last_seq:
                        break
                    item = item_of(m.seq, m.data)
                    if item is not None:
                        activity.append(item)
        activity.reverse()
        sessions, memories, lessons, health = await asyncio.gather(
            st.load_all(st.sessions, Session),
            st.load_all(st.memories, Memory),
            self._lesson_count(),
            health_of(st.client),
        )
        current = [m for m in memories if not m.superseded_by]
        projects = sorted({s.project for s in sessions} | {m.project for m in current} - {""})
        return SnapshotOut(
            seq=info.last_seq,
            at=now_iso(),
            activity=activity,
            counts=Counts(
                sessions=len(sessions),
                observations=sum(s.observation_count for s in sessions),
                memories=len(current),
                lessons=lessons,
            ),
            projects=projects,
            health=health,
            version=VERSION,
        )

    async def _lesson_count(self) -> int:
        state = await self.store.client.state(LESSONS_BUCKET)
        return len(await state.keys())

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
