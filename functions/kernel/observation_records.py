"""Observations as records on bounded subjects: each one is its `ObservationAdded` message
on its project's subject of MEM_EVENTS, found by id through the index
(functions/kernel/observation_index.py). docs/design/observation-records.md says why.

- A record is written once (`add`: the write path's create-once, exact under replays: the
  msg id within the duplicate window, the index after it) or as a new version of itself
  (`put`, `update`: the new version is published, the one before is deleted). A new
  version's msg id names the version it replaces (`rev:<id>:<seq>`), so two writers that
  read the same version cannot both replace it: the second is told it lost and reads again.
- A forgotten record's message is deleted with its bytes erased, and its id stays in the
  index as forgotten: a replay of the event that made it is a duplicate, and a late
  rewrite (the compression model's, after a forget) is deleted when it is folded.
- A reader looks in the blocks first, then in what this process wrote and the index has
  not folded yet, then in the records after the watermark (the tail: what the folder has
  not reached, usually under a second of writes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable

import msgspec

from engine import Client, Presence, Stream
from functions.kernel.observation_fold import (
    OBSERVATION_SUBJECTS,
    STALE,
    Folder,
    delete_messages,
)
from functions.kernel.observation_index import ObservationIndex, Op, key_of
from functions.kernel.records import (
    OBSERVATION_INDEX_BUCKET,
    Observation,
    ObservationAdded,
    observation_events_subject,
)

PUBLISH_TIMEOUT = 5.0
ATTEMPTS = 16
"""Tries of a write that lost a race with another writer of the same record."""

_encode = msgspec.json.Encoder().encode
_decode_added = msgspec.json.Decoder(ObservationAdded).decode


def _record(data: bytes) -> Observation | None:
    try:
        return _decode_added(data).observation
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


class ObservationRecords:
    """The observations of one store (one per process, opened with it)."""

    def __init__(self, client: Client, events: Stream, *, stale: float = STALE) -> None:
        self.client = client
        self.events = events
        self.stale = stale
        self.index: ObservationIndex
        self.folder: Folder
        self._recent: dict[str, int] = {}
        """Records this process wrote that the index may not have folded yet (key -> seq)."""

    async def open(self, *, replicas: int | None = None) -> ObservationRecords:
        config = {} if replicas is None else {"replicas": replicas}
        bucket = await self.client.bucket(OBSERVATION_INDEX_BUCKET, **config)
        self.index = ObservationIndex(bucket)
        self.folder = Folder(
            self.client, self.events, self.index, self._forget_below, stale=self.stale
        )
        return self

    def _forget_below(self, seq: int) -> None:
        self._recent = {k: s for k, s in self._recent.items() if s > seq}

    # ---- reading ---------------------------------------------------------------------
    async def locate(self, keys: Iterable[str], project: str = "") -> dict[str, int]:
        """Index entries of `keys` (see observation_index: > 0 a sequence, <= 0 forgotten);
        keys with no record are left out. `project`: where the tail is read, when known."""
        return (await self._locate(keys, project))[0]

    async def _locate(self, keys: Iterable[str], project: str) -> tuple[dict[str, int], set[str]]:
        """As `locate`, and which of the keys found are not in the blocks yet."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}, set()
        found, mark = await self.index.lookup_with_mark(wanted)
        unfolded: set[str] = set()
        missing = set()
        for k in wanted:
            if k in found:
                continue
            if k in self._recent:
                found[k] = self._recent[k]
                unfolded.add(k)
            else:
                missing.add(k)
        if missing and (await self.events.info()).last_seq > mark.seq:
            tail = await self._tail(mark.seq, missing, project)
            found.update(tail)
            unfolded.update(tail)
        return found, unfolded

    async def _tail(self, after: int, keys: set[str], project: str) -> dict[str, int]:
        subject = observation_events_subject(project) if project else OBSERVATION_SUBJECTS
        out: dict[str, int] = {}
        reader = self.events.read(after=after, subject=subject)
        async with contextlib.aclosing(reader) as messages:
            async for m in messages:
                obs = _record(m.data)
                if obs is not None and (k := key_of(obs.id)) in keys:
                    out[k] = m.seq  # the last version wins
        return out

    async def read(self, seq: int) -> Observation | None:
        msg = await self.events.get(seq)
        return _record(msg.data) if msg is not None else None

    async def get(self, obs_id: str) -> Observation | None:
        key = key_of(obs_id)
        seq = (await self.locate([key])).get(key, 0)
        if seq <= 0:
            return None
        obs = await self.read(seq)
        return obs if obs is not None and key_of(obs.id) == key else None

    async def get_many(self, ids: Iterable[str]) -> dict[str, Observation]:
        """The records of `ids` that exist, by id."""
        keys = {key_of(i): i for i in ids}
        where = await self.locate(keys)
        live = [(k, s) for k, s in where.items() if s > 0]
        out: dict[str, Observation] = {}
        for i in range(0, len(live), 64):
            chunk = live[i : i + 64]
            got = await asyncio.gather(*(self.read(s) for _, s in chunk))
            for (k, _), obs in zip(chunk, got, strict=True):
                if obs is not None and key_of(obs.id) == k:
                    out[keys[k]] = obs
        return out

    async def presence(self, obs_id: str) -> Presence:
        key = key_of(obs_id)
        seq = (await self.locate([key])).get(key)
        if seq is None:
            return "absent"
        if seq <= 0:
            return "deleted"
        obs = await self.read(seq)
        if obs is None or key_of(obs.id) != key:
            return "absent"  # its message was lost (a torn store): a replay stores it again
        return "present"

    async def scan(self, project: str = "") -> AsyncIterator[Observation]:
        """Every record (of `project` when given), in the order they were stored, a page at
        a time."""
        subject = observation_events_subject(project) if project else OBSERVATION_SUBJECTS
        reader = self.events.read(subject=subject)
        async with contextlib.aclosing(reader) as messages:
            async for m in messages:
                obs = _record(m.data)
                if obs is not None and (not project or obs.project == project):
                    yield obs

    async def count(self) -> int:
        """Records stored: one message each, counted from the stream's subject state."""
        return sum((await self.events.subject_counts(OBSERVATION_SUBJECTS)).values())

    # ---- writing ---------------------------------------------------------------------
    async def _publish(self, obs: Observation, msg_id: str) -> tuple[int, bool]:
        ack = await self.events.publish(
            observation_events_subject(obs.project),
            _encode(ObservationAdded(observation=obs)),
            msg_id=msg_id,
            timeout=PUBLISH_TIMEOUT,
        )
        return ack.seq, bool(ack.duplicate)

    async def add(self, obs: Observation) -> bool:
        """Store a new record once: False when its id is stored already (or was forgotten).
        One index read and one publish; exact under any replay (module docstring)."""
        await self.folder.fresh()
        key = key_of(obs.id)
        if key in self._recent:
            return False
        cur = await self.index.lookup(key)
        if cur is not None and not await self._lost(key, cur):
            return False
        seq, duplicate = await self._publish(obs, obs.id)
        if duplicate:
            return False
        self._recent[key] = seq
        self.folder.wrote()
        return True

    async def _lost(self, key: str, seq: int) -> bool:
        """Whether the entry's record is gone without a forget: its message is not there, or
        holds another record (a torn store's lost tail, its sequence numbers reused). Read
        only for a duplicate, which is rare: then a replay stores the record again."""
        if seq <= 0:
            return False
        obs = await self.read(seq)
        return obs is None or key_of(obs.id) != key

    async def put(self, obs: Observation, *, replace: bool = True, revive: bool = False) -> bool:
        """Store `obs` as it is: a new record, or (`replace`) a new version of the stored
        one; a forgotten id only with `revive` (an import or a restore that asks for it).
        False when nothing was written (there already and not replaced, or forgotten)."""
        await self.folder.fresh()
        key = key_of(obs.id)
        for _ in range(ATTEMPTS):
            cur = (await self.locate([key], obs.project)).get(key)
            if cur is None:
                seq, duplicate = await self._publish(obs, obs.id)
                if not duplicate:
                    self._recent[key] = seq
                    self.folder.wrote()
                    return True
                continue  # stored meanwhile (or within the window): read it again
            if cur <= 0:
                if not revive:
                    return False
                if await self._replace(key, obs, -cur, "revive") is not None:
                    return True
                continue
            if not replace:
                return False
            old = await self.read(cur)
            if old is not None and _encode(old) == _encode(obs):
                return True
            if await self._replace(key, obs, cur, "live") is not None:
                return True
        raise RuntimeError(f"observation {obs.id}: {ATTEMPTS} writers in a row got there first")

    async def update(
        self, obs_id: str, fn: Callable[[Observation], Observation | None]
    ) -> Observation | None:
        """Read-modify-write of a stored record: `fn` gets the current version and returns
        the next (None: leave it). None when there is no record (or it was forgotten);
        else the version stored after the call."""
        key = key_of(obs_id)
        for _ in range(ATTEMPTS):
            cur = (await self.locate([key])).get(key, 0)
            if cur <= 0:
                return None
            old = await self.read(cur)
            if old is None:
                continue  # replaced or forgotten since it was located
            new = fn(old)
            if new is None:
                return old
            if await self._replace(key, new, cur, "live") is not None:
                return new
        raise RuntimeError(f"observation {obs_id}: {ATTEMPTS} writers in a row got there first")

    async def move(self, obs: Observation, seq: int) -> bool:
        """Store `obs` as the next version of the record at `seq` (an upgrade moving it to
        its project's subject); False when another writer replaced that one first."""
        return await self._replace(key_of(obs.id), obs, seq, "live") is not None

    async def _replace(self, key: str, obs: Observation, base: int, op: Op) -> int | None:
        """Publish `obs` as the version after the one at `base` (a forgotten one's, for a
        revive); None when another writer replaced `base` first."""
        seq, duplicate = await self._publish(obs, f"rev:{obs.id}:{base}")
        if duplicate:
            return None
        # The old version goes before the index moves: a crash in between leaves the
        # index on a deleted message (read as missing until the folder reaches the new
        # one), never two versions the folder will not revisit.
        if op == "live":
            await delete_messages(self.events, [base])
        self._recent.pop(key, None)
        doomed = await self.index.apply([(key, op, seq)])
        await delete_messages(self.events, doomed)
        return None if seq in doomed else seq

    async def forget(
        self, ids: Iterable[str], keep: Callable[[Observation], bool] | None = None
    ) -> list[Observation]:
        """Delete these records (their messages erased), except those `keep` says no to;
        the records deleted. Their ids stay in the index as forgotten."""
        keys = {key_of(i) for i in ids}
        where, unfolded = await self._locate(keys, "")
        if unfolded:
            # Not folded yet: fold first, so the forget lands on an entry the blocks hold
            # and a replay after the window finds it forgotten.
            await self.folder.fold()
            where = await self.locate(keys)
        victims: list[tuple[str, int, Observation]] = []
        for k, seq in where.items():
            if seq <= 0:
                continue
            obs = await self.read(seq)
            if obs is None or key_of(obs.id) != k or (keep is not None and not keep(obs)):
                continue
            victims.append((k, seq, obs))
        if not victims:
            return []
        gone: Op = "gone"
        doomed = await self.index.apply([(k, gone, seq) for k, seq, _ in victims])
        await delete_messages(self.events, [seq for _, seq, _ in victims] + doomed)
        for k, _, _ in victims:
            self._recent.pop(k, None)
        return [obs for _, _, obs in victims]

    async def repair(self) -> int:
        """The index brought back to a stream that lost its tail in a crash (Folder.repair)."""
        return await self.folder.repair()

    async def close(self) -> None:
        await self.folder.close()
