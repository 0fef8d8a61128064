"""A sampled call tells nats-server to skip its own message tracing (docs/PROTOCOL.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import Client, _client, _tracing
from engine.protocol import subject_for


async def _headers_of_a_call(client: Client, rate_bound: int) -> dict[str, str]:
    seen: asyncio.Queue[Any] = asyncio.Queue()

    async def responder(msg: Any) -> None:
        await seen.put(msg)
        await msg.respond(b"null")

    await client.nc.subscribe(subject_for("probe::headers"), cb=responder)
    await client.nc.flush()
    _tracing.active, _tracing._rate_bound = True, rate_bound
    try:
        await client.call("probe::headers", None, timeout=5)
    finally:
        _tracing.active = False
    msg = await asyncio.wait_for(seen.get(), 5)
    return dict(msg.headers or {})


async def test_a_sampled_call_disables_the_servers_message_trace_before_traceparent(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tracing, "_rate_bound", _tracing._SAMPLE_ALL)
    headers = await _headers_of_a_call(client, _tracing._SAMPLE_ALL)
    assert headers["traceparent"].endswith("-01")
    assert headers[_client.HDR_TRACE_DEST] == "trace disabled"
    keys = list(headers)  # the server stops at the first of the two it meets
    assert keys.index(_client.HDR_TRACE_DEST) < keys.index("traceparent")


async def test_unsampled_or_opted_in_calls_leave_the_server_alone(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tracing, "_rate_bound", 0)
    headers = await _headers_of_a_call(client, 0)
    assert headers["traceparent"].endswith("-00")
    assert _client.HDR_TRACE_DEST not in headers
    # ENGINE_NATS_MSG_TRACE=on: an operator who traces messages in NATS keeps it.
    monkeypatch.setattr(_client, "_skip_server_trace", lambda: False)
    headers = await _headers_of_a_call(client, _tracing._SAMPLE_ALL)
    assert headers["traceparent"].endswith("-01")
    assert _client.HDR_TRACE_DEST not in headers
