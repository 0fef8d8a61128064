"""Traces (search, one trace as a waterfall) and logs (filtered by trace, level, service)."""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engine import FunctionError
from workers.console.hub import hub
from workers.console.web import json_response, query_float, query_int

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


def _trace_id(value: str, field: str) -> str:
    if value and not _TRACE_ID.match(value):
        raise FunctionError("BAD_REQUEST", f"{field} must be 32 lowercase hex digits", field=field)
    return value


async def traces(request: Request) -> Response:
    q = request.query_params
    status = q.get("status", "")
    if status.upper() not in ("", "OK", "ERROR"):
        raise FunctionError("BAD_REQUEST", "status must be OK or ERROR", field="status")
    found = hub(request).traces.search(
        function=q.get("function", ""),
        status=status,
        min_ms=query_float(request, "min_ms", 0.0),
        limit=query_int(request, "limit", 100, 1, 1000),
    )
    return json_response({"traces": found, "held_spans": len(hub(request).traces.spans)})


async def trace(request: Request) -> Response:
    tid = _trace_id(request.path_params["trace_id"], "trace_id")
    detail = hub(request).traces.detail(tid)
    if detail is None:
        # Spans reach the console up to a second after the call ended (batched export).
        raise FunctionError("NOT_FOUND", f"no spans of trace {tid} yet", retryable=True)
    return json_response(detail)


async def logs(request: Request) -> Response:
    q = request.query_params
    found = hub(request).logs.search(
        trace_id=_trace_id(q.get("trace_id", ""), "trace_id"),
        level=q.get("level", ""),
        service=q.get("service", ""),
        text=q.get("q", ""),
        limit=query_int(request, "limit", 200, 1, 5000),
    )
    return json_response({"logs": found})


routes = [
    Route("/api/traces", traces),
    Route("/api/traces/{trace_id}", trace),
    Route("/api/logs", logs),
]
