"""Running a worker as a process: event loop, bus connection, signals, orderly exit."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Protocol

from nats.aio.client import Client as NATS

from engine import _tracing
from engine._client import Client
from engine._connect import connect
from engine._heap import keep_trimmed, trim_seconds
from engine._logs import attach_log_stream
from engine._plugins import TriggerHost, host
from engine.settings import engine_settings, worker_identity


class Servable(TriggerHost, Protocol):
    """A Worker (engine/_worker.py) as its process runs it. Named by what is used rather
    than imported: `Worker.run()` imports this module."""

    @property
    def name(self) -> str: ...

    @property
    def functions(self) -> Mapping[str, object]: ...

    async def start(self, nc: NATS, client: Client | None = None) -> None: ...

    async def drain(self) -> None: ...


def install_uvloop() -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - optional on some platforms
        pass


def setup_logging() -> None:
    level = engine_settings().log_level
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


async def serve(worker: Servable, stop: asyncio.Event | None = None) -> None:
    await serve_all([worker], stop)


async def serve_all(workers: Sequence[Servable], stop: asyncio.Event | None = None) -> None:
    """Serve `workers` in this process on one bus connection, until SIGTERM/SIGINT: the
    first hosts the trigger plug-ins ENGINE_TRIGGERS names. Workers sharing a process share
    one Client, so their calls to one another run in-process."""
    name = "+".join(w.name for w in workers)
    trim_every = trim_seconds()  # a bad setting fails the start, before anything is served
    nc = await connect(name=name)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    _tracing.setup(name, nc, loop)
    attach_log_stream(nc, loop, name)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    client = Client(nc)
    # Side by side: a process hosting every worker (the laptop layout) is ready when the
    # slowest is, not after the sum of their starts.
    await asyncio.gather(*(w.start(nc, client) for w in workers))
    # What exists now (modules, functions, schemas, indexes loaded at start) lives as long as
    # the process: out of the collector's sight, a full collection walks only what calls
    # allocate since, instead of every object of every imported module.
    gc.freeze()
    # The supervisor reads this line to know the process serves, and what.
    fns = ",".join(f for w in workers for f in w.functions)
    print(f"ENGINE_WORKER_READY {name} {os.getpid()} {fns}", file=sys.stderr, flush=True)
    watchdog = loop.create_task(_exit_with_supervisor(stop))
    trimmer = loop.create_task(keep_trimmed(trim_every))
    await stop.wait()
    watchdog.cancel()
    trimmer.cancel()
    # The others side by side, then the first, which hosts the trigger plug-ins: their
    # calls into this process keep being served until it goes.
    await asyncio.gather(*(w.drain() for w in workers[1:]))
    await workers[0].drain()
    await _tracing.shutdown()
    try:
        await asyncio.wait_for(nc.drain(), timeout=10)
    except Exception:
        await nc.close()


async def _exit_with_supervisor(stop: asyncio.Event) -> None:
    # Workers run in their own session (so Ctrl-C reaches only the supervisor); if the
    # supervisor dies without stopping us, we drain and exit rather than linger. The
    # supervisor holds the write end of a pipe whose read end we inherit: it reads as
    # end-of-file the moment the supervisor is gone, however it died, with no polling.
    ident = worker_identity()
    fd, sup = ident.lifeline_fd, ident.supervisor_pid
    loop = asyncio.get_running_loop()
    if fd >= 0:
        try:
            os.fstat(fd)
        except OSError:
            fd = -1
    if fd >= 0:
        gone = asyncio.Event()

        def readable() -> None:
            try:
                data = os.read(fd, 64)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(fd)
                gone.set()

        os.set_blocking(fd, False)
        loop.add_reader(fd, readable)
        await gone.wait()
        stop.set()
        return
    if not sup:
        return
    while True:  # no lifeline (a worker started by hand with the pid set): look now and then
        await asyncio.sleep(5.0)
        if os.getppid() != sup:
            stop.set()
            return


def run_worker(worker: Servable) -> None:
    run_workers([worker])


def run_workers(workers: Sequence[Servable]) -> None:
    """Process entry point: the trigger plug-ins ENGINE_TRIGGERS names are hosted by the
    first worker, then every worker serves until SIGTERM/SIGINT."""
    setup_logging()
    install_uvloop()
    host(workers[0], list(engine_settings().triggers))
    asyncio.run(serve_all(workers))
