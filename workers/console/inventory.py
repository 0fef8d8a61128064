"""What runs on the bus: workers (supervisor status + micro service discovery) and functions
(endpoint metadata + per-endpoint stats), merged for the Workers and Functions pages."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import msgspec
from nats.aio.client import Client as NATS

from engine import Client, FunctionError
from engine import tracing as _tracing


class Endpoint(msgspec.Struct, kw_only=True):
    name: str = ""
    subject: str = ""
    queue_group: str | None = None
    metadata: dict[str, str] | None = None
    num_requests: int = 0
    num_errors: int = 0
    last_error: str = ""
    average_processing_time: int = 0
    data: dict[str, Any] | None = None
    """Our own figures of the endpoint's calls (engine/_worker.py `_Stats.data`)."""


class ServiceReply(msgspec.Struct, kw_only=True):
    """A `$SRV.INFO` or `$SRV.STATS` answer (the fields we read of both)."""

    id: str
    name: str
    version: str = ""
    description: str | None = None
    metadata: dict[str, str] | None = None
    endpoints: list[Endpoint] = msgspec.field(default_factory=list)
    started: str = ""


class WorkerView(msgspec.Struct, kw_only=True):
    name: str
    replica: int | None
    state: str
    pid: int | None
    restarts: int
    functions: list[str]
    started_at: float | None
    last_exit: int | None
    last_seen: float | None
    cpu_s: float | None = None
    rss_mb: float | None = None
    instances: int
    """Micro service instances of this worker that answered the last discovery."""
    supervised: bool


class FunctionView(msgspec.Struct, kw_only=True):
    function_id: str
    description: str
    workers: list[str]
    instances: int
    request_schema: Any = None
    response_schema: Any = None
    http: Any = None
    """Its REST route as declared (method, path, source, statuses …), if it has one."""
    tool: Any = None
    """Its MCP tool as declared (name, description, tier), if it is one."""
    num_requests: int = 0
    num_errors: int = 0
    average_ms: float = 0.0
    last_error: str = ""


class _Status(msgspec.Struct):
    workers: list[dict[str, Any]]
    pid: int | None = None
    started_at: float | None = None


def untraced() -> contextlib.AbstractContextManager[None]:
    """Run bus calls under an unsampled parent, so the console's own polling (status, dead
    letter lists) does not flood the traces it shows. Failures are still kept as lone error
    spans by the engine's tracing."""
    return _tracing.untraced()


async def discover(nc: NATS, verb: str, wait: float = 0.4, settle: float = 0.12) -> list[bytes]:
    """Every answer to a `$SRV.<verb>` request: one per service instance, gathered until
    `settle` seconds pass without a new one (or `wait` in total)."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    out: list[bytes] = []
    try:
        await nc.publish(f"$SRV.{verb}", b"", reply=inbox)
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await sub.next_msg(timeout=min(left, settle if out else left))
            except TimeoutError:  # nats-py's own TimeoutError subclasses it
                break
            out.append(msg.data)
    finally:
        await sub.unsubscribe()
    return out


def _decode_all(raw: list[bytes]) -> list[ServiceReply]:
    out = []
    for data in raw:
        try:
            out.append(msgspec.json.decode(data, type=ServiceReply))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue  # a foreign micro service with another shape: not ours to show
    return out


def _schema(text: str | None) -> Any:
    if not text:
        return None
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        return text


class Inventory:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.last_seen: dict[str, float] = {}

    async def _services(self, verb: str) -> list[ServiceReply]:
        return _decode_all(await discover(self.client.nc, verb))

    async def workers(self) -> list[WorkerView]:
        infos, engine = await asyncio.gather(self._services("INFO"), self._status())
        status = engine.workers
        # A service belongs to a supervised worker by its declared name or, for processes
        # that name themselves differently (the trigger host), by serving the same functions.
        owner: dict[str, str] = {}
        for w in status:
            owner[str(w["name"])] = str(w["name"])
            if w.get("functions"):
                owner[",".join(sorted(w["functions"]))] = str(w["name"])
        counts: dict[str, int] = {}
        served: dict[str, set[str]] = {}
        now = time.time()
        for s in infos:
            own = (s.metadata or {}).get("worker", s.name)
            fns = ",".join(sorted((e.metadata or {}).get("function_id", "") for e in s.endpoints))
            name = owner.get(own) or owner.get(fns) or own
            counts[name] = counts.get(name, 0) + 1
            served.setdefault(name, set()).update(f for f in fns.split(",") if f)
            self.last_seen[name] = now
        views: list[WorkerView] = []
        for w in status:
            name = str(w["name"])
            views.append(
                WorkerView(
                    name=name,
                    replica=w.get("replica"),
                    state=str(w.get("state", "")),
                    pid=w.get("pid"),
                    restarts=int(w.get("restarts", 0)),
                    functions=list(w.get("functions", [])),
                    started_at=w.get("started_at"),
                    last_exit=w.get("last_exit"),
                    last_seen=self.last_seen.get(name),
                    cpu_s=w.get("cpu_s"),
                    rss_mb=w.get("rss_mb"),
                    instances=counts.get(name, 0),
                    supervised=True,
                )
            )
        known = {v.name for v in views}
        for name, n in sorted(counts.items()):
            if name in known:
                continue
            # On the bus but not spawned by this engine: the supervisor itself, another
            # host, or a developer's shell.
            is_sup = name == "engine" and engine.pid is not None
            views.append(
                WorkerView(
                    name=name,
                    replica=None,
                    state="supervisor" if is_sup else "running",
                    pid=engine.pid if is_sup else None,
                    restarts=0,
                    functions=sorted(served.get(name, ())),
                    started_at=engine.started_at if is_sup else None,
                    last_exit=None,
                    last_seen=self.last_seen.get(name),
                    instances=n,
                    supervised=False,
                )
            )
        return views

    async def _status(self) -> _Status:
        try:
            with untraced():
                st: _Status = await self.client.call(
                    "engine::status", None, response=_Status, timeout=2
                )
        except FunctionError:
            return _Status(workers=[])  # no supervisor (a bare nats-server): discovery alone
        return st

    async def functions(self) -> list[FunctionView]:
        infos, stats = await asyncio.gather(self._services("INFO"), self._services("STATS"))
        by_subject: dict[tuple[str, str], Endpoint] = {}
        for s in stats:
            for ep in s.endpoints:
                by_subject[(s.id, ep.subject)] = ep
        views: dict[str, FunctionView] = {}
        for s in infos:
            worker = (s.metadata or {}).get("worker", s.name)
            for ep in s.endpoints:
                meta = ep.metadata or {}
                fid = meta.get("function_id", ep.queue_group or ep.name)
                v = views.get(fid)
                if v is None:
                    v = views[fid] = FunctionView(
                        function_id=fid,
                        description=meta.get("description", ""),
                        workers=[],
                        instances=0,
                        request_schema=_schema(meta.get("request_schema")),
                        response_schema=_schema(meta.get("response_schema")),
                        http=_schema(meta.get("http")),
                        tool=_schema(meta.get("tool")),
                    )
                if worker not in v.workers:
                    v.workers.append(worker)
                v.instances += 1
                st = by_subject.get((s.id, ep.subject))
                if st is not None:
                    total_ns = v.average_ms * 1e6 * v.num_requests
                    total_ns += st.average_processing_time * st.num_requests
                    v.num_requests += st.num_requests
                    # The worker's own count is exact however the endpoint dispatched.
                    errors = (st.data or {}).get("errors")
                    v.num_errors += errors if isinstance(errors, int) else st.num_errors
                    v.average_ms = total_ns / 1e6 / v.num_requests if v.num_requests else 0.0
                    v.last_error = st.last_error or v.last_error
        return sorted(views.values(), key=lambda v: v.function_id)
