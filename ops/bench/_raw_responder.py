"""The peer of invoke.py: a bare nats-py request/reply responder handling requests
concurrently (a task per message), as an engine worker may."""

from __future__ import annotations

import asyncio
import sys

import nats
import uvloop


async def main(url: str) -> None:
    nc = await nats.connect(url)
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    async def handle(msg: nats.aio.msg.Msg) -> None:
        await msg.respond(msg.data)

    async def cb(msg: nats.aio.msg.Msg) -> None:
        t = loop.create_task(handle(msg))
        tasks.add(t)
        t.add_done_callback(tasks.discard)

    await nc.subscribe("raw.noop", queue="raw.noop", cb=cb)
    await nc.flush()
    print("RAW_READY", file=sys.stderr, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(main(sys.argv[1]))
