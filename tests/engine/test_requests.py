"""The shared reply inbox behind every call (`Client.request`): routing, timeouts, no
responders, cancellation."""

from __future__ import annotations

import asyncio

import nats
import nats.errors
import pytest
from nats.aio.msg import Msg

from engine import Client
from engine.server import NatsServer


async def _responder(nc: nats.NATS, subject: str, delay_of: dict[bytes, float]) -> None:
    async def handle(msg: Msg) -> None:
        await asyncio.sleep(delay_of.get(msg.data, 0.0))
        await msg.respond(b"re:" + msg.data + b"|" + (msg.headers or {}).get("H", "").encode())

    tasks: set[asyncio.Future[None]] = set()

    async def cb(msg: Msg) -> None:
        t = asyncio.ensure_future(handle(msg))
        tasks.add(t)
        t.add_done_callback(tasks.discard)

    await nc.subscribe(subject, cb=cb)
    await nc.flush()


async def test_concurrent_replies_reach_their_own_callers(nats_server: NatsServer) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        # Later requests answered first: each reply must still find its own caller.
        delays = {str(i).encode(): (50 - i) / 1000 for i in range(50)}
        await _responder(nc, "svc.echo", delays)
        r = Client(nc)
        out = await asyncio.gather(
            *(r.request("svc.echo", str(i).encode(), 5, {"H": f"h{i}"}) for i in range(50))
        )
        assert [m.data for m in out] == [f"re:{i}|h{i}".encode() for i in range(50)]
        assert r.requests_in_flight == 0
    finally:
        await nc.close()


async def test_timeout_no_responders_and_cancellation_leave_nothing_pending(
    nats_server: NatsServer,
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        await _responder(nc, "svc.slow", {b"slow": 5.0})
        r = Client(nc)
        with pytest.raises(nats.errors.TimeoutError):
            await r.request("svc.slow", b"slow", 0.2)
        with pytest.raises(nats.errors.NoRespondersError):
            await r.request("svc.nobody", b"x", 2)
        task = asyncio.ensure_future(r.request("svc.slow", b"slow", 5))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert r.requests_in_flight == 0
        # and the inbox still works afterwards
        assert (await r.request("svc.slow", b"fast", 2)).data == b"re:fast|"
    finally:
        await nc.close()


async def test_a_closed_connection_fails_fast_instead_of_waiting_for_the_timeout(
    nats_server: NatsServer,
) -> None:
    nc = await nats.connect(nats_server.url)
    r = Client(nc)
    await nc.close()
    with pytest.raises(nats.errors.ConnectionClosedError):
        await asyncio.wait_for(r.request("svc.echo", b"x", 30), 5)
