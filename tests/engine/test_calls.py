"""Function calls through a real nats-server and real worker processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections import Counter

import msgspec
import pytest

from engine import Client, FunctionError
from engine.protocol import subject_for


class Echo(msgspec.Struct):
    text: str


class Who(msgspec.Struct):
    pid: int


async def test_call_returns_the_typed_reply(client: Client, spawn) -> None:
    spawn("workers.example")
    out = await client.call("example::echo", {"text": "hi"}, response=Echo, timeout=5)
    assert out == Echo("hi")


async def _spy(client: Client, function_id: str) -> list[object]:
    """Every message published on a function's subject (a plain subscriber sees them all)."""
    seen: list[object] = []

    async def cb(msg: object) -> None:
        seen.append(msg)

    await client.nc.subscribe(subject_for(function_id), cb=cb)
    await client.nc.flush()
    return seen


async def test_nested_call_to_a_function_of_the_same_process_skips_the_bus(
    client: Client, spawn
) -> None:
    spawn("workers.example")
    seen = await _spy(client, "example::echo")
    assert (await client.call("example::echo", {"text": "a"}, response=Echo, timeout=5)).text == "a"
    out = await client.call("example::relay", {"text": "x"}, response=Echo, timeout=5)
    assert out.text == "relayed:x"
    await client.nc.flush()
    await asyncio.sleep(0.2)
    assert len(seen) == 1  # only the test's own call crossed the bus


async def test_in_process_call_keeps_errors_and_deadlines(client: Client, spawn) -> None:
    spawn("workers.example")
    fail = {"code": "CONFLICT", "message": "busy", "field": "key"}
    with pytest.raises(FunctionError) as ei:
        await client.call(
            "example::forward", {"function": "example::fail", "payload": fail}, timeout=5
        )
    assert (ei.value.code, ei.value.field, ei.value.status) == ("CONFLICT", "key", 409)
    # A payload the sibling rejects: the same error as when it is called over the bus.
    with pytest.raises(FunctionError) as over_bus:
        await client.call("example::echo", {"text": 3}, timeout=5)
    with pytest.raises(FunctionError) as ei:
        await client.call(
            "example::forward", {"function": "example::echo", "payload": {"text": 3}}, timeout=5
        )
    assert ei.value.field == "text"
    assert (ei.value.code, ei.value.status, ei.value.message) == (
        over_bus.value.code,
        over_bus.value.status,
        over_bus.value.message,
    )
    started = time.monotonic()
    with pytest.raises(FunctionError) as ei:
        await client.call(
            "example::forward",
            {"function": "example::sleep", "payload": {"seconds": 5}, "timeout": 0.3},
            timeout=5,
        )
    assert ei.value.code == "DEADLINE_EXCEEDED"
    assert time.monotonic() - started < 3


async def test_in_process_call_in_flight_finishes_when_the_worker_drains(
    client: Client, spawn
) -> None:
    w = spawn("workers.example")
    call = asyncio.ensure_future(
        client.call(
            "example::forward",
            {"function": "example::sleep", "payload": {"seconds": 1.0}},
            response=dict,
            timeout=10,
        )
    )
    await asyncio.sleep(0.3)
    w.send_signal(signal.SIGTERM)
    assert await call == {"seconds": 1.0}
    assert await asyncio.to_thread(w.wait, 20) == 0


async def test_replicas_share_load_through_the_queue_group(client: Client, spawn) -> None:
    a = spawn("workers.example")
    b = spawn("workers.example")
    pids = Counter()
    for _ in range(200):
        pids[(await client.call("example::whoami", None, response=Who, timeout=5)).pid] += 1
    assert set(pids) == {a.pid, b.pid}
    assert min(pids.values()) > 20  # both take a real share


async def test_error_crosses_the_bus_with_code_field_and_retryable(client: Client, spawn) -> None:
    spawn("workers.example")
    with pytest.raises(FunctionError) as ei:
        await client.call(
            "example::fail", {"code": "CONFLICT", "message": "busy", "field": "key"}, timeout=5
        )
    err = ei.value
    assert (err.code, err.message, err.field, err.retryable, err.status) == (
        "CONFLICT",
        "busy",
        "key",
        True,
        409,
    )


async def test_invalid_request_is_a_bad_request_naming_the_field(client: Client, spawn) -> None:
    spawn("workers.example")
    with pytest.raises(FunctionError) as ei:
        await client.call("example::echo", {"text": 5}, timeout=5)
    assert ei.value.code == "BAD_REQUEST"
    assert ei.value.field == "text"
    assert not ei.value.retryable


async def test_micro_error_headers_are_set(client: Client, spawn) -> None:
    spawn("workers.example")
    msg = await client.nc.request(
        "fn.example.fail", b'{"code":"NOT_FOUND","message":"nope"}', timeout=5
    )
    assert msg.headers is not None
    assert msg.headers["Nats-Service-Error-Code"] == "404"
    assert msg.headers["Nats-Service-Error"] == "nope"
    assert json.loads(msg.data)["error"]["code"] == "NOT_FOUND"


async def test_deadline_exceeded_is_reported_by_the_server_side(client: Client, spawn) -> None:
    spawn("workers.example")
    # The caller waits 5 s but sends a 0.3 s deadline header: the worker must answer first.
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    import time

    msg = await client.nc.request(
        "fn.example.sleep",
        b'{"seconds": 3}',
        timeout=5,
        headers={"Engine-Deadline": str(int((time.time() + 0.3) * 1000))},
    )
    assert loop.time() - t0 < 2
    assert msg.headers and msg.headers["Nats-Service-Error-Code"] == "504"
    with pytest.raises(FunctionError) as ei:
        await client.call("example::sleep", {"seconds": 3}, timeout=0.3)
    assert ei.value.code == "DEADLINE_EXCEEDED" and ei.value.retryable


async def test_no_worker_is_unavailable_and_retryable(client: Client) -> None:
    with pytest.raises(FunctionError) as ei:
        await client.call("nobody::home", {}, timeout=2)
    assert ei.value.code == "UNAVAILABLE" and ei.value.retryable


async def test_micro_discovery_lists_functions_with_schemas(client: Client, spawn) -> None:
    spawn("workers.example")
    msg = await client.nc.request("$SRV.INFO.example", b"", timeout=5)
    info = json.loads(msg.data)
    ids = {ep["metadata"]["function_id"]: ep for ep in info["endpoints"]}
    assert "example::echo" in ids
    schema = json.loads(ids["example::echo"]["metadata"]["request_schema"])
    assert "text" in json.dumps(schema)
    assert ids["example::echo"]["subject"] == "fn.example.echo"
    with pytest.raises(FunctionError):
        await client.call("example::fail", {}, timeout=5)
    stats = json.loads((await client.nc.request("$SRV.STATS.example", b"", timeout=5)).data)
    fail = next(e for e in stats["endpoints"] if e["subject"] == "fn.example.fail")
    assert fail["num_requests"] == 1
    # each endpoint's data: our own figures of its calls (errors, a duration histogram);
    # micro's own num_errors agrees on the verified nats-py fast path
    assert fail["data"]["errors"] == 1 and fail["data"]["calls"] == 1
    if os.environ.get("ENGINE_NATSPY_FAST", "on") != "off":
        assert fail["num_errors"] == 1
    assert fail["data"]["function_id"] == "example::fail"
    assert sum(fail["data"]["duration_counts"]) == 1
    assert len(fail["data"]["duration_counts"]) == len(fail["data"]["duration_buckets_ms"]) + 1


async def test_a_request_bigger_than_the_bus_carries_is_too_large_not_internal(
    client: Client, spawn
) -> None:
    spawn("workers.example")
    big = b"x" * (client.nc.max_payload + 1)
    with pytest.raises(FunctionError) as ei:
        await client.call("example::noop", big, timeout=5)
    assert (ei.value.code, ei.value.status) == ("TOO_LARGE", 413)
    assert "largest message" in ei.value.message
