"""Workers, functions (with invoke), and triggers (fire a cron now, test an HTTP route)."""

from __future__ import annotations

import logging
import time
from typing import Any, Literal

import httpx
import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engine import TRIGGERS_BUCKET, Bucket, FunctionError, TriggerSpec
from engine import tracing as _tracing
from engine.protocol import validate_function_id
from engine.tracing import SpanKind
from workers.console.hub import hub
from workers.console.web import json_response, read_json

log = logging.getLogger("console.invoke")


class InvokeIn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    function_id: str
    payload: Any = None
    timeout: float = 30.0


class InvokeOut(msgspec.Struct, kw_only=True):
    ok: bool
    function_id: str
    duration_ms: float
    trace_id: str
    """Empty when this call's trace is not recorded (tracing off, or not sampled)."""
    result: Any = None
    error: dict[str, Any] | None = None


class HttpTestIn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = "GET"
    path: str
    body: Any = None
    query: dict[str, str] = msgspec.field(default_factory=dict)


class HttpTestOut(msgspec.Struct, kw_only=True):
    status: int
    headers: dict[str, str]
    body: str
    duration_ms: float
    trace_id: str


class FireIn(msgspec.Struct, kw_only=True):
    id: str


def _trace_id(span: Any) -> str:
    # Empty when the trace is not recorded (tracing off, or ENGINE_TRACE_SAMPLING left this
    # one out): the page then offers no link to a waterfall that will never fill.
    ctx = span.get_span_context()
    return str(ctx.trace_id) if ctx.is_valid and span.is_recording() else ""


async def workers(request: Request) -> Response:
    return json_response({"workers": await hub(request).inventory.workers()})


async def functions(request: Request) -> Response:
    return json_response({"functions": await hub(request).inventory.functions()})


async def invoke(request: Request) -> Response:
    body = await read_json(request, InvokeIn)
    try:
        validate_function_id(body.function_id)
    except ValueError as exc:
        raise FunctionError("BAD_REQUEST", str(exc), field="function_id") from None
    if not 0 < body.timeout <= 300:
        raise FunctionError("BAD_REQUEST", "timeout must be in (0, 300] seconds", field="timeout")
    return json_response(await traced_call(request, body.function_id, body.payload, body.timeout))


async def traced_call(
    request: Request, function_id: str, payload: Any, timeout: float
) -> InvokeOut:
    """A call under a console span, so the page can open the whole trace afterwards."""
    span = _tracing.start(
        f"console invoke {function_id}",
        SpanKind.SERVER,
        {"http.route": request.url.path, "console.function": function_id},
    )
    token = _tracing.attach(span)
    started = time.perf_counter()
    started_ns = time.time_ns()
    try:
        result = await hub(request).client.call(function_id, payload, timeout=timeout)
        return InvokeOut(
            ok=True,
            function_id=function_id,
            result=result,
            duration_ms=(time.perf_counter() - started) * 1e3,
            trace_id=_trace_id(span),
        )
    except FunctionError as err:
        # Logged inside the span: the logs page finds it by the trace id.
        log.warning("console invoke %s failed: %s: %s", function_id, err.code, err.message)
        _tracing.fail(
            span,
            err.code,
            err.message,
            name=f"console invoke {function_id}",
            kind=SpanKind.SERVER,
            start_ns=started_ns,
        )
        return InvokeOut(
            ok=False,
            function_id=function_id,
            error=err.to_dict(),
            duration_ms=(time.perf_counter() - started) * 1e3,
            trace_id=_trace_id(span),
        )
    finally:
        _tracing.detach(token)
        span.end()


async def triggers(request: Request) -> Response:
    h = hub(request)
    try:
        kv = await h.client.nc.jetstream().key_value(TRIGGERS_BUCKET)
    except Exception:
        return json_response({"triggers": []})  # no worker has declared one yet
    store = Bucket(kv, TRIGGERS_BUCKET, h.client.connection)
    out: list[TriggerSpec] = []
    for key in await store.keys():
        raw: Any = await store.get(key, Any)
        if raw is None:
            continue
        try:
            out.append(msgspec.convert(raw, TriggerSpec))
        except (msgspec.ValidationError, ValueError):
            continue  # a malformed declaration: the trigger workers skip it too
    out.sort(key=lambda t: (t.kind, t.function_id, t.id))
    return json_response({"triggers": out})


async def fire_cron(request: Request) -> Response:
    tid = request.path_params["id"]
    return json_response(await traced_call(request, "engine::cron-fire", FireIn(id=tid), 10.0))


async def http_test(request: Request) -> Response:
    body = await read_json(request, HttpTestIn)
    if not body.path.startswith("/") or body.path.startswith("//") or "\\" in body.path:
        raise FunctionError("BAD_REQUEST", "path must be an absolute path like /x/y", field="path")
    h = hub(request)
    name = f"console http-test {body.method} {body.path}"
    span = _tracing.start(
        name,
        SpanKind.CLIENT,
        {"http.request.method": body.method, "url.path": body.path},
    )
    headers = {"authorization": f"Bearer {h.settings.secret}"}
    _tracing.inject(headers, span)
    content = None
    if body.body is not None and body.method not in ("GET", "HEAD"):
        content = msgspec.json.encode(body.body)
        headers["content-type"] = "application/json"
    started = time.perf_counter()
    started_ns = time.time_ns()
    try:
        resp = await h.http.request(
            body.method,
            f"http://127.0.0.1:{h.settings.rest_port}{body.path}",
            params=body.query or None,
            content=content,
            headers=headers,
        )
    except httpx.HTTPError as exc:
        _tracing.fail(
            span, "UNAVAILABLE", str(exc), name=name, kind=SpanKind.CLIENT, start_ns=started_ns
        )
        span.end()
        raise FunctionError(
            "UNAVAILABLE", f"REST port {h.settings.rest_port} did not answer: {exc}"
        ) from None
    span.set_attribute("http.response.status_code", resp.status_code)
    span.end()
    return json_response(
        HttpTestOut(
            status=resp.status_code,
            headers={k: v for k, v in resp.headers.items() if k.lower() != "set-cookie"},
            body=resp.text[:65536],
            duration_ms=(time.perf_counter() - started) * 1e3,
            trace_id=_trace_id(span),
        )
    )


routes = [
    Route("/api/workers", workers),
    Route("/api/functions", functions),
    Route("/api/invoke", invoke, methods=["POST"]),
    Route("/api/triggers", triggers),
    Route("/api/triggers/cron/{id}/fire", fire_cron, methods=["POST"]),
    Route("/api/triggers/http-test", http_test, methods=["POST"]),
]
