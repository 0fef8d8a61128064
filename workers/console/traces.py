"""The spans the console can search: the newest N of ENGINE_TRACES, grouped by trace."""

from __future__ import annotations

from collections import deque
from typing import Any

import msgspec

from engine.tracing import SpanRecord


class TraceSummary(msgspec.Struct, kw_only=True):
    trace_id: str
    root: str
    service: str
    start_ns: int
    duration_ms: float
    spans: int
    status: str
    functions: list[str]


class SpanView(msgspec.Struct, kw_only=True):
    span: SpanRecord
    depth: int
    offset_ms: float
    duration_ms: float


class TraceDetail(msgspec.Struct, kw_only=True):
    trace_id: str
    start_ns: int
    duration_ms: float
    spans: list[SpanView]


# Each message on engine.traces.<service> is a batch: a JSON array of span records.
_decoder = msgspec.json.Decoder(list[SpanRecord])


def _function_of(span: SpanRecord) -> str:
    v: Any = span.attributes.get("faas.invoked_name")
    return v if isinstance(v, str) else ""


class TraceStore:
    def __init__(self, max_spans: int) -> None:
        self.spans: deque[SpanRecord] = deque()
        self.max_spans = max_spans
        self.traces: dict[str, list[SpanRecord]] = {}

    def add_raw(self, data: bytes) -> None:
        for span in _decoder.decode(data):
            self.add(span)

    def add(self, span: SpanRecord) -> None:
        self.spans.append(span)
        self.traces.setdefault(span.trace_id, []).append(span)
        while len(self.spans) > self.max_spans:
            old = self.spans.popleft()
            group = self.traces.get(old.trace_id)
            if group is not None:
                group.remove(old)
                if not group:
                    del self.traces[old.trace_id]

    def summary(self, trace_id: str, group: list[SpanRecord]) -> TraceSummary:
        start = min(s.start_ns for s in group)
        end = max(s.end_ns for s in group)
        ids = {s.span_id for s in group}
        # The root is the earliest span whose parent we do not hold (a trace may start in
        # an unsampled caller, or its first spans may have aged out).
        roots = [s for s in group if not s.parent_id or s.parent_id not in ids] or group
        root = min(roots, key=lambda s: s.start_ns)
        fns = sorted({f for f in map(_function_of, group) if f})
        return TraceSummary(
            trace_id=trace_id,
            root=root.name,
            service=root.service,
            start_ns=start,
            duration_ms=(end - start) / 1e6,
            spans=len(group),
            status="ERROR" if any(s.status == "ERROR" for s in group) else "OK",
            functions=fns,
        )

    def search(
        self, function: str = "", status: str = "", min_ms: float = 0.0, limit: int = 100
    ) -> list[TraceSummary]:
        out: list[TraceSummary] = []
        want_status = status.upper()
        for tid, group in self.traces.items():
            if function and not any(
                _function_of(s) == function or function in s.name for s in group
            ):
                continue
            summ = self.summary(tid, group)
            if want_status and summ.status != want_status:
                continue
            if summ.duration_ms < min_ms:
                continue
            out.append(summ)
        out.sort(key=lambda s: s.start_ns, reverse=True)
        return out[:limit]

    def detail(self, trace_id: str) -> TraceDetail | None:
        group = self.traces.get(trace_id)
        if not group:
            return None
        start = min(s.start_ns for s in group)
        end = max(s.end_ns for s in group)
        children: dict[str, list[SpanRecord]] = {}
        ids = {s.span_id for s in group}
        roots: list[SpanRecord] = []
        for s in sorted(group, key=lambda s: s.start_ns):
            if s.parent_id and s.parent_id in ids:
                children.setdefault(s.parent_id, []).append(s)
            else:
                roots.append(s)
        ordered: list[SpanView] = []

        # Depth-first, children by start time: the order a waterfall is read in.
        def walk(s: SpanRecord, depth: int) -> None:
            ordered.append(
                SpanView(
                    span=s,
                    depth=depth,
                    offset_ms=(s.start_ns - start) / 1e6,
                    duration_ms=(s.end_ns - s.start_ns) / 1e6,
                )
            )
            for c in children.get(s.span_id, []):
                walk(c, depth + 1)

        for r in roots:
            walk(r, 0)
        return TraceDetail(
            trace_id=trace_id, start_ns=start, duration_ms=(end - start) / 1e6, spans=ordered
        )
