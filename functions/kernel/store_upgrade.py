"""An older data dir brought to records on MEM_EVENTS in place, at its first start.

Before, an observation was a key of the KV bucket `mem_observations` and, besides, an
`ObservationAdded` event on MEM_EVENTS (docs/design/observation-records.md). The upgrade
makes the event the record and deletes the bucket:

1. `fold`: MEM_EVENTS' observation events are read in order and put in the id index, each
   compared with the bucket's value of its id (batched reads). An event of a forgotten
   record (the bucket holds its tombstone) is deleted, its bytes erased, and its id kept as
   forgotten; an older version of a record (the compression model's rewrite came after it)
   is deleted when the newer one is folded; an event whose bytes differ from the bucket's
   value is noted. Resumable: the index's watermark moves after each batch.
2. `records`: the bucket's keys, read without their values, in order: a record with no
   event at all (a write that died between its two steps and was never replayed) is
   published; a noted one whose record differs from its last event (a team share marked
   only the bucket's copy) is published as its next version (`revision` + 1, so the read
   models do not count it again). Resumable: the cursor is saved after each batch.
3. `finish`: the buckets `mem_observations` and `mem_dedup` (its markers were for the old
   replay check) are deleted, and with them nats-server's per-key state.

One process does it (the first to claim the `upgrade` key of the index bucket, renewed as
it goes); the others wait for it. Progress goes to the log (the console shows it) every few
seconds, and to the supervisor, which gives a worker that reports progress more time to
become ready (`engine.still_starting`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
import time

import msgspec

from engine import Bucket, CasConflict, Client, Entry, FunctionError, Stream, still_starting
from functions.kernel.observation_fold import OBSERVATION_SUBJECTS, delete_messages
from functions.kernel.observation_index import UPGRADE, Op, Watermark, key_of
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.records import (
    DEDUP_BUCKET,
    EVENTS_SUBJECT,
    OBSERVATIONS_BUCKET,
    Observation,
)

log = logging.getLogger("functions.kernel.store_upgrade")

BATCH = 8192
"""Events folded (and bucket values compared) per round."""
KEYS_BATCH = 4096
"""Bucket keys checked per round of the second phase."""
STALE = 30.0
"""Seconds without news from the process upgrading before another takes over."""
SAY_EVERY = 3.0
"""Seconds between two progress lines."""
PROJECT_SUBJECT = re.compile(re.escape(EVENTS_SUBJECT) + r"\.observation\.p[0-9a-f]{16}")
"""A project's subject (`observation_events_subject`); an old record's own subject is
`...observation.<its id>`."""
_decode_obs = msgspec.json.Decoder(Observation).decode


class Progress(msgspec.Struct, kw_only=True):
    phase: str = "fold"
    """fold, records, finish, done."""
    cursor: int = 0
    """records: the last sequence of the bucket's stream handled."""
    noted: list[str] = msgspec.field(default_factory=list)
    """Keys whose bucket value differed from an event of theirs (checked in `records`)."""
    holder: str = ""
    beat: float = 0.0
    """When the holder last wrote (the server's clock)."""
    folded: int = 0
    erased: int = 0
    republished: int = 0
    moved: int = 0


class _Event(msgspec.Struct, tag="observation.added", tag_field="type"):
    observation: msgspec.Raw


class _Id(msgspec.Struct):
    id: str


_event = msgspec.json.Decoder(_Event).decode
_id_of = msgspec.json.Decoder(_Id).decode
_encode = msgspec.json.Encoder().encode


async def upgrade_observations(client: Client, events: Stream, records: ObservationRecords) -> None:
    """Upgrade the data dir if it has the old observations bucket (else one request)."""
    old = client.stream(f"KV_{OBSERVATIONS_BUCKET}")
    try:
        await old.info()
    except FunctionError as err:
        if err.code == "NOT_FOUND":
            return
        raise
    await _Upgrade(client, events, records, old).run()


class _Upgrade:
    def __init__(
        self, client: Client, events: Stream, records: ObservationRecords, old: Stream
    ) -> None:
        self.client = client
        self.events = events
        self.records = records
        self.old = old
        self.index = records.index
        self.me = secrets.token_hex(6)
        self.progress = Progress()
        self.revision = 0
        self.began = time.monotonic()
        self.said = 0.0

    # ---- who does it -----------------------------------------------------------------
    async def run(self) -> None:
        if not await self._claim():
            return  # another process did it while this one waited
        old_bucket = await self.client.bucket(OBSERVATIONS_BUCKET)
        info = await self.old.info()
        log.warning(
            "upgrading the observation store in place: %d records of the KV bucket %s become "
            "records on %s (one pass; progress follows)",
            info.messages, OBSERVATIONS_BUCKET, self.events.name,
        )  # fmt: skip
        if self.progress.phase == "fold":
            await self._fold(old_bucket)
            self.progress.phase = "records"
            await self._save()
        if self.progress.phase == "records":
            await self._records(old_bucket)
            self.progress.phase = "finish"
            await self._save()
        if self.progress.phase == "finish":
            for name in (f"KV_{OBSERVATIONS_BUCKET}", f"KV_{DEDUP_BUCKET}"):
                with contextlib.suppress(FunctionError):
                    await self.client.stream(name).remove()
            self.progress.phase = "done"
            self.progress.noted = []
            await self._save()
        log.warning(
            "observation store upgraded in %.1fs: %d records folded, %d forgotten ones erased "
            "from the event log, %d published again, %d moved to their project's subject",
            time.monotonic() - self.began, self.progress.folded, self.progress.erased,
            self.progress.republished, self.progress.moved,
        )  # fmt: skip

    async def _claim(self) -> bool:
        """Take the upgrade, or wait for the process doing it; False when it is done."""
        waited = 0.0
        while True:
            e: Entry[bytes] | None = await self.index.bucket.entry(UPGRADE, bytes)
            cur = msgspec.json.decode(e.value, type=Progress) if e is not None else Progress()
            if cur.phase == "done" and not await self._old_exists():
                return False
            now = await self.client.bus_time()
            if cur.holder and cur.holder != self.me and now - cur.beat < STALE:
                if time.monotonic() - waited > 10.0:
                    waited = time.monotonic()
                    log.warning("waiting for another process upgrading the observation store")
                still_starting()
                await asyncio.sleep(1.0)
                if not await self._old_exists():
                    return False
                continue
            cur.holder, cur.beat = self.me, now
            try:
                self.revision = await self.index.bucket.compare_and_set(
                    UPGRADE, _encode(cur), e.revision if e is not None else 0
                )
            except CasConflict:
                continue  # claimed by another meanwhile: look again
            self.progress = cur
            if cur.phase == "done":  # an earlier run stopped before deleting the bucket
                cur.phase = "finish"
            return True

    async def _old_exists(self) -> bool:
        try:
            await self.old.info()
        except FunctionError as err:
            if err.code == "NOT_FOUND":
                return False
            raise
        return True

    async def _save(self) -> None:
        self.progress.beat = await self.client.bus_time()
        # Raises CasConflict if another process took the upgrade over (this one stalled
        # past STALE): then that one finishes it and this start fails and is retried.
        self.revision = await self.index.bucket.compare_and_set(
            UPGRADE, _encode(self.progress), self.revision
        )

    def _say(self, what: str, done: int, total: int) -> None:
        still_starting()
        now = time.monotonic()
        if now - self.said < SAY_EVERY and done < total:
            return
        self.said = now
        pct = 100.0 * done / total if total else 100.0
        log.warning(
            "upgrading the observation store: %s %d of %d (%.0f%%), %.0fs",
            what, done, total, pct, now - self.began,
        )  # fmt: skip

    # ---- 1. fold -----------------------------------------------------------------------
    async def _fold(self, old_bucket: Bucket) -> None:
        mark, mark_rev = await self.index.watermark()
        at = await self.client.bus_time()
        last = (await self.events.info()).last_seq
        first = mark.seq
        batch: list[tuple[str, int, bytes, str]] = []
        reader = self.events.read(after=mark.seq, subject=OBSERVATION_SUBJECTS)
        async with contextlib.aclosing(reader) as messages:
            async for m in messages:
                if m.seq > last:
                    break
                try:
                    raw = bytes(_event(m.data).observation)
                    key = key_of(_id_of(raw).id)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                batch.append((key, m.seq, raw, m.subject))
                if len(batch) >= BATCH:
                    await self._fold_batch(old_bucket, batch)
                    batch = []
                    got = await self.index.advance(Watermark(seq=m.seq, at=m.at), mark_rev)
                    if got is None:
                        raise RuntimeError("the observation index moved under the upgrade")
                    mark_rev = got
                    await self._save()
                    self._say("events folded", m.seq - first, last - first)
        await self._fold_batch(old_bucket, batch)
        got = await self.index.advance(Watermark(seq=max(last, mark.seq), at=at), mark_rev)
        if got is None:
            raise RuntimeError("the observation index moved under the upgrade")
        self._say("events folded", last - first, last - first)

    async def _fold_batch(
        self, old_bucket: Bucket, batch: list[tuple[str, int, bytes, str]]
    ) -> None:
        if not batch:
            return
        keys = list(dict.fromkeys(k for k, _, _, _ in batch))
        values: list[Entry[bytes] | None] = await old_bucket.entries(keys, bytes)
        stored = {k: e.value for k, e in zip(keys, values, strict=True) if e is not None}
        deleted = await old_bucket.deleted([k for k in keys if k not in stored])
        ops: list[tuple[str, Op, int]] = []
        erased: list[int] = []
        noted = set(self.progress.noted)
        moved: list[tuple[int, bytes]] = []
        for key, seq, raw, subject in batch:
            if key in deleted:
                ops.append((key, "gone", seq))
                erased.append(seq)
                continue
            ops.append((key, "fold", seq))
            value = stored.get(key)
            if value is not None and value != raw:
                noted.add(key)  # maybe an older version; checked once all are folded
            if not PROJECT_SUBJECT.fullmatch(subject):
                moved.append((seq, raw))
        doomed = await self.index.apply(ops)
        await delete_messages(self.events, erased + doomed)
        await self._move(moved, set(doomed))
        self.progress.noted = sorted(noted)
        self.progress.folded += len(batch) - len(erased)
        self.progress.erased += len(erased)

    async def _move(self, moved: list[tuple[int, bytes]], doomed: set[int]) -> None:
        """Records of the layout before per-project subjects (a subject each, which cost
        nats-server per-subject state) go to their project's subject as their next version."""
        for seq, raw in moved:
            if seq in doomed:
                continue  # an older version: deleted already
            try:
                obs = _decode_obs(raw)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            obs.revision += 1  # the read models have it: not counted again
            if await self.records.move(obs, seq):
                self.progress.moved += 1

    # ---- 2. records ------------------------------------------------------------------
    async def _records(self, old_bucket: Bucket) -> None:
        info = await self.old.info()
        prefix = f"$KV.{OBSERVATIONS_BUCKET}."
        keys: list[str] = []
        last_seq = self.progress.cursor
        reader = self.old.read(after=self.progress.cursor, headers_only=True)
        async with contextlib.aclosing(reader) as messages:
            async for m in messages:
                keys.append(m.subject[len(prefix) :])
                last_seq = m.seq
                if len(keys) >= KEYS_BATCH:
                    await self._records_batch(old_bucket, keys)
                    keys = []
                    self.progress.cursor = last_seq
                    await self._save()
                    self._say("records checked", last_seq, info.last_seq)
        await self._records_batch(old_bucket, keys)
        self.progress.cursor = last_seq
        for i in range(0, len(self.progress.noted), KEYS_BATCH):
            await self._check_noted(old_bucket, self.progress.noted[i : i + KEYS_BATCH])
        self._say("records checked", info.last_seq, info.last_seq)

    async def _records_batch(self, old_bucket: Bucket, keys: list[str]) -> None:
        if not keys:
            return
        where = await self.records.locate(keys)
        missing = [k for k in keys if k not in where]
        if not missing:
            return
        values: list[Entry[bytes] | None] = await old_bucket.entries(missing, bytes)
        for e in values:
            if e is None:
                continue  # deleted, and it never had an event: nothing to keep
            try:
                obs = _decode_obs(e.value)
            except (msgspec.DecodeError, msgspec.ValidationError):
                log.warning("upgrade: %s does not decode as an observation; left out", e.key)
                continue
            # No read model ever saw it: published as it is, as a new record.
            if await self.records.put(obs, replace=False):
                self.progress.republished += 1

    async def _check_noted(self, old_bucket: Bucket, keys: list[str]) -> None:
        values: list[Entry[bytes] | None] = await old_bucket.entries(keys, bytes)
        where = await self.records.locate(keys)
        for key, e in zip(keys, values, strict=True):
            seq = where.get(key, 0)
            if e is None or seq <= 0:
                continue
            try:
                want = _decode_obs(e.value)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            have = await self.records.read(seq)
            if have is None or have == want:
                continue
            # The read models counted the event: the bucket's version replaces it.
            want.revision = max(want.revision, have.revision + 1)
            if await self.records.put(want):
                self.progress.republished += 1
