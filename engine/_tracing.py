"""OpenTelemetry in every engine process: spans for calls, executions, KV writes and
trigger firings, W3C context in NATS headers, export to a bounded JetStream stream (for
the console) and to OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.

Sampling: ENGINE_TRACE_SAMPLING (0..1, default 1.0) decides at the root; a call that fails
in an unsampled trace is still recorded as a lone error span ("errors always kept").
ENGINE_TRACING=off disables spans entirely.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, TraceIdRatioBased
from opentelemetry.trace import NonRecordingSpan, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACES_STREAM = "ENGINE_TRACES"
TRACES_SUBJECT = "engine.traces"  # engine.traces.<service>
PAYLOAD_LIMIT = 512

_propagator = TraceContextTextMapPropagator()
_tracer: trace.Tracer = trace.NoOpTracer()
_error_tracer: trace.Tracer = trace.NoOpTracer()
_enabled = False

_SECRET_RE = re.compile(
    r"(?i)(sk-[a-z0-9_-]{16,}|gh[pousr]_[a-z0-9]{20,}|github_pat_[a-z0-9_]{20,}|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9a-z_-]{30,}|xox[bap]-[a-z0-9-]{10,}|glpat-[a-z0-9_-]{16,}|npm_[a-z0-9]{30,}"
    r"|eyJ[a-z0-9_-]{8,}\.[a-z0-9_-]{8,}\.[a-z0-9_-]{8,}|bearer\s+[a-z0-9._~+/-]{12,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"
    r"|(?:api[_-]?key|token|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?[^\s\"',}]{4,}"
    r"|://[^/\s:@]+:[^/\s@]+@)"
)


class SpanRecord(msgspec.Struct, omit_defaults=True):
    """A finished span as stored in ENGINE_TRACES (and read by the console)."""

    trace_id: str
    span_id: str
    name: str
    kind: str
    service: str
    start_ns: int
    end_ns: int
    status: str = "UNSET"
    parent_id: str = ""
    status_message: str = ""
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)


def scrub_payload(data: bytes | str) -> str:
    """What a span may record of a payload: truncated, with secret-looking strings masked."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = text[: PAYLOAD_LIMIT * 2]
    text = _SECRET_RE.sub("[REDACTED]", text)
    return text[:PAYLOAD_LIMIT] + ("…" if len(text) > PAYLOAD_LIMIT else "")


def to_record(span: ReadableSpan, service: str) -> SpanRecord:
    ctx = span.get_span_context()
    assert ctx is not None
    parent = span.parent
    return SpanRecord(
        trace_id=f"{ctx.trace_id:032x}",
        span_id=f"{ctx.span_id:016x}",
        parent_id=f"{parent.span_id:016x}" if parent else "",
        name=span.name,
        kind=span.kind.name,
        service=service,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        status=span.status.status_code.name,
        status_message=span.status.description or "",
        attributes=dict(span.attributes or {}),
    )


class JetStreamSpanExporter(SpanExporter):
    """Hands batches of finished spans to the event loop, which publishes them on the bus
    (core publish into the bounded ENGINE_TRACES stream: the exporter never waits on it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, nc: Any, service: str) -> None:
        self.loop = loop
        self.nc = nc
        self.service = service
        self.subject = f"{TRACES_SUBJECT}.{re.sub(r'[^A-Za-z0-9_-]', '_', service)}"
        self._enc = msgspec.json.Encoder()
        self._tasks: set[asyncio.Future[None]] = set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.loop.is_closed() or self.nc.is_closed:
            return SpanExportResult.FAILURE
        payloads = [self._enc.encode(to_record(s, self.service)) for s in spans]

        async def publish() -> None:
            for p in payloads:
                await self.nc.publish(self.subject, p)

        def schedule() -> None:
            t = asyncio.ensure_future(publish())
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)

        try:
            self.loop.call_soon_threadsafe(schedule)
        except RuntimeError:  # loop closed while shutting down
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def setup(
    service: str, nc: Any | None = None, loop: asyncio.AbstractEventLoop | None = None
) -> None:
    """Install the process's tracer provider; idempotent per process."""
    global _tracer, _error_tracer, _enabled
    if os.environ.get("ENGINE_TRACING", "on").lower() in ("off", "0", "false", "no"):
        return
    rate = float(os.environ.get("ENGINE_TRACE_SAMPLING", "1.0"))
    resource = Resource.create({"service.name": service, "service.namespace": "agentmemory"})
    provider = TracerProvider(resource=resource, sampler=ParentBased(TraceIdRatioBased(rate)))
    error_provider = TracerProvider(resource=resource, sampler=ALWAYS_ON)
    processors: list[Any] = []
    if nc is not None:
        processors.append(
            BatchSpanProcessor(
                JetStreamSpanExporter(loop or asyncio.get_running_loop(), nc, service),
                max_queue_size=8192,
                schedule_delay_millis=500,
                max_export_batch_size=512,
            )
        )
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    ):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processors.append(BatchSpanProcessor(OTLPSpanExporter()))
    for p in processors:
        provider.add_span_processor(p)
        error_provider.add_span_processor(p)
    _tracer = provider.get_tracer("engine")
    _error_tracer = error_provider.get_tracer("engine")
    _enabled = True


def enabled() -> bool:
    return _enabled


def shutdown() -> None:
    for t in (_tracer, _error_tracer):
        prov = getattr(t, "_span_processor", None)  # SDK tracer keeps its provider's processor
        if prov is not None:
            prov.force_flush(2000)


def inject(headers: dict[str, str], span: Span | None = None) -> None:
    ctx = trace.set_span_in_context(span) if span is not None else None
    _propagator.inject(headers, context=ctx)


def extract(headers: Mapping[str, str] | None) -> otel_context.Context | None:
    if not headers or "traceparent" not in headers:
        return None
    return _propagator.extract(headers)


def start(
    name: str,
    kind: SpanKind,
    attributes: dict[str, Any] | None = None,
    parent: otel_context.Context | None = None,
) -> Span:
    return _tracer.start_span(name, context=parent, kind=kind, attributes=attributes)


def fail(
    span: Span,
    code: str,
    message: str,
    *,
    name: str,
    kind: SpanKind,
    start_ns: int,
    attributes: dict[str, Any] | None = None,
) -> None:
    """Mark an error; in an unsampled trace, keep it as a lone error span."""
    if not _enabled:
        return
    if not span.is_recording():
        span = _error_tracer.start_span(name, kind=kind, attributes=attributes, start_time=start_ns)
        span.set_status(Status(StatusCode.ERROR, f"{code}: {message}"))
        span.set_attribute("error.type", code)
        span.end()
        return
    span.set_status(Status(StatusCode.ERROR, f"{code}: {message}"))
    span.set_attribute("error.type", code)


def current_span() -> Span:
    return trace.get_current_span()


def attach(span: Span) -> object:
    return otel_context.attach(trace.set_span_in_context(span))


def detach(token: object) -> None:
    otel_context.detach(token)  # type: ignore[arg-type]


__all__ = [
    "TRACES_STREAM",
    "TRACES_SUBJECT",
    "NonRecordingSpan",
    "SpanKind",
    "SpanRecord",
    "attach",
    "current_span",
    "detach",
    "enabled",
    "extract",
    "fail",
    "inject",
    "scrub_payload",
    "setup",
    "shutdown",
    "start",
]
