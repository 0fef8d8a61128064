"""Streams traced like calls: a publish inside a recorded trace is a PRODUCER child that
carries `traceparent`, and a follower's handler runs under a CONSUMER span continuing it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from engine import Client, StreamMessage, _tracing
from engine.tracing import LeanSpan, SpanContext, SpanKind


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[LeanSpan]]:
    """Tracing on in this process, every finished span collected."""
    sink = SimpleNamespace(buffer=[], pending=asyncio.Event())
    monkeypatch.setattr(_tracing, "active", True)
    monkeypatch.setattr(_tracing, "_rate_bound", _tracing._SAMPLE_ALL)
    monkeypatch.setattr(_tracing, "_exporter", sink)
    yield sink.buffer


async def _follow(client: Client) -> tuple[object, asyncio.Queue[tuple[StreamMessage, object]]]:
    ev = await client.stream("EV", subjects=["ev.>"]).ensure()
    got: asyncio.Queue[tuple[StreamMessage, object]] = asyncio.Queue()

    async def handler(m: StreamMessage) -> None:
        await got.put((m, _tracing.current_context()))

    return await ev.follow(handler), got


async def test_a_publish_in_a_traced_call_is_a_child_and_the_consumer_continues_it(
    client: Client, spans: list[LeanSpan]
) -> None:
    follower, got = await _follow(client)
    ev = client.stream("EV")
    call = _tracing.start("call", SpanKind.SERVER)
    token = _tracing.attach(call)
    try:
        await ev.publish("ev.x", {"n": 1}, msg_id="m1")
    finally:
        _tracing.detach(token)
        call.end()
    msg, seen_ctx = await asyncio.wait_for(got.get(), 5)
    await asyncio.sleep(0.05)  # the consumer span ends after the handler returns
    await follower.stop()  # type: ignore[attr-defined]

    (producer,) = [s for s in spans if s.kind == "PRODUCER"]
    (consumer,) = [s for s in spans if s.kind == "CONSUMER"]
    assert producer.trace_id == call.trace_id and producer.parent_id == call.span_id
    assert producer.name == "publish EV"
    assert producer.attributes["messaging.destination.name"] == "ev.x"
    assert producer.attributes["messaging.message.id"] == "m1"
    assert consumer.trace_id == call.trace_id and consumer.parent_id == producer.span_id
    assert consumer.name == "process EV" and consumer.end_ns >= consumer.start_ns
    # The handler ran under the consumer span.
    assert isinstance(seen_ctx, SpanContext) and seen_ctx.span_id == consumer.span_id

    # The stored message carries the producer's context.
    stored = await client.nc.jetstream().get_msg("EV", msg.seq)
    assert stored.headers is not None
    assert stored.headers["traceparent"] == f"00-{call.trace_id}-{producer.span_id}-01"


async def test_a_publish_outside_a_trace_makes_no_span_and_its_handler_runs_untraced(
    client: Client, spans: list[LeanSpan]
) -> None:
    # The follower is made under a span: its handler must not inherit it.
    outer = _tracing.start("unrelated", SpanKind.INTERNAL)
    token = _tracing.attach(outer)
    try:
        follower, got = await _follow(client)
    finally:
        _tracing.detach(token)
    ack = await client.stream("EV").publish("ev.x", b"{}")
    msg, seen_ctx = await asyncio.wait_for(got.get(), 5)
    await follower.stop()  # type: ignore[attr-defined]
    assert msg.seq == ack.seq
    assert seen_ctx is None
    assert [s for s in spans if s.kind in ("PRODUCER", "CONSUMER")] == []
    stored = await client.nc.jetstream().get_msg("EV", ack.seq)
    assert "traceparent" not in (stored.headers or {})


async def test_a_failed_publish_marks_its_span(client: Client, spans: list[LeanSpan]) -> None:
    call = _tracing.start("call", SpanKind.SERVER)
    token = _tracing.attach(call)
    try:
        with pytest.raises(Exception):  # noqa: B017 - BusError, checked on the span
            await client.stream("NOWHERE").publish("no.stream", b"x", timeout=1)
    finally:
        _tracing.detach(token)
    (producer,) = [s for s in spans if s.kind == "PRODUCER"]
    assert producer.status == "ERROR" and producer.attributes["error.type"] == "UNAVAILABLE"
