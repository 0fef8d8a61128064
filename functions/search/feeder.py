"""The read model of one replica: restore the last snapshot, follow MEM_EVENTS from there,
snapshot periodically, embed in the background.

Each replica keeps its own index (an ordered consumer, no durable state on the server).
Snapshots go to the JetStream object store `mem_search_snapshots` under one name per
index configuration; the stream sequence they cover travels inside, so boot is "load,
then replay the tail" and a crash between two snapshots loses nothing but replay time.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import mmap
import os
import time
import zlib
from collections import deque
from pathlib import Path
from typing import Any

import msgspec

from engine import Client, Follower, Objects, Stream, StreamMessage
from engine.settings import worker_identity
from functions.kernel.records import EVENTS_SUBJECT, MemEvent, observation_events_subject
from functions.kernel.settings import data_dir
from functions.kernel.store import events_stream
from functions.search import index_snapshot
from functions.search.embed_queue import QueueEmbedding
from functions.search.embedding import ensure_model, store_batch, take_batch
from functions.search.index import SearchIndex
from functions.search.mapped import Spill
from functions.search.settings import search_settings
from functions.search.shown import ShownRecords
from functions.search.vectors import Embedder, VectorIndex, provider_from_env

log = logging.getLogger("functions.search")
SNAPSHOT_BUCKET = "mem_search_snapshots"
STALL = 0.5
"""Seconds a fence waits behind the stream with nothing delivered before it calls the
follower stalled: on a cluster, the node holding a follower's consumer may die, and the
client library would notice only after two missed heartbeats (10-20 s)."""
GAP_MAX = 2000
"""A stalled fence reads at most this many missing events itself, one by one."""
FOLLOW_TIMEOUT = 1.0
"""Seconds one attempt to make a follower's consumer may take: on a cluster whose meta
leader died, none can be made until a new one is elected; try again soon."""
INBOX_MAX = 2048
"""Events delivered and not yet applied, at most: past it the follower waits, so that a
replica behind the stream (under saturated ingest, or replaying a long tail) holds a few MB
of backlog, not the whole tail (JetStream's flow control then holds the rest)."""
APPLY_BATCH = 256
"""Events applied from the follower's backlog before the loop turns (waiting searches and
new calls run between batches, and each batch is one wake-up of the fences)."""
PACKED = b"zl1\0"
"""Prefix of a snapshot stored zlib-compressed in one piece, as the feeder wrote them
before snapshots were streamed (still read; a snapshot without any prefix, msgpack, too)."""
SNAPSHOT_SPACING = 10.0
"""A snapshot waits at least this many times as long as the last one took (a large index
takes seconds to compress: snapshots then cost at most a tenth of a core)."""
SHARED_SUBJECTS = tuple(
    f"{EVENTS_SUBJECT}.{k}" for k in ("memory", "summary", "removed", "quarantine")
)
"""Event subjects every project's queries may see (memories without a project are global)."""
_decoder = msgspec.json.Decoder(MemEvent)


class OutOfReach(Exception):
    """The stream answered only from a replica without a leader: what it says it holds may
    be behind what was acknowledged elsewhere, so no fence can be set on it."""


def _local_dir() -> Path | None:
    """SEARCH_INDEX_DIR, else `search/` in the instance's data dir; None for a process run
    without either."""
    given = search_settings().index_dir
    if given is not None:
        return given
    data = data_dir()
    return data / "search" if data is not None else None


def _digest(msg: StreamMessage) -> bytes:
    import hashlib

    return hashlib.sha256(msg.subject.encode() + b"\0" + msg.data).digest()


class IndexHolder:
    def __init__(
        self,
        index: SearchIndex | None = None,
        embedder: Embedder | None = None,
        *,
        snapshot_every: float | None = None,
        snapshot_name: str = "index",
        local_dir: Path | None = None,
        trim_every: float | None = None,
        load_embedder: bool = True,
        embed_via_queue: bool | None = None,
    ) -> None:
        """`snapshot_every`, `trim_every` and `embed_via_queue` default to the settings
        (SEARCH_SNAPSHOT_SECONDS, SEARCH_TRIM_SECONDS, SEARCH_EMBED_QUEUE)."""
        settings = search_settings()
        if snapshot_every is None:
            snapshot_every = settings.snapshot_seconds
        if trim_every is None:
            trim_every = settings.trim_seconds
        if embed_via_queue is None:
            embed_via_queue = settings.embed_queue
        if embedder is None and load_embedder:
            embedder = provider_from_env()
        self.embedder = embedder
        self.local_dir = local_dir if local_dir is not None else _local_dir()
        """Where the replica keeps its snapshot as a file (None: the object store only)."""
        self.spill = Spill(self.local_dir)
        """The index's sealed arrays, in unlinked files of the local dir (the heap without)."""
        self.trim_every = trim_every
        """Seconds between two hand-backs of the mapped pages queries read (0: at snapshots
        only)."""
        self.index = index or SearchIndex(
            vectors=VectorIndex() if embedder else None, spill=self.spill
        )
        self.snapshot_every = snapshot_every
        self.snapshot_name = snapshot_name + (f".{embedder.name}" if embedder else "")
        self.snapshot_at = 0.0
        self.snapshot_seq = 0
        self.snapshot_took = 0.0
        """Seconds the last snapshot took, from its start to the object stored."""
        self.shown: ShownRecords | None = None
        """The records of hits, in a file of this replica's own beside the snapshot."""
        if self.local_dir is not None:
            ident = worker_identity()
            owner, replica = ident.worker or "local", ident.replica
            self.shown = ShownRecords(
                self.local_dir / f"{self.snapshot_name}.shown.{owner}-{replica}"
            )
            self.index.shown = self.shown
        self._restored_from = ""
        self._restored_last: bytes | None = None
        self.stream_last_seq = 0
        self.delivered_seq = 0
        self.delivered_at = time.monotonic()
        self.applied_at = 0.0
        """When JetStream stored the last event applied (epoch seconds; 0: not known): how
        far back an answer from this index may be."""
        self.follower_restarts = 0
        self._restarting: asyncio.Task[None] | None = None
        self._client: Client | None = None
        self._follower: Follower | None = None
        self.events: Stream
        self.store: Objects
        self._tasks: list[asyncio.Task[None]] = []
        self._inbox: deque[StreamMessage] = deque()
        self._arrived = asyncio.Event()
        self._room = asyncio.Event()
        self.inbox_max = INBOX_MAX
        self.inbox_peak = 0
        """The longest the inbox has been."""
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        """(target, tie, future) of the fences waiting: each is woken when its target is
        applied, not at every event."""
        self._tie = itertools.count()
        self.fence_wakeups = 0
        """Times a waiting fence was woken (its target reached, or a stall check due)."""
        self.booted = False
        """True once a fence has found everything the stream held applied (the first
        fences wait for the whole stream): from then on a project's fence asks for its own
        subjects only."""
        self.last_fence: tuple[str | None, int] = (None, 0)
        """(project, target) of the last fence: what it waited for."""
        self.queue: QueueEmbedding | None = None
        if embedder is not None and embed_via_queue:
            self.queue = QueueEmbedding(lambda: self.index, embedder)

    # ---- lifecycle (worker hooks) --------------------------------------------------
    async def start(self, client: Client) -> None:
        self._client = client
        self.store = await client.objects(SNAPSHOT_BUCKET)
        restored = await self.restore()
        self.events = await events_stream(client).ensure()
        if self.index.seq and not await self._snapshot_still_holds():
            self.index = self._fresh_index()
            self.snapshot_seq = 0
            restored = False
        if self.shown is not None and not restored:
            self.shown.open(len(self.index.meta))
        self.delivered_seq = self.index.seq  # the snapshot covers these
        if self.embedder is not None:
            ensure_model(self.index, self.embedder)
        self._tasks.append(asyncio.create_task(self._apply_loop()))
        self._follower = await self.events.follow(self._on_event, start_seq=self.index.seq + 1)
        self._tasks.append(asyncio.create_task(self._snapshot_loop()))
        if self.spill.mapped and self.trim_every > 0:
            self._tasks.append(asyncio.create_task(self._trim_loop()))
        if self.embedder is not None and self.queue is not None:
            self._tasks.append(asyncio.create_task(self.queue.run_enqueuer(client)))
            self._tasks.append(asyncio.create_task(self.queue.run_watcher(client)))
        elif self.embedder is not None:
            self._tasks.append(asyncio.create_task(self._embed_loop()))

    async def stop(self, client: Client) -> None:
        if self._restarting is not None:
            self._tasks.append(self._restarting)
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._follower is not None:
            await self._follower.stop()
        with contextlib.suppress(Exception):
            await self.save(final=True)
        if self.shown is not None:
            self.shown.close()

    def _fresh_index(self) -> SearchIndex:
        index = SearchIndex(
            self.index.config, VectorIndex() if self.embedder else None, spill=self.spill
        )
        index.shown = self.shown
        return index

    # ---- events ----------------------------------------------------------------------
    async def _on_event(self, msg: StreamMessage) -> None:
        while len(self._inbox) >= self.inbox_max:
            self._room.clear()
            await self._room.wait()
        self.delivered_at = time.monotonic()
        self._inbox.append(msg)
        self.inbox_peak = max(self.inbox_peak, len(self._inbox))
        self._arrived.set()

    async def _apply_loop(self) -> None:
        """Apply what the follower delivered, in batches of at most APPLY_BATCH, the loop
        turning between two (a backlog never holds a search for its whole length)."""
        while True:
            await self._arrived.wait()
            self._arrived.clear()
            while self._inbox:
                for _ in range(min(APPLY_BATCH, len(self._inbox))):
                    self._apply(self._inbox.popleft())
                self._room.set()
                self._wake()
                await asyncio.sleep(0)

    def _wake(self) -> None:
        done = max(self.index.seq, self.delivered_seq)
        while self._waiters and self._waiters[0][0] <= done:
            fut = heapq.heappop(self._waiters)[2]
            if not fut.done():
                fut.set_result(None)

    def _apply(self, msg: StreamMessage) -> None:
        # Events come from the follower and, while it is stalled, from a fence reading the
        # gap itself: each source in order, from the first event not yet delivered, so
        # keeping the first copy of each keeps the whole in order.
        if msg.seq <= self.delivered_seq:
            return
        self.delivered_seq = msg.seq
        try:
            event = _decoder.decode(msg.data)
        except msgspec.DecodeError:
            log.warning("skipping an undecodable MEM_EVENTS message on %s", msg.subject)
            return
        self.index.apply(event, seq=msg.seq)
        self.stream_last_seq = max(self.stream_last_seq, msg.seq + msg.pending)
        if msg.at:
            self.applied_at = msg.at

    async def target(self, project: str | None, timeout: float) -> int:
        """The stream sequence a query of `project` must see applied: the last event on its
        observation subject and on the shared subjects (memories, which may be global,
        summaries, removals), asked only when the index is behind the stream's end.
        Without a project, or until the index has applied everything the stream held when
        it started (events of the layout before per-project subjects included), the
        stream's last sequence. At most `timeout` seconds in all (else BusError); OutOfReach
        when the answer comes from a replica of a stream without a leader (a node cut off, or
        an election), whose state may be behind what the others acknowledged."""
        deadline = time.monotonic() + timeout
        info = await self.events.info(timeout=timeout)
        if info.leader == "":
            raise OutOfReach("MEM_EVENTS has no leader this node reaches: its state may be behind")
        last = info.last_seq
        if project is None or not self.booted or max(self.index.seq, self.delivered_seq) >= last:
            return last  # caught up with everything: one request, as a query alone costs
        left = max(deadline - time.monotonic(), 0.001)
        subjects = [observation_events_subject(project), *SHARED_SUBJECTS]
        seqs = await asyncio.gather(*(self.events.last_seq(s, timeout=left) for s in subjects))
        return max(seqs)

    async def caught_up(
        self, timeout: float = 5.0, project: str | None = None, reach: float | None = None
    ) -> bool:
        """Wait until every event in the stream right now that a query of `project` (None:
        any) could see has been applied: at most `timeout` seconds in all, asking the
        stream included (a stream electing a new leader answers nothing until it has one),
        and at most `reach` of them asking it (then BusError: the stream is out of reach).
        Events of other projects before that point are applied on the way (the stream is
        read in order); those after it are not waited for."""
        started = time.monotonic()
        deadline = started + timeout
        whole = project is None or not self.booted
        target = await self.target(project, timeout if reach is None else min(reach, timeout))
        self.last_fence = (project, target)
        while max(self.index.seq, self.delivered_seq) < target:
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                return False
            restarting = self._restarting is not None and not self._restarting.done()
            stalled = not self._inbox and now - self.delivered_at > STALL  # not just behind
            if restarting or (now - started > STALL and stalled):
                self._kick()
                if target - self.delivered_seq <= GAP_MAX:
                    await self._read_gap(target, deadline)
                    continue
            fut = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiters, (target, next(self._tie), fut))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(fut, min(left, 0.05))  # 0.05: the stall check
            self.fence_wakeups += 1
        if whole:
            self.booted = True
        return True

    async def _read_gap(self, target: int, deadline: float) -> None:
        """Apply the events up to `target` that the stalled follower has not delivered,
        read by sequence from the stream's leader (no consumer needed)."""
        while self.delivered_seq < target:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            seq = self.delivered_seq + 1
            msg = await self.events.get(seq, timeout=left)
            if msg is None:  # deleted (forgotten records are purged): nothing to apply
                self.delivered_seq = max(self.delivered_seq, seq)
                continue
            self._apply(StreamMessage(msg.seq, msg.subject, msg.data, target - seq))
        self._wake()

    def _kick(self) -> None:
        """Restart the follower in the background, once at a time (the fence goes on
        waiting for it until its own deadline)."""
        if self._restarting is None or self._restarting.done():
            self._restarting = asyncio.create_task(self._restart_follower())

    async def _restart_follower(self) -> None:
        """Follow the stream again from the next event not yet delivered: a new consumer,
        on whichever node now leads the stream; tried again each second until one is
        made (the stream may still be electing its leader)."""
        old, self._follower = self._follower, None
        if old is not None:
            await old.stop()
        self.follower_restarts += 1
        while True:
            start = max(self.index.seq, self.delivered_seq) + 1
            try:
                self._follower = await self.events.follow(
                    self._on_event, start_seq=start, timeout=FOLLOW_TIMEOUT
                )
            except Exception as exc:
                log.warning("following MEM_EVENTS again at %d failed (%s); retrying", start, exc)
                await asyncio.sleep(1.0)
                continue
            self.delivered_at = time.monotonic()
            log.warning("MEM_EVENTS follower stalled behind the stream; restarted at %d", start)
            return

    # ---- snapshots -------------------------------------------------------------------
    async def save(self, *, final: bool = False) -> int:
        """Snapshot the index: to the local file when there is a local dir (plain, fast),
        and to the object store (compressed; what a replica on another host, or one
        without the file, restores from). `final` (the worker stopping): the local file
        alone when there is one, so a stop takes seconds, not the object's upload."""
        seq = self.index.seq
        if seq == self.snapshot_seq:
            return seq
        began = time.monotonic()
        if not final and self.shown is not None and self.shown.wasteful():
            alive = self.index.alive
            await self.shown.compact(lambda n: n < len(alive) and bool(alive[n]))
        taken = index_snapshot.take(self.index)
        prepared = time.monotonic() - began
        last = await self.events.get(seq) if seq else None
        digest = _digest(last) if last is not None else None
        where = []
        if self.local_dir is not None:
            # compressed once, in a thread, for both copies; a stop writes it plain (fast)
            stored = await asyncio.to_thread(self._write_local, taken, digest, not final)
            where.append(str(self.local_dir))
            if not final:
                f = await asyncio.to_thread(self._local(".snap").open, "rb")
                with f:  # read in nats-py's threads, chunk by chunk
                    await self.store.put(self.snapshot_name, f)
        else:
            reader = taken.reader()
            await self.store.put(self.snapshot_name, reader)
            stored = reader.stored
        if not final or self.local_dir is None:
            if digest is not None:
                await self.store.put(self.snapshot_name + ".last", digest)
            where.append("the object store")
        self.snapshot_at = time.time()
        self.snapshot_seq = seq
        self.snapshot_took = time.monotonic() - began
        # The seal wrote the new arrays and the snapshot read every sealed page: hand them
        # back, queries map again what they read.
        self.spill.trim()
        log.info(
            "index snapshot at event %d: %d documents, %.1f MB to %s (%.2f s on the loop, "
            "%.2f s in all)", seq, taken.docs, stored / 1e6, " and ".join(where), prepared,
            self.snapshot_took,
        )  # fmt: skip
        return seq

    def _local(self, suffix: str) -> Path:
        assert self.local_dir is not None
        return self.local_dir / f"{self.snapshot_name}{suffix}"

    def _write_local(
        self, taken: index_snapshot.Taken, digest: bytes | None, compressed: bool
    ) -> int:
        assert self.local_dir is not None
        self.local_dir.mkdir(parents=True, exist_ok=True)
        last = self._local(".last")
        last.unlink(missing_ok=True)  # never a digest beside a snapshot it does not describe
        size = taken.write(self._local(".snap"), compressed=compressed)
        if digest is not None:
            last.write_bytes(digest)
        return size

    async def _read_local(self) -> tuple[index_snapshot.Buffer, bytes | None] | None:
        if self.local_dir is None:
            return None
        path, last = self._local(".snap"), self._local(".last")

        def read() -> tuple[index_snapshot.Buffer, bytes | None] | None:
            # Mapped, not read: a restore copies each section where it goes, so the file
            # never sits on the heap whole (a later snapshot replaces it, never rewrites it).
            try:
                with path.open("rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    blob: index_snapshot.Buffer = (
                        mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) if size else b""
                    )
            except FileNotFoundError:
                return None
            return blob, last.read_bytes() if last.exists() else None

        return await asyncio.to_thread(read)

    async def restore(self) -> bool:
        """The local file first, else the object store's snapshot; one that cannot be
        read is logged and passed over (the index is then rebuilt from the stream)."""
        for source in ("local", "store"):
            began = time.monotonic()
            if source == "local":
                got = await self._read_local()
                if got is None:
                    continue
                blob, self._restored_last = got
            else:
                found = await self.store.get(self.snapshot_name)
                if found is None:
                    return False
                blob, self._restored_last = found, None
            stored, read = len(blob), time.monotonic() - began
            if bytes(blob[: len(PACKED)]) == PACKED:  # written before snapshots were streamed
                blob = await asyncio.to_thread(zlib.decompress, memoryview(blob)[len(PACKED) :])
            fresh = self._fresh_index()
            try:
                self.index = await asyncio.to_thread(index_snapshot.load, blob, fresh)
            except Exception as exc:
                log.warning("index snapshot from %s unreadable (%s): passed over", source, exc)
                continue
            del blob  # the file's mapping goes with the last view of it
            self.spill.trim()
            self._restored_from = source
            self.snapshot_seq = self.index.seq
            self.snapshot_at = time.time()
            log.info(
                "index restored: %d documents at event %d from a %.1f MB snapshot (%s; read "
                "%.2f s, in all %.2f s); following from %d",
                len(self.index), self.index.seq, stored / 1e6, source, read,
                time.monotonic() - began, self.index.seq + 1,
            )  # fmt: skip
            return True
        return False

    async def _snapshot_still_holds(self) -> bool:
        """Whether MEM_EVENTS still holds the event the snapshot ends with. After a crash
        nats-server may drop a torn tail and give its sequence numbers to new events: a
        snapshot covering them would skip those new events for ever, so it is dropped and
        the index rebuilt from the stream."""
        seq = self.index.seq
        try:
            now = await self.events.get(seq)
            if self._restored_from == "local":
                want = self._restored_last
            else:
                want = await self.store.get(self.snapshot_name + ".last")
            if now is None and seq <= (await self.events.info()).last_seq:
                return True  # that one event was deleted since (a purge), not the tail lost
        except Exception as exc:  # cannot tell: keep the snapshot
            log.debug("snapshot check skipped: %s", exc)
            return True
        if now is not None and (want is None or want == _digest(now)):
            return True
        log.warning(
            "MEM_EVENTS no longer holds event %d that the index snapshot ends with (the store "
            "was repaired after a crash): the index is rebuilt from the stream",
            seq,
        )
        return False

    def snapshot_wait(self) -> float:
        """Seconds until the next periodic snapshot."""
        return max(self.snapshot_every, SNAPSHOT_SPACING * self.snapshot_took)

    async def _trim_loop(self) -> None:
        """Pages of the mapped arrays that queries read stay resident until handed back:
        now and then they are (hot ones map again from the page cache on the next read)."""
        while True:
            await asyncio.sleep(self.trim_every)
            self.spill.trim()

    async def _snapshot_loop(self) -> None:
        while True:
            await asyncio.sleep(self.snapshot_wait())
            try:
                await self.save()
            except Exception:
                log.exception("index snapshot failed; the next one will retry")

    async def _embed_loop(self) -> None:
        assert self.embedder is not None
        while True:
            if self.index.pending_text:
                # Batches are cut and stored on the loop; only the model runs in a thread.
                docs, pieces, owners = take_batch(self.index, 64)
                try:
                    if pieces:
                        vecs = await asyncio.to_thread(self.embedder.embed, pieces)
                        store_batch(self.index, owners, vecs)
                except Exception:
                    log.exception("embedding failed; the batch goes back to the queue")
                    for d in docs:
                        if d in self.index.texts:
                            self.index.pending_text[d] = self.index.texts[d]
                    await asyncio.sleep(5)
                continue
            await asyncio.sleep(0.2)

    def status(self) -> dict[str, Any]:
        st = self.index.status()
        st["lag"] = max(self.stream_last_seq - self.index.seq, 0)
        st["snapshotSeq"] = self.snapshot_seq
        st["snapshotAgeSeconds"] = (
            round(time.time() - self.snapshot_at, 1) if self.snapshot_at else None
        )
        st["embedder"] = self.embedder.name if self.embedder else "none"
        return st
