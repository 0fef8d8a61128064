"""Registration: every memory operation as a bus function `mem::<name>` (typed request)
and as a REST route `/agentmemory/<path>` served by an http trigger through the function
`mem::rest::<name>` (HttpRequest in, HttpResponse out, upstream status codes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from engine import Context, FunctionError, HttpRequest, HttpResponse, Worker, invalid_request
from functions.memory.schemas import response_schema
from functions.memory.service import MemoryService
from functions.memory.status import status_html
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
)

PREFIX = "/agentmemory/"
_OBSERVE_STATUS = {"accepted": 201, "duplicate": 200, "retrying": 202}


class Empty(msgspec.Struct):
    pass


Call = Callable[[MemoryService, Any], Awaitable[Any]]


@dataclass(frozen=True)
class Op:
    name: str
    method: str
    path: str
    request: Any
    call: Call
    summary: str
    status: int = 200
    auth: str = "bearer"
    source: str = "body"
    """Where the request comes from on REST: body, query, path or none."""


def _ops() -> list[Op]:
    return [
        Op("livez", "GET", "livez", Empty, lambda s, r: s.livez(), "Liveness", auth="none", source="none"),
        Op("health", "GET", "health", Empty, lambda s, r: s.health(), "Health", auth="none", source="none"),
        Op("status", "GET", "status", Empty, lambda s, r: s.status(), "What is wrong and how to fix it", source="none"),
        Op("observe", "POST", "observe", ObserveIn, lambda s, r: s.observe(r), "Record a hook observation", status=201),
        Op("session-start", "POST", "session/start", SessionStartIn, lambda s, r: s.session_start(r), "Start (or resume) a session; returns context"),
        Op("session-end", "POST", "session/end", SessionEndIn, lambda s, r: s.session_end(r), "End a session (idempotent)"),
        Op("remember", "POST", "remember", RememberIn, lambda s, r: s.remember(r), "Save a memory", status=201),
        Op("forget", "POST", "forget", ForgetIn, lambda s, r: s.forget(r), "Forget memories, observations or a session"),
        Op("governance-delete", "DELETE", "governance/memories", ForgetIn, lambda s, r: s.governance_delete(r), "Delete memories (audited)"),
        Op("sessions", "GET", "sessions", ListIn, lambda s, r: s.sessions(r), "List sessions", source="query"),
        Op("observations", "GET", "observations", ListIn, lambda s, r: s.observations(r), "List observations (?sessionId=)", source="query"),
        Op("observation", "GET", "observations/{id}", GetIn, lambda s, r: s.observation(r), "One observation", source="path"),
        Op("memories", "GET", "memories", ListIn, lambda s, r: s.memories(r), "List current memories", source="query"),
        Op("memory", "GET", "memories/{id}", GetIn, lambda s, r: s.memory(r), "One memory with its older versions", source="path"),
        Op("audit", "GET", "audit", ListIn, lambda s, r: s.audit(r), "Audit log, newest first", source="query"),
        Op("export", "GET", "export", ExportIn, lambda s, r: s.export(r), "Export (?maxSessions=&offset=)", source="query"),
        Op("import", "POST", "import", ImportIn, lambda s, r: s.import_(r), "Import an export (strategy merge|replace|skip)"),
        Op("capture", "GET", "capture", ListIn, lambda s, r: s.capture(r), "Capture inbox and dead letters", source="query"),
        Op("capture-retry", "POST", "capture/retry", CaptureRetryIn, lambda s, r: s.capture_retry(r), "Replay the inbox and dead letters"),
    ]  # fmt: skip


OPS = _ops()


def decode_rest(op: Op, req: HttpRequest) -> Any:
    agent = req.headers.get("x-agent-id", "")
    try:
        if op.source == "body":
            out = req.json(op.request)
        elif op.source == "query":
            out = msgspec.convert(req.query, op.request, strict=False)
        elif op.source == "path":
            out = msgspec.convert({**req.query, **req.path_params}, op.request, strict=False)
        else:
            return Empty()
    except msgspec.ValidationError as exc:
        raise invalid_request(exc) from None
    except msgspec.DecodeError as exc:
        raise FunctionError("BAD_REQUEST", f"body is not valid JSON: {exc}", field="body") from None
    if agent and hasattr(out, "agent_id") and not out.agent_id:
        out.agent_id = agent
    return out


def _status(op: Op, result: Any) -> int:
    if isinstance(result, ObserveOut):
        return _OBSERVE_STATUS[result.status]
    return op.status


def register(worker: Worker, service: MemoryService | None = None) -> MemoryService:
    svc = service or MemoryService()
    worker.on_start(svc.start)
    worker.on_stop(svc.stop)
    for op in OPS:
        _register_bus(worker, svc, op)
        _register_rest(worker, svc, op)
    return svc


def _register_bus(worker: Worker, svc: MemoryService, op: Op) -> None:
    async def handler(req: Any, ctx: Context) -> Any:
        return await op.call(svc, req)

    worker.function(
        f"mem::{op.name}",
        description=op.summary,
        request=op.request,
        response=ObserveOut if op.name == "observe" else Any,
    )(handler)


def _register_rest(worker: Worker, svc: MemoryService, op: Op) -> None:
    fid = f"mem::rest::{op.name}"

    async def handler(req: HttpRequest, ctx: Context) -> HttpResponse:
        payload = decode_rest(op, req)
        result = await op.call(svc, payload)
        if op.name == "status" and "text/html" in req.headers.get("accept", ""):
            return HttpResponse(
                status=200, body=status_html(result), content_type="text/html; charset=utf-8"
            )
        return HttpResponse(status=_status(op, result), body=result)

    worker.function(fid, description=op.summary, request=HttpRequest, response=HttpResponse)(
        handler
    )
    config: dict[str, Any] = {
        "method": op.method,
        "path": PREFIX + op.path,
        "auth": op.auth,
        "summary": op.summary,
        "tags": ["memory"],
        "status": op.status,
        "max_body": 8 * 1024 * 1024 if op.name == "import" else 1024 * 1024,
    }
    if op.source == "body":
        config["body_schema"] = msgspec.json.schema(op.request)
    schema = response_schema(op.name)
    if schema is not None:
        config["response_schema"] = schema
    worker.trigger("http", fid, **config)
