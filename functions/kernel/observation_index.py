"""Where each observation lies in MEM_EVENTS: its id -> the stream sequence of its record.

An observation is stored once, as its `ObservationAdded` message on its project's subject of
MEM_EVENTS (docs/design/observation-records.md). This index finds it by id without a
subject per observation: the ids are spread by hash over `SHARDS` blocks, each a KV value
of the bucket `mem_observation_index` holding its ids' sequences, so nats-server keeps
per-subject state for at most 65,536 keys whatever the corpus (~15 ids a block at 1M).

An entry's value: > 0, the record's sequence; < 0, forgotten (the sequence it had); 0,
forgotten before its sequence was known. A forgotten id keeps its entry so a replay of
the event that made it is still a duplicate.

The key `w` holds the watermark: every record stored before `at` (the server's clock) has
a sequence <= `seq` and is in the blocks. Records after it (the tail) are folded in by
`functions/kernel/observation_fold.py`; a reader looks there for an id the blocks lack.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Iterable
from typing import Literal

import msgspec

from engine import Bucket, CasConflict, Entry
from functions.kernel.ids import kv_key

log = logging.getLogger("functions.kernel.observation_index")

SHARDS = 1 << 16
"""Blocks the ids are hashed into: nats-server keeps ~150-270 B of state per key, so the
index costs it at most ~10-17 MB; at 1M observations a block holds ~15 ids (~500 B)."""
WATERMARK = "w"
CLAIM = "f"
"""Which process folds now (`Claim`): one at a time behind the writes, not each over the
same records."""
UPGRADE = "upgrade"
"""The progress of an old data dir's upgrade (functions/kernel/store_upgrade.py)."""
WRITE_CHUNK = 256
"""Blocks written concurrently."""

Block = dict[str, int]
Op = Literal["fold", "live", "revive", "gone"]
"""fold: the folder met a record at `seq`; live: a writer stored a new version at `seq`
(and deleted the one before); revive: the same over a forgotten id (an import or a
restore says so); gone: a writer forgot the record at `seq` (0: not known)."""

_encode_block = msgspec.msgpack.Encoder().encode
_decode_block = msgspec.msgpack.Decoder(Block).decode


class Watermark(msgspec.Struct, kw_only=True):
    seq: int = 0
    """Every record at or below this sequence is in the blocks."""
    at: float = 0.0
    """Epoch seconds, the server's clock: every record stored before then is at or below
    `seq`."""


_encode_watermark = msgspec.json.Encoder().encode
_decode_watermark = msgspec.json.Decoder(Watermark).decode


class Claim(msgspec.Struct, kw_only=True):
    owner: str = ""
    until: float = 0.0
    """Epoch seconds, the server's clock: a claim its owner did not give back (it died
    folding) lapses then."""


_encode_claim = msgspec.json.Encoder().encode
_decode_claim = msgspec.json.Decoder(Claim).decode


def _retrieved(fut: asyncio.Future[Block | None]) -> None:
    if not fut.cancelled():
        fut.exception()


def key_of(obs_id: str) -> str:
    """An id as the index (and the KV bucket before it) keys it."""
    return kv_key(obs_id)


SHARD_BYTES = (SHARDS.bit_length() - 1) // 8
"""A block's name is this many bytes of the id's hash, in hex."""


def shard_of(key: str) -> str:
    digest = hashlib.blake2b(key.encode(), digest_size=SHARD_BYTES).digest()
    return f"s.{digest.hex()}"


def merge(block: Block, key: str, op: Op, seq: int) -> list[int]:
    """Apply one change to a block (in place); the sequences of messages that must go
    (older versions, records written over a forgotten id)."""
    cur = block.get(key)
    if op == "fold":
        if cur is None:
            block[key] = seq
            return []
        if cur <= 0:
            return [seq]  # forgotten: a late rewrite must not bring it back
        if seq > cur:
            block[key] = seq
            return [cur]
        return [seq] if seq < cur else []
    if op == "gone":
        if cur is not None and cur > 0 and cur != seq:
            # a newer version than the one forgotten: it goes too
            block[key] = -max(cur, seq)
            return [cur]
        if seq:
            block[key] = -seq
        elif cur is None or cur > 0:
            block[key] = -cur if cur else 0
        return []
    # live / revive
    if cur is not None and cur <= 0 and op == "live":
        return [seq]  # forgotten meanwhile: the forget wins
    if cur is not None and cur > seq:
        return [seq]  # a newer version is there already
    block[key] = seq
    return [cur] if cur is not None and 0 < cur != seq else []


class ObservationIndex:
    """The index bucket: blocks and the watermark."""

    def __init__(self, bucket: Bucket) -> None:
        self.bucket = bucket
        self._queued: dict[str, asyncio.Future[Block | None]] = {}
        """Blocks `lookup` callers wait for, read together by `_read_queued`."""
        self._reader: asyncio.Task[None] | None = None

    async def watermark(self) -> tuple[Watermark, int]:
        """The watermark and its revision (0: none written yet)."""
        e: Entry[bytes] | None = await self.bucket.entry(WATERMARK, bytes)
        if e is None:
            return Watermark(), 0
        return _decode_watermark(e.value), e.revision

    async def advance(self, mark: Watermark, revision: int) -> int | None:
        """Move the watermark from `revision`: its new revision, or None when another
        folder moved it first."""
        try:
            return await self.bucket.compare_and_set(WATERMARK, _encode_watermark(mark), revision)
        except CasConflict:
            return None

    async def claim(self, owner: str, now: float, until: float) -> int | None:
        """Take the fold for `owner` until `until`: the claim's revision, or None when
        another owner holds it (or took it first)."""
        e: Entry[bytes] | None = await self.bucket.entry(CLAIM, bytes)
        if e is not None:
            held = _decode_claim(e.value)
            if held.owner != owner and held.until > now:
                return None
        data = _encode_claim(Claim(owner=owner, until=until))
        try:
            return await self.bucket.compare_and_set(CLAIM, data, e.revision if e else 0)
        except CasConflict:
            return None

    async def unclaim(self, owner: str, revision: int) -> None:
        """Give the fold back (unless someone took it since: then it is theirs)."""
        with contextlib.suppress(CasConflict):
            await self.bucket.compare_and_set(CLAIM, _encode_claim(Claim(owner=owner)), revision)

    async def lookup(self, key: str) -> int | None:
        """The entry of one key (None: the blocks do not have it).

        Every create-once write asks this, so under concurrent writes the lookups share
        requests: those made while a read is under way go together in the next one (one
        batched get for many writers instead of a round trip each; alone, one get). A
        lookup is answered by a read that starts after it was made."""
        shard = shard_of(key)
        fut = self._queued.get(shard)
        if fut is None:
            fut = self._queued[shard] = asyncio.get_running_loop().create_future()
            # A waiter cancelled before the answer leaves no one to retrieve an error.
            fut.add_done_callback(_retrieved)
            if self._reader is None:
                self._reader = asyncio.create_task(self._read_queued(), name="index-lookup")
        block = await asyncio.shield(fut)
        return None if block is None else block.get(key)

    async def _read_queued(self) -> None:
        batch: dict[str, asyncio.Future[Block | None]] = {}
        try:
            while self._queued:
                batch, self._queued = self._queued, {}
                shards = list(batch)
                entries: list[Entry[bytes] | None]
                try:
                    if len(shards) == 1:
                        entries = [await self.bucket.entry(shards[0], bytes)]
                    else:
                        entries = await self.bucket.entries(shards, bytes)
                except Exception as exc:
                    for f in batch.values():
                        if not f.done():
                            f.set_exception(exc)
                    continue
                for s, e in zip(shards, entries, strict=True):
                    if not batch[s].done():
                        batch[s].set_result(None if e is None else _decode_block(e.value))
        finally:
            self._reader = None
            for f in [*batch.values(), *self._queued.values()]:
                f.cancel()  # when the reader was cancelled (the process is going)
            self._queued = {}

    async def lookup_with_mark(self, keys: list[str]) -> tuple[dict[str, int], Watermark]:
        """The entries the blocks hold for `keys`, and the watermark read with them (in one
        request where the bucket allows it). The watermark comes first in the request: the
        blocks read hold at least every record up to it."""
        shards = sorted({shard_of(k) for k in keys})
        got: list[Entry[bytes] | None] = await self.bucket.entries([WATERMARK, *shards], bytes)
        mark = _decode_watermark(got[0].value) if got[0] is not None else Watermark()
        found: dict[str, int] = {}
        blocks = {s: _decode_block(e.value) for s, e in zip(shards, got[1:], strict=True) if e}
        for k in keys:
            v = blocks.get(shard_of(k), {}).get(k)
            if v is not None:
                found[k] = v
        return found, mark

    async def apply(self, changes: Iterable[tuple[str, Op, int]]) -> list[int]:
        """Apply changes (in order) to their blocks, each block under compare-and-set and
        merged again on a conflict; the sequences of messages that must go."""
        by_shard: dict[str, list[tuple[str, Op, int]]] = {}
        for ch in changes:
            by_shard.setdefault(shard_of(ch[0]), []).append(ch)
        shards = list(by_shard)
        doomed: list[int] = []
        for i in range(0, len(shards), WRITE_CHUNK):
            chunk = shards[i : i + WRITE_CHUNK]
            entries: list[Entry[bytes] | None] = await self.bucket.entries(chunk, bytes)
            results = await asyncio.gather(
                *(self._write(s, e, by_shard[s]) for s, e in zip(chunk, entries, strict=True))
            )
            for r in results:
                doomed.extend(r)
        return doomed

    async def _write(
        self, shard: str, entry: Entry[bytes] | None, changes: list[tuple[str, Op, int]]
    ) -> list[int]:
        for _ in range(64):
            block = _decode_block(entry.value) if entry is not None else {}
            doomed: list[int] = []
            for key, op, seq in changes:
                doomed.extend(merge(block, key, op, seq))
            data = _encode_block(block)
            if entry is not None and data == entry.value:
                return doomed  # nothing new (a record folded twice)
            try:
                await self.bucket.compare_and_set(
                    shard, data, entry.revision if entry is not None else 0
                )
                return doomed
            except CasConflict:
                entry = await self.bucket.entry(shard, bytes)
        raise CasConflict(self.bucket.bucket, shard)

    async def drop_after(self, last: int) -> int:
        """Remove the entries of records stored after `last` (a forgotten one keeps its
        entry: it stays forgotten); how many went."""
        dropped = 0
        async for shard, data in self.bucket.scan("s.>", bytes):
            block = _decode_block(data)
            gone = [k for k, v in block.items() if v > last]
            if not gone:
                continue

            def cut(cur: bytes | None, gone: list[str] = gone) -> bytes | None:
                if cur is None:
                    return None
                b = _decode_block(cur)
                for k in gone:
                    if b.get(k, 0) > last:
                        del b[k]
                return _encode_block(b)

            await self.bucket.update(shard, cut, type=bytes)
            dropped += len(gone)
        return dropped

    async def blocks(self) -> int:
        """Blocks written so far."""
        return len(await self.bucket.stored_keys("s.>"))
