"""Span construction in engine/_tracing.py: ids from the pooled random source, the sampling
decision at the root, what a child inherits, and the traceparent inject/extract round trip."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import _tracing
from engine.tracing import LeanSpan, SpanContext, SpanKind

pytestmark = pytest.mark.unit

HEX16 = re.compile(r"[0-9a-f]{16}")
HEX32 = re.compile(r"[0-9a-f]{32}")


def test_ids_are_lower_case_hex_of_the_right_width_and_all_distinct() -> None:
    spans = [_tracing.start("s", SpanKind.INTERNAL) for _ in range(3 * _tracing._ID_BATCH)]
    assert all(HEX32.fullmatch(s.trace_id) and HEX16.fullmatch(s.span_id) for s in spans)
    assert len({s.trace_id for s in spans}) == len(spans)
    assert len({s.span_id for s in spans}) == len(spans)


def test_an_all_zero_id_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # One read of zeros except for a single non-zero id: only that one may come out.
    def urandom(n: int) -> bytes:
        return bytes(n - 8) + b"\x00" * 7 + b"\x01"

    monkeypatch.setattr(_tracing.os, "urandom", urandom)
    _tracing._span_ids.clear()
    assert _tracing._new_span_id() == "0000000000000001"
    # The pool is empty again: the next id comes from a new read, not a zero one.
    assert _tracing._span_ids == []
    assert _tracing._new_span_id() == "0000000000000001"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_reuse_the_parents_next_ids() -> None:
    _tracing._new_span_id()  # the pools hold ids now
    _tracing._new_trace_id()
    parent_next = (_tracing._span_ids[-1], _tracing._trace_ids[-1])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(w, f"{_tracing._new_span_id()} {_tracing._new_trace_id()}".encode())
        os._exit(0)
    os.close(w)
    got = os.read(r, 100).decode().split()
    os.waitpid(pid, 0)
    assert got[0] != parent_next[0] and got[1] != parent_next[1]


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0))
def test_the_root_sampling_decision_is_the_ratio_on_the_lower_64_bits(rate: float) -> None:
    saved = _tracing._rate_bound
    _tracing._rate_bound = int(rate * (1 << 64))
    try:
        for _ in range(20):
            span = _tracing.start("root", SpanKind.CLIENT)
            assert span.parent_id == ""
            assert span.sampled == (int(span.trace_id[16:], 16) < _tracing._rate_bound)
            if rate == 1.0:
                assert span.sampled
            if rate == 0.0:
                assert not span.sampled
    finally:
        _tracing._rate_bound = saved


def test_a_child_inherits_trace_parent_and_flag_and_gets_the_default_fields() -> None:
    ctx = SpanContext("ab" * 16, "cd" * 8, False)
    child = _tracing.start("child", SpanKind.SERVER, {"k": "v"}, ctx)
    assert (child.trace_id, child.parent_id, child.sampled) == (ctx.trace_id, ctx.span_id, False)
    assert child.span_id != ctx.span_id
    assert (child.name, child.kind, child.service) == ("child", "SERVER", _tracing._service)
    assert (child.status, child.status_message, child.end_ns) == ("UNSET", "", 0)
    assert child.attributes == {"k": "v"} and child.start_ns > 0

    grandchild = _tracing.start("grandchild", SpanKind.CLIENT, parent=child)
    assert (grandchild.trace_id, grandchild.parent_id) == (ctx.trace_id, child.span_id)
    assert grandchild.attributes == {} and grandchild.sampled is False

    token = _tracing.attach(grandchild)
    try:
        current = _tracing.start("under the current span", SpanKind.INTERNAL)
    finally:
        _tracing.detach(token)
    assert current.parent_id == grandchild.span_id


def test_an_invalid_parent_starts_a_new_trace() -> None:
    span = _tracing.start("root", SpanKind.CLIENT, parent=SpanContext("", "", True))
    assert span.parent_id == "" and HEX32.fullmatch(span.trace_id)


def test_inject_then_extract_gives_back_the_span_context() -> None:
    for sampled in (True, False):
        span = LeanSpan(
            "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "n", "CLIENT", "s", 1, 0
        )
        span.sampled = sampled
        headers: dict[str, str] = {}
        _tracing.inject(headers, span)
        flag = "01" if sampled else "00"
        assert headers == {"traceparent": f"00-{span.trace_id}-{span.span_id}-{flag}"}
        assert _tracing.extract(headers) == span.context

    headers = {}
    _tracing.inject(headers, None)  # no current span: nothing to send
    assert headers == {}
    token = _tracing.current_parent.set(SpanContext("", "", True))
    try:
        _tracing.inject(headers)  # an invalid context is not sent either
    finally:
        _tracing.current_parent.reset(token)
    assert headers == {}


def test_untraced_sets_an_unsampled_context_with_fresh_ids() -> None:
    with _tracing.untraced():
        ctx = _tracing.current_context()
        assert ctx is not None and not ctx.sampled
        assert HEX32.fullmatch(ctx.trace_id) and HEX16.fullmatch(ctx.span_id)
        child = _tracing.start("inside", SpanKind.CLIENT)
    assert child.trace_id == ctx.trace_id and not child.sampled
    assert _tracing.current_context() is None
