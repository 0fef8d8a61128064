"""Tracing in every engine process: spans for calls, executions, KV writes and trigger
firings; W3C trace context in NATS headers; export to a bounded JetStream stream (for the
console) and over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.

Why spans are recorded here and not with the SDK's `Tracer.start_span`: on this 2-core
machine the SDK's span start+end costs 25–50 µs (attribute cleaning, locks, a processor
thread), more than a whole engine call (ops/bench/invoke.py: traced/untraced throughput
0.32 with the SDK). A call site records a `LeanSpan` (ids, times, a few attributes) in
≈ 2 µs; a loop task publishes finished spans in batches; the OTLP path converts them into
the SDK's `ReadableSpan` and hands them to the SDK's own OTLP exporter.

Sampling: ENGINE_TRACE_SAMPLING (0..1, default 1.0) decides at the root from the trace id;
children follow the parent's flag. A span that ends in error is kept even when its trace
was not sampled ("errors always kept"). ENGINE_TRACING=off disables spans entirely.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import re
import time
from collections.abc import Iterator, Mapping
from enum import Enum
from typing import Any

import msgspec

from engine.settings import engine_settings, worker_identity

log = logging.getLogger("engine.tracing")

TRACES_STREAM = "ENGINE_TRACES"
TRACES_SUBJECT = "engine.traces"  # engine.traces.<service>
PAYLOAD_LIMIT = 512
FLUSH_INTERVAL = 0.5
MAX_BUFFER = 20_000
BATCH = 256

_TRACEPARENT_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
_SAMPLED_FLAGS = frozenset(f"{i:02x}" for i in range(256) if i & 1)
_SECRET_RE = re.compile(
    r"(?i)(sk-[a-z0-9_-]{16,}|gh[pousr]_[a-z0-9]{20,}|github_pat_[a-z0-9_]{20,}|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9a-z_-]{30,}|xox[bap]-[a-z0-9-]{10,}|glpat-[a-z0-9_-]{16,}|npm_[a-z0-9]{30,}"
    r"|eyJ[a-z0-9_-]{8,}\.[a-z0-9_-]{8,}\.[a-z0-9_-]{8,}|bearer\s+[a-z0-9._~+/-]{12,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"
    r"|(?:api[_-]?key|token|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?[^\s\"',}]{4,}"
    r"|://[^/\s:@]+:[^/\s@]+@)"
)


class SpanKind(Enum):
    INTERNAL = 0
    SERVER = 1
    CLIENT = 2
    PRODUCER = 3
    CONSUMER = 4


class SpanRecord(msgspec.Struct, omit_defaults=True):
    """A finished span as stored in ENGINE_TRACES (and read by the console); each message
    on engine.traces.<service> holds a JSON array of these."""

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


class SpanContext(msgspec.Struct, frozen=True):
    """Ids as the lower-case hex of W3C trace context: they cross the bus and land in span
    records as they are, so the hot path never formats or parses an integer."""

    trace_id: str
    span_id: str
    sampled: bool

    @property
    def is_valid(self) -> bool:
        return bool(self.trace_id) and bool(self.span_id)


class LeanSpan(SpanRecord, gc=False):
    """A span being recorded; encoded as it stands into ENGINE_TRACES (a SpanRecord with one
    more field), so export copies nothing. Untracked by the collector: it holds no cycle."""

    sampled: bool = True
    """Written only for an unsampled span kept for its error."""

    @property
    def context(self) -> SpanContext:
        return SpanContext(self.trace_id, self.span_id, self.sampled)

    @property
    def is_valid(self) -> bool:
        return True

    def get_span_context(self) -> SpanContext:
        return self.context

    def is_recording(self) -> bool:
        return self.sampled

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def set_error(self, code: str, message: str) -> None:
        self.status = "ERROR"
        self.status_message = f"{code}: {message}"
        self.attributes["error.type"] = code

    def end(self) -> None:
        if self.end_ns:
            return
        self.end_ns = time.time_ns()
        # Kept when sampled, and always when it failed.
        if _exporter is not None and (self.sampled or self.status == "ERROR"):
            buffer = _exporter.buffer
            if not buffer:
                _exporter.pending.set()
            buffer.append(self)


# The current span itself (or a context from outside): a parent needs only its ids and flag,
# and building a SpanContext per attach and inject was a measurable part of a traced call.
Parent = SpanContext | LeanSpan
current_parent: contextvars.ContextVar[Parent | None] = contextvars.ContextVar(
    "engine_span", default=None
)
"""The parent of a span started now. The call and execution paths set it themselves
(`attach` without the function call)."""
active = False
"""Tracing is on in this process (`setup` ran, not paused): read on every call, so a
module attribute rather than `enabled()`."""
_service = ""
_rate_bound = 1 << 64
_exporter: _Exporter | None = None


_ID_BATCH = 256
_SAMPLE_ALL = 1 << 64
# Random ids not handed out yet (lower-case hex, never all zero), taken from the end.
_trace_ids: list[str] = []
_span_ids: list[str] = []


def _refill(pool: list[str], nbytes: int) -> str:
    """Fill `pool` with _ID_BATCH ids from one os.urandom read, hex-formatted and split in C
    (a getrandbits and a format per id cost several times more); returns one of them."""
    zero = "00" * nbytes
    while not pool:
        ids = os.urandom(nbytes * _ID_BATCH).hex(" ", nbytes).split(" ")
        pool.extend(ids if zero not in ids else [i for i in ids if i != zero])
    return pool.pop()


def _reseed() -> None:
    # A forked child must not hand out the ids its parent has already read.
    _trace_ids.clear()
    _span_ids.clear()


os.register_at_fork(after_in_child=_reseed)


def _new_trace_id() -> str:
    try:
        return _trace_ids.pop()
    except IndexError:
        return _refill(_trace_ids, 16)


def _new_span_id() -> str:
    try:
        return _span_ids.pop()
    except IndexError:
        return _refill(_span_ids, 8)


def start(
    name: str,
    kind: SpanKind,
    attributes: dict[str, Any] | None = None,
    parent: Parent | None = None,
) -> LeanSpan:
    """A span under `parent`, else under the current span, else a new root."""
    if parent is None:
        parent = current_parent.get()
    try:
        span_id = _span_ids.pop()
    except IndexError:
        span_id = _refill(_span_ids, 8)
    # Positional: the fields in declaration order (keywords cost more per span). A LeanSpan
    # is always a valid parent: no property call for the common case.
    if parent is not None and (parent.__class__ is LeanSpan or parent.is_valid):
        return LeanSpan(
            parent.trace_id,
            span_id,
            name,
            kind._name_,  # the stored name: `.name` is a property, 10x slower
            _service,
            time.time_ns(),
            0,
            "UNSET",
            parent.span_id,
            "",
            attributes if attributes is not None else {},
            parent.sampled,
        )
    trace_id = _new_trace_id()
    return LeanSpan(
        trace_id,
        span_id,
        name,
        kind._name_,
        _service,
        time.time_ns(),
        0,
        "UNSET",
        "",
        "",
        attributes if attributes is not None else {},
        # A new root: the same decision as OTel's TraceIdRatioBased, on the lower 64 bits.
        _rate_bound == _SAMPLE_ALL or int(trace_id[16:], 16) < _rate_bound,
    )


def extract(headers: Mapping[str, str] | None) -> SpanContext | None:
    if not headers:
        return None
    tp = headers.get("traceparent")
    if not tp:
        return None
    m = _TRACEPARENT_RE.match(tp) or _TRACEPARENT_RE.match(tp.strip().lower())
    if not m:
        return None
    trace_id, span_id, flags = m.group(1, 2, 3)
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None  # all-zero ids are invalid in W3C trace context
    return SpanContext(trace_id, span_id, flags in _SAMPLED_FLAGS)


def inject(headers: dict[str, str], span: LeanSpan | None = None) -> None:
    ctx = span if span is not None else current_parent.get()
    if ctx is not None and (ctx.__class__ is LeanSpan or ctx.is_valid):
        headers["traceparent"] = f"00-{ctx.trace_id}-{ctx.span_id}-{'01' if ctx.sampled else '00'}"


def attach(span: LeanSpan) -> contextvars.Token[Parent | None]:
    return current_parent.set(span)


def detach(token: Any) -> None:
    current_parent.reset(token)


def current_context() -> SpanContext | None:
    ctx = current_parent.get()
    return ctx.context if isinstance(ctx, LeanSpan) else ctx


def current_span() -> Any:
    """The current span's context holder: `.is_recording()`, `.get_span_context()`."""
    ctx = current_parent.get()
    if ctx is None:
        return _INVALID
    return ctx if isinstance(ctx, LeanSpan) else _ContextView(ctx)


class _ContextView:
    __slots__ = ("context",)

    def __init__(self, context: SpanContext) -> None:
        self.context = context

    def is_recording(self) -> bool:
        return self.context.sampled

    def get_span_context(self) -> SpanContext:
        return self.context


_INVALID = _ContextView(SpanContext("", "", False))


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """Calls made inside are part of an unsampled trace (errors are still kept)."""
    token = current_parent.set(SpanContext(_new_trace_id(), _new_span_id(), False))
    try:
        yield
    finally:
        current_parent.reset(token)


def fail(span: LeanSpan, code: str, message: str, **_: Any) -> None:
    """Mark a span as failed; it is then exported even if its trace was not sampled."""
    span.set_error(code, message)


def scrub_payload(data: bytes | str) -> str:
    """What a span may record of a payload: truncated, with secret-looking strings masked."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = text[: PAYLOAD_LIMIT * 2]
    text = _SECRET_RE.sub("[REDACTED]", text)
    return text[:PAYLOAD_LIMIT] + ("…" if len(text) > PAYLOAD_LIMIT else "")


class _Exporter:
    """Drains finished spans every FLUSH_INTERVAL: JSON on the bus, and OTLP if configured."""

    def __init__(self, service: str, nc: Any) -> None:
        self.service = service
        self.nc = nc
        self.subject = f"{TRACES_SUBJECT}.{re.sub(r'[^A-Za-z0-9_-]', '_', service)}"
        self.buffer: list[LeanSpan] = []
        self.pending = asyncio.Event()
        """Set when the buffer gets its first span: an idle process never wakes to flush."""
        self.enc = msgspec.json.Encoder()
        self.otlp: Any = None
        self.resource: Any = None
        settings = engine_settings()
        if settings.otlp_endpoint or settings.otlp_traces_endpoint:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource

            self.otlp = OTLPSpanExporter()
            self.resource = Resource.create(
                {
                    "service.name": service,
                    # The instance's layout name (the supervisor passes it to workers).
                    "service.namespace": worker_identity().namespace,
                }
            )
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        while True:
            await self.pending.wait()
            await asyncio.sleep(FLUSH_INTERVAL)  # spans of the next calls join this batch
            self.pending.clear()
            await self.flush()

    async def flush(self) -> None:
        if not self.buffer:
            return
        spans, self.buffer = self.buffer, []
        if len(spans) > MAX_BUFFER:  # a stalled bus must not grow memory without bound
            spans = spans[-MAX_BUFFER:]
        if not self.nc.is_closed:
            try:
                # One message per batch: per-span messages cost more than the spans.
                for i in range(0, len(spans), BATCH):
                    await self.nc.publish(self.subject, self.enc.encode(spans[i : i + BATCH]))
            except Exception as exc:  # reconnecting: the spans are dropped, the calls are not
                log.debug("span export to the bus failed: %s", exc)
        if self.otlp is not None:
            await asyncio.to_thread(self._export_otlp, spans)

    def _export_otlp(self, spans: list[LeanSpan]) -> None:
        from opentelemetry import trace as api
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import Status, StatusCode

        out = []
        for s in spans:
            flags = api.TraceFlags(api.TraceFlags.SAMPLED)
            tid, sid = int(s.trace_id, 16), int(s.span_id, 16)
            ctx = api.SpanContext(tid, sid, is_remote=False, trace_flags=flags)
            parent = (
                api.SpanContext(tid, int(s.parent_id, 16), is_remote=True, trace_flags=flags)
                if s.parent_id
                else None
            )
            status = Status(StatusCode.ERROR, s.status_message) if s.status == "ERROR" else Status()
            out.append(
                ReadableSpan(
                    name=s.name,
                    context=ctx,
                    parent=parent,
                    resource=self.resource,
                    attributes=s.attributes,
                    kind=api.SpanKind[s.kind],
                    status=status,
                    start_time=s.start_ns,
                    end_time=s.end_ns,
                )
            )
        try:
            self.otlp.export(out)
        except Exception as exc:
            log.warning("OTLP export failed: %s", exc)


def setup(
    service: str, nc: Any | None = None, loop: asyncio.AbstractEventLoop | None = None
) -> None:
    """Turn tracing on for this process (unless ENGINE_TRACING=off)."""
    global active, _rate_bound, _exporter, _service
    settings = engine_settings()
    if not settings.tracing:
        return
    _service = service
    rate = settings.trace_sampling
    _rate_bound = int(rate * (1 << 64))
    active = True
    if nc is not None:
        _exporter = _Exporter(service, nc)
        _exporter.task = (loop or asyncio.get_running_loop()).create_task(_exporter.run())


def enabled() -> bool:
    return active


def set_enabled(on: bool) -> None:
    """Pause (or resume) tracing in this process once `setup` ran: benchmarks compare
    traced and untraced calls in one process."""
    global active
    active = bool(on) and _service != ""


async def shutdown() -> None:
    """Publish what is buffered (called while draining, before the connection closes)."""
    if _exporter is not None:
        if _exporter.task is not None:
            _exporter.task.cancel()
        await _exporter.flush()
