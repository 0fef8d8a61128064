"""The embedded nats-server's store, watched: what the server repaired when it started after
a crash, and a disk that filled up.

A full disk: nats-server answers no write it cannot store and refuses every later write to
that stream until it restarts, even once space is back (it logs "critical write error").
The guard sees that line, waits until the disk has the engine's reserve free again
(`nats.min_free_disk`), and restarts the server on the same store and ports; workers
reconnect by themselves. Writers check the reserve before they write (engine.disk), so the
store rarely gets there through them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

import msgspec
from nats.aio.client import Client as NATS

from engine._nats_server import NatsServer, NatsServerError
from engine._store_repair import (
    StoreRepair,
    block_sizes,
    read_seen,
    repair_warnings,
    repairs,
    shorter_than_seen,
    write_seen,
)
from engine.disk import free_bytes, mb

log = logging.getLogger("engine.store")

CLEAN_MARK = ".clean-stop"
"""Written under the store after the server stopped in order; its absence at start means
the last run ended in a crash or a power cut."""


class StoreStatus(msgspec.Struct, kw_only=True):
    dir: str
    free_bytes: int
    min_free_bytes: int
    disk_full: bool
    write_error: str
    """The server's line saying it could not write its store ("" when none)."""
    restarts: int
    """Restarts of the server after a full disk."""
    repairs: list[StoreRepair]
    """What the server cut from a torn store when this engine started it."""
    server_warnings: list[str]


class StoreGuard:
    def __init__(
        self, server: NatsServer, min_free: int, poll: float = 1.0, mark_every: float = 2.0
    ) -> None:
        self.server = server
        self.min_free = min_free
        self.poll = poll
        self.restarts = 0
        self.found: list[StoreRepair] = []
        self.warnings: list[str] = []
        self._before: dict[tuple[str, str], dict[str, int]] | None = None
        self.mark_every = mark_every
        self._nc: NATS | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def store(self) -> Path:
        return self.server.store_dir

    def before_start(self) -> None:
        mark = self.store / CLEAN_MARK
        clean = mark.exists()
        mark.unlink(missing_ok=True)
        self._before = None if clean else block_sizes(self.store)

    async def after_ready(self, nc: NATS) -> list[StoreRepair]:
        self._nc = nc
        if self._before is None:
            return []
        found = repairs(self._before, block_sizes(self.store))
        self._before = None
        now = await self._stream_states()
        found = shorter_than_seen(found, read_seen(self.store), now)
        for r in found:
            log.warning("store repaired: %s", r.describe())
        self.found = found
        self.warnings = repair_warnings(self.server.start_log)
        for w in self.warnings:
            log.warning("nats-server at start: %s", w)
        return found

    async def _stream_states(self) -> dict[str, tuple[int, int]]:
        assert self._nc is not None
        try:
            infos = await asyncio.wait_for(self._nc.jetstream().streams_info(), 10)
        except Exception as exc:  # the marks are a help, never a reason to stop
            log.debug("streams_info: %s", exc)
            return {}
        return {i.config.name: (i.state.last_seq, i.state.messages) for i in infos if i.config.name}

    async def _mark_loop(self) -> None:
        last: dict[str, int] = {}
        while True:
            await asyncio.sleep(self.mark_every)
            if self._nc is None or self.server.write_error or self.free() < self.min_free:
                continue
            seen = {k: v[0] for k, v in (await self._stream_states()).items()}
            if seen and seen != last:
                try:
                    await asyncio.to_thread(write_seen, self.store, seen)
                    last = seen
                except OSError as exc:
                    log.debug("marks not written: %s", exc)

    def mark_clean(self) -> None:
        if self.store.exists():
            (self.store / CLEAN_MARK).touch()

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._watch()), loop.create_task(self._mark_loop())]

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        self._tasks = []

    def free(self) -> int:
        try:
            return free_bytes(self.store)
        except OSError:
            return 0

    async def _watch(self) -> None:
        told = ""
        pending = False  # stopped for a restart that has not come up yet
        while True:
            await asyncio.sleep(self.poll)
            err = self.server.write_error
            if not pending and (not err or not self.server.running()):
                continue
            free = self.free()
            if err and err != told:
                told = err
                log.error(
                    "nats-server could not write its store (%s free on %s): %s. Writes to it "
                    "are refused until nats-server restarts, which the engine does once %s "
                    "are free",
                    mb(free), self.store, err, mb(self.min_free),
                )  # fmt: skip
            if free < self.min_free:
                continue
            t0 = time.monotonic()
            log.warning("%s free on %s again: restarting nats-server", mb(free), self.store)
            pending = True
            await asyncio.to_thread(self.server.stop)
            try:
                await asyncio.to_thread(self.server.start)
            except NatsServerError as exc:
                log.error("nats-server did not start again (tried again shortly): %s", exc)
                continue
            pending = False
            self.restarts += 1
            told = ""
            log.warning("nats-server restarted in %.1fs; writes resume", time.monotonic() - t0)

    def status(self) -> StoreStatus:
        free = self.free()
        return StoreStatus(
            dir=str(self.store),
            free_bytes=free,
            min_free_bytes=self.min_free,
            disk_full=free < self.min_free or bool(self.server.write_error),
            write_error=self.server.write_error,
            restarts=self.restarts,
            repairs=self.found,
            server_warnings=self.warnings,
        )
