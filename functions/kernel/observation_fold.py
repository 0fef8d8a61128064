"""Folding MEM_EVENTS' observation records into the id index, behind the writes.

A write path publishes a record (its msg id is the observation id, so JetStream drops a
replay within the 120 s duplicate window) and moves on; the folder then reads the records
after the index's watermark and adds them to their blocks, in batches, a fifth of a second after
a process's writes (`wrote`), or at once when a create-once write finds the watermark too
old (`fresh`). Between the two, the window and the index cover every replay: a replay
younger than the window is the msg id's, an older one's record is in the blocks, because
no write is taken while the watermark lags more than `STALE` seconds (< the window).

Several processes may fold at once (each block is written under compare-and-set and merged
again on a conflict; folding a record twice changes nothing); the watermark moves under
compare-and-set, so only one of them moves it past a range.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable

import msgspec

from engine import BusError, Client, Stream
from functions.kernel.observation_index import ObservationIndex, Op, Watermark, key_of
from functions.kernel.records import EVENTS_SUBJECT

log = logging.getLogger("functions.kernel.observation_fold")

OBSERVATION_SUBJECTS = f"{EVENTS_SUBJECT}.observation.>"
FOLD_DELAY = 0.2
"""Seconds a process's writes wait before they are folded in: a batch, not a fold each; small
enough that a batch (~500 records at full ingest) does not stall the loop for tens of ms."""
FOLD_BATCH = 2048
"""Records folded per round (then the watermark moves)."""
FOLD: Op = "fold"
STALE = 60.0
"""A create-once write waits for a fold when the watermark is older than this (seconds of
the server's clock): well inside the duplicate window (120 s), which covers the rest (the
store passes half its window)."""
REFRESH = 20.0
"""An idle fold moves the watermark's time on when it is older than this."""
CLAIM_SECONDS = 10.0
"""How long a fold behind the writes holds the claim if its process dies before giving it
back (a fold takes well under a second)."""


class _Id(msgspec.Struct):
    id: str


class _Head(msgspec.Struct, tag="observation.added", tag_field="type"):
    observation: _Id


_head = msgspec.json.Decoder(_Head).decode


def observation_id(data: bytes) -> str | None:
    """The id of an `ObservationAdded` message, None for anything else."""
    try:
        return _head(data).observation.id
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


class Folder:
    """One per process that opens the store; it folds only when asked to."""

    def __init__(
        self,
        client: Client,
        events: Stream,
        index: ObservationIndex,
        on_folded: Callable[[int], None],
        stale: float = STALE,
    ) -> None:
        self.client = client
        self.stale = stale
        """A create-once write waits for a fold past this age of the watermark (seconds):
        under the duplicate window, so the two cover every replay."""
        self.events = events
        self.index = index
        self.on_folded = on_folded
        """Told the sequence folded up to (the store forgets its own writes below it)."""
        self.mark = Watermark()
        """The last watermark this process saw (it only ever moves on)."""
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.owner = uuid.uuid4().hex
        self.folds = 0
        self.folded = 0

    def wrote(self) -> None:
        """This process stored a record: fold it in soon."""
        self._wake.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="observation-fold")

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(FOLD_DELAY)
            self._wake.clear()
            try:
                await self._fold_behind()
            except Exception as exc:  # the bus is away: the next write (or fresh) retries
                if self.client.nc.is_closed:
                    return  # the process is going
                log.warning("folding observations into the index failed: %s", exc)
                await asyncio.sleep(1.0)
                self._wake.set()

    async def _fold_behind(self) -> None:
        """A fold behind this process's writes, when no other process is folding: two
        replicas writing at once would each read and merge the same records. While the
        other folds, this one tries again a delay later (the other folds what it finds,
        these writes among them, or this one does next). `fresh` and explicit folds do not
        wait for the claim: the folds stay exact when they overlap, only slower."""
        now = await self.client.bus_time()
        revision = await self.index.claim(self.owner, now, now + CLAIM_SECONDS)
        if revision is None:
            self._wake.set()
            return
        try:
            await self.fold()
        finally:
            await self.index.unclaim(self.owner, revision)

    async def fresh(self) -> None:
        """Return once the watermark is recent enough for a create-once write to trust the
        blocks for every record older than the duplicate window."""
        now = await self.client.bus_time()
        if self.mark.at >= now - self.stale:
            return
        mark, _ = await self.index.watermark()
        self._saw(mark)
        if mark.at >= now - self.stale:
            return
        await self.fold()

    def _saw(self, mark: Watermark) -> None:
        if mark.seq > self.mark.seq or mark.at > self.mark.at:
            self.mark = Watermark(seq=max(mark.seq, self.mark.seq), at=max(mark.at, self.mark.at))

    async def fold(self, *, progress: Callable[[int, int], None] | None = None) -> Watermark:
        """Fold every record stored so far into the index; the watermark after.
        `progress(done, total)`: told after each round (an upgrade shows it)."""
        async with self._lock:
            mark, revision = await self.index.watermark()
            self._saw(mark)
            at = await self.client.bus_time()
            last = (await self.events.info()).last_seq
            if last <= mark.seq:
                if at - mark.at > REFRESH:
                    new = Watermark(seq=mark.seq, at=at)
                    if await self.index.advance(new, revision) is not None:
                        self._saw(new)
                return self.mark
            started = time.monotonic()
            batch: list[tuple[str, Op, int]] = []
            done = 0
            # Every message, not the observations' subjects alone: the watermark may pass
            # `last` only if the read reached it. A consumer answered by a replica that
            # lags (a partition, a slow node) ends early and says nothing is pending; a
            # filtered read could not tell that end from the real one, and the records it
            # did not deliver would sit below the watermark, in no block, found by no get.
            reached, reached_at = mark.seq, mark.at
            reader = self.events.read(after=mark.seq)
            async with contextlib.aclosing(reader) as messages:
                async for m in messages:
                    if m.seq > last:
                        break
                    reached, reached_at = m.seq, m.at
                    obs_id = observation_id(m.data)
                    if obs_id is not None:
                        batch.append((key_of(obs_id), FOLD, m.seq))
                    if len(batch) >= FOLD_BATCH:
                        await self._flush(batch)
                        done += len(batch)
                        batch = []
                        # Every record stored before this one is folded now, and it too.
                        step = Watermark(seq=m.seq, at=m.at)
                        got = await self.index.advance(step, revision)
                        if got is None:
                            return self.mark  # another folder is ahead: it goes on
                        revision = got
                        self._saw(step)
                        if progress is not None:
                            progress(m.seq - mark.seq, last - mark.seq)
            await self._flush(batch)
            done += len(batch)
            if reached >= last:
                new = Watermark(seq=last, at=at)
            else:  # the read ended early (or the last messages were deleted): up to what it saw
                new = Watermark(seq=reached, at=reached_at)
                log.info("fold read up to %d of %d: the watermark waits there", reached, last)
            if new.seq > mark.seq and await self.index.advance(new, revision) is not None:
                self._saw(new)
            if progress is not None:
                progress(last - mark.seq, last - mark.seq)
            self.folds += 1
            self.folded += done
            log.debug("folded %d records up to %d in %.3fs", done, last, time.monotonic() - started)
            self.on_folded(min(self.mark.seq, last))
            return self.mark

    async def repair(self) -> int:
        """After a crash nats-server may drop MEM_EVENTS' torn tail and give its sequence
        numbers to new records. When the watermark is past the stream's end, the entries of
        records that went with the tail are dropped (so their replays store them again)
        and the watermark moves back, to be folded from there; how many entries went."""
        async with self._lock:
            mark, revision = await self.index.watermark()
            last = (await self.events.info()).last_seq
            if mark.seq <= last:
                return 0
            dropped = await self.index.drop_after(last)
            log.warning(
                "MEM_EVENTS ends at %d, before the observation index's watermark %d (the store "
                "was repaired after a crash): %d index entries of lost records dropped",
                last, mark.seq, dropped,
            )  # fmt: skip
            await self.index.advance(Watermark(seq=last, at=0.0), revision)
            self.mark = Watermark()
            return dropped

    async def _flush(self, batch: list[tuple[str, Op, int]]) -> None:
        if not batch:
            return
        doomed = await self.index.apply(batch)
        await delete_messages(self.events, doomed)

    async def close(self) -> None:
        """Stop folding; what this process wrote since the last fold is folded now, so a
        start finds the index current (a reader would find it in the tail anyway)."""
        task, self._task = self._task, None
        if task is None:
            return
        pending = self._wake.is_set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        if pending:
            with contextlib.suppress(BusError, TimeoutError):
                await asyncio.wait_for(self.fold(), 5.0)


async def delete_messages(events: Stream, seqs: list[int]) -> None:
    """Remove these messages of MEM_EVENTS (their bytes erased); gone already is fine."""
    for i in range(0, len(seqs), 64):
        await asyncio.gather(*(events.delete_message(s) for s in seqs[i : i + 64]))
