"""`Worker.on_drain`: a stop tells the calls in flight, so a long one can end early with its
reply instead of holding the stop for the drain timeout and being cancelled."""

from __future__ import annotations

import asyncio
import time

import msgspec

from engine import Client, Context, Worker, connect
from engine.server import NatsServer


class Done(msgspec.Struct):
    steps: int
    ended_early: bool


async def test_a_drain_hook_lets_a_long_call_end_early_with_its_reply(
    nats_server: NatsServer, client: Client
) -> None:
    worker = Worker("drain-hook-test")
    stopping = asyncio.Event()
    order: list[str] = []

    @worker.function("drain_test::long", timeout=120)
    async def long(req: None, ctx: Context) -> Done:
        steps = 0
        while steps < 6000 and not stopping.is_set():  # ~60 s of work, in steps
            await asyncio.sleep(0.01)
            steps += 1
        return Done(steps=steps, ended_early=stopping.is_set())

    @worker.on_drain
    async def drain(_client: Client) -> None:
        order.append("drain")
        stopping.set()

    @worker.on_stop
    async def stop(_client: Client) -> None:
        order.append("stop")

    nc = await connect(nats_server.url)
    await worker.start(nc)
    call = asyncio.ensure_future(client.call("drain_test::long", None, response=Done, timeout=120))
    await asyncio.sleep(0.3)  # the call is in flight
    began = time.monotonic()
    await worker.drain()
    took = time.monotonic() - began
    done = await asyncio.wait_for(call, timeout=5)
    await nc.close()

    assert done.ended_early and 0 < done.steps < 6000, done
    assert took < worker.drain_timeout / 2, took  # not held until the timeout
    assert order == ["drain", "stop"]  # told first; the stop hooks after the calls ended
