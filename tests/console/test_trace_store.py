"""The console's in-memory span window: bounded, grouped by trace, laid out as a waterfall."""

from __future__ import annotations

import pytest

from engine.tracing import SpanRecord
from workers.console.traces import TraceStore

pytestmark = pytest.mark.unit


def span(trace: str, sid: str, parent: str, start: int, end: int, **kw: object) -> SpanRecord:
    return SpanRecord(
        trace_id=trace,
        span_id=sid,
        parent_id=parent,
        name=str(kw.get("name", sid)),
        kind="SERVER",
        service="t",
        start_ns=start,
        end_ns=end,
        status=str(kw.get("status", "OK")),
        attributes={"faas.invoked_name": kw["fn"]} if "fn" in kw else {},
    )


def test_window_keeps_only_the_newest_spans_and_forgets_empty_traces() -> None:
    store = TraceStore(max_spans=3)
    store.add(span("a" * 32, "1", "", 0, 10))
    store.add(span("b" * 32, "2", "", 5, 10))
    store.add(span("b" * 32, "3", "2", 6, 9))
    store.add(span("c" * 32, "4", "", 7, 8))
    assert len(store.spans) == 3
    assert "a" * 32 not in store.traces
    assert [s.trace_id[0] for s in store.search()] == ["c", "b"]


def test_waterfall_is_depth_first_and_a_missing_parent_makes_a_root() -> None:
    store = TraceStore(max_spans=100)
    t = "d" * 32
    store.add(span(t, "c2", "r", 5_000_000, 6_000_000))
    store.add(span(t, "r", "", 0, 10_000_000))
    store.add(span(t, "c1", "r", 1_000_000, 4_000_000))
    store.add(span(t, "g1", "c1", 2_000_000, 3_000_000))
    store.add(span(t, "orphan", "gone", 8_000_000, 9_000_000))
    detail = store.detail(t)
    assert detail is not None
    order = [(v.span.span_id, v.depth) for v in detail.spans]
    assert order == [("r", 0), ("c1", 1), ("g1", 2), ("c2", 1), ("orphan", 0)]
    assert detail.duration_ms == 10.0
    assert detail.spans[2].offset_ms == 2.0 and detail.spans[2].duration_ms == 1.0


def test_search_matches_function_status_and_minimum_duration() -> None:
    store = TraceStore(max_spans=100)
    store.add(span("e" * 32, "1", "", 0, 50_000_000, fn="x::slow"))
    store.add(span("f" * 32, "2", "", 0, 1_000_000, fn="x::fast", status="ERROR"))
    assert [s.trace_id for s in store.search(function="x::slow")] == ["e" * 32]
    assert [s.trace_id for s in store.search(status="error")] == ["f" * 32]
    assert [s.trace_id for s in store.search(min_ms=10)] == ["e" * 32]
    assert store.search(function="x::fast", status="OK") == []
