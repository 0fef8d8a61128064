"""The capture inbox: observations accepted while JetStream could not take them.

An entry is written to a local spool file (fsync'd) before the client hears 202, so an
accepted observation survives a crash of this process too; a background loop retries
with exponential backoff and moves an entry to the dead letters after `max_attempts`.
`capture` lists both, `capture/retry` puts dead letters back in the inbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import msgspec

from engine.disk import free_bytes, mb, min_free_disk
from functions.kernel.records import Observation
from functions.memory.settings import memory_settings

log = logging.getLogger("functions.memory.inbox")


class DiskFull(OSError):
    """The disk of the data dir has less than its reserve free."""


class Pending(msgspec.Struct, kw_only=True):
    dedup_key: str
    observation: Observation
    attempts: int = 0
    last_error: str = ""
    next_at: float = 0.0
    accepted_at: str = ""
    updated_at: float = 0.0
    """When the entry was last written (epoch seconds; 0 in entries of older versions)."""


class CaptureCounts(msgspec.Struct, kw_only=True):
    """What this process's write path did since it started (upstream's `sinceStart`)."""

    accepted: int = 0
    """Observations accepted: stored at once, or spooled to the inbox."""
    completed: int = 0
    """Stored (at once, or later from the inbox)."""
    duplicates: int = 0
    retried: int = 0
    """Inbox attempts that failed and were scheduled again."""
    recovered: int = 0
    """Inbox entries stored on a later attempt."""
    dead_lettered: int = 0
    rejected: int = 0
    """Refused: the inbox full, or the disk."""
    pruned: int = 0


class PendingView(msgspec.Struct, rename="camel", kw_only=True):
    observation_id: str
    session_id: str
    hook_type: str
    attempts: int
    last_error: str
    next_attempt_at: float
    accepted_at: str


StoreFn = Callable[[Pending], Awaitable[object]]


def default_dir() -> Path:
    given = memory_settings().inbox_dir
    if given is not None:
        return given
    from engine.paths import default_data_dir

    return default_data_dir() / "memory" / "inbox"


class Inbox:
    def __init__(
        self,
        root: Path | None = None,
        *,
        max_entries: int | None = None,
        max_attempts: int | None = None,
        base_delay: float = 0.5,
        max_delay: float = 60.0,
    ) -> None:
        self.root = root or default_dir()
        self.pending_dir = self.root / "pending"
        self.dead_dir = self.root / "dead"
        settings = memory_settings()
        self.max_entries = max_entries or settings.inbox_max
        self.max_attempts = max_attempts or settings.inbox_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._wake = asyncio.Event()
        self._count: int | None = None
        self.min_free = min_free_disk()
        self._free: tuple[float, int] = (0.0, 0)
        self.counts = CaptureCounts()
        self.last_sweep_at = 0.0
        """When the retry loop last passed over the inbox (epoch seconds; 0: never)."""

    def _ensure(self) -> None:
        self.pending_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.dead_dir.mkdir(parents=True, exist_ok=True, mode=0o700)

    def size(self) -> int:
        if self._count is None:
            self._ensure()
            self._count = sum(1 for _ in self.pending_dir.glob("*.json"))
        return self._count

    def dead_count(self) -> int:
        self._ensure()
        return sum(1 for _ in self.dead_dir.glob("*.json"))

    def delay(self, attempts: int) -> float:
        return float(min(self.max_delay, self.base_delay * (2 ** max(0, attempts - 1))))

    def free_disk(self) -> int:
        """Free bytes on the inbox's disk (the data dir's), read at most once a second: the
        write path asks before every write."""
        at, free = self._free
        now = time.monotonic()
        if now - at > 1.0:
            try:
                free = free_bytes(self.root)
            except OSError:
                free = self.min_free
            self._free = (now, free)
        return free

    def disk_full(self) -> str:
        """Why nothing should be written now ("" when the disk has its reserve free)."""
        free = self.free_disk()
        if free >= self.min_free:
            return ""
        return (
            f"the disk holding {self.root} is full ({mb(free)} free, "
            f"{mb(self.min_free)} kept free): free space on it and writes resume by themselves"
        )

    def put(self, entry: Pending) -> bool:
        """Durably spool `entry`; False when the inbox is full (the caller answers 503).
        A disk with no room left raises DiskFull."""
        if self.size() >= self.max_entries:
            return False
        try:
            self._write(self.pending_dir, entry)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            self._free = (0.0, 0)
            raise DiskFull(self.disk_full() or f"the inbox's disk is full: {exc}") from None
        self._count = (self._count or 0) + 1
        self._wake.set()
        return True

    def _write(self, folder: Path, entry: Pending) -> None:
        self._ensure()
        entry.updated_at = time.time()
        path = folder / f"{entry.observation.id}.json"
        # Replicas share the inbox: each writes its own temporary file before the rename.
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, msgspec.json.encode(entry))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def _read(self, folder: Path) -> list[tuple[Path, Pending]]:
        self._ensure()
        out: list[tuple[Path, Pending]] = []
        for p in sorted(folder.glob("*.json")):
            try:
                out.append((p, msgspec.json.decode(p.read_bytes(), type=Pending)))
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                log.warning("unreadable inbox entry %s left in place", p)
        return out

    def pending_entries(self) -> list[Pending]:
        return [e for _, e in self._read(self.pending_dir)]

    def dead_entries(self) -> list[Pending]:
        return [e for _, e in self._read(self.dead_dir)]

    def listing(self) -> tuple[list[PendingView], list[PendingView]]:
        return (
            [_view(e) for _, e in self._read(self.pending_dir)],
            [_view(e) for _, e in self._read(self.dead_dir)],
        )

    def redrive(self, ids: list[str]) -> int:
        """Move dead letters (all, or those with these observation ids) back to the inbox."""
        return self.redrive_matching((lambda e: e.observation.id in ids) if ids else None)[0]

    def redrive_matching(self, match: Callable[[Pending], bool] | None) -> tuple[int, int]:
        """Dead letters that `match` (all when None) back in the inbox with their attempts
        reset, and waiting entries that match made due now: (dead moved, waiting made due)."""
        moved = due = 0
        for path, entry in self._read(self.dead_dir):
            if match is not None and not match(entry):
                continue
            entry.attempts, entry.next_at = 0, 0.0
            self._write(self.pending_dir, entry)
            path.unlink(missing_ok=True)
            moved += 1
        for _path, entry in self._read(self.pending_dir):
            if (match is None or match(entry)) and entry.next_at > 0:
                entry.attempts, entry.next_at = 0, 0.0
                self._write(self.pending_dir, entry)
                due += 1
        self._count = None
        self._wake.set()
        return moved, due

    async def drain_once(self, store: StoreFn, *, force: bool = False) -> tuple[int, int]:
        """One pass over due entries: (stored, failed). None is tried while the disk is
        full: such attempts would fail for a reason that is not the entry's, and count it
        towards the dead letters."""
        stored = failed = 0
        if self.disk_full():
            return 0, 0
        now = time.time()
        for path, entry in self._read(self.pending_dir):
            if not force and entry.next_at > now:
                continue
            try:
                outcome = await store(entry)
            except Exception as exc:
                failed += 1
                entry.attempts += 1
                entry.last_error = f"{type(exc).__name__}: {exc}"[:300]
                if entry.attempts >= self.max_attempts:
                    self._write(self.dead_dir, entry)
                    path.unlink(missing_ok=True)
                    self.counts.dead_lettered += 1
                    log.warning(
                        "observation %s dead-lettered: %s", entry.observation.id, entry.last_error
                    )
                else:
                    entry.next_at = time.time() + self.delay(entry.attempts)
                    self._write(self.pending_dir, entry)
                    self.counts.retried += 1
                continue
            path.unlink(missing_ok=True)
            stored += 1
            self.counts.recovered += 1
            if outcome == "duplicate":
                self.counts.duplicates += 1
            else:
                self.counts.completed += 1
        self._count = None
        self.last_sweep_at = time.time()
        return stored, failed

    async def run(self, store: StoreFn, stop: asyncio.Event) -> None:
        """Background retry loop of one process."""
        while not stop.is_set():
            if self.size() > 0:
                try:
                    await self.drain_once(store)
                except Exception:
                    log.exception("inbox pass failed")
            self._wake.clear()
            if self.size() == 0:  # nothing waits: sleep until an entry is put (no polling)
                await _first(self._wake.wait(), stop.wait())
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.base_delay)


async def _first(*waits: Coroutine[Any, Any, Any]) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()


def _view(e: Pending) -> PendingView:
    return PendingView(
        observation_id=e.observation.id,
        session_id=e.observation.session_id,
        hook_type=e.observation.hook_type,
        attempts=e.attempts,
        last_error=e.last_error,
        next_attempt_at=e.next_at,
        accepted_at=e.accepted_at,
    )
