"""The team's book on this instance: what is shared (`item.*`), what the team forgot
(`gone.*`), and the version chains of shared memories (`chain.*`), kept in `mem_team`; how a
local share, a local edit or forget of a shared record reaches the TEAM stream; and how a
peer's event is applied to the local store (memories and observations in their buckets,
their events on MEM_EVENTS so search and the graph index them).

Applying is idempotent: a record already here is not stored again, a forgotten one never
comes back, and versions of one memory settle on the head of their chain (records.Chain),
so two instances that saw the same events hold the same records, whatever the order."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from engine import State
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.records import (
    Memory,
    MemoryAdded,
    Observation,
    ObservationAdded,
    RecordsRemoved,
)
from functions.kernel.store import MemoryStore
from functions.team.config import TeamConfig
from functions.team.log import TeamLog, shared_copy
from functions.team.records import Chain, Forgotten, Shared, TeamEvent, TeamItem, Tombstone, Version

log = logging.getLogger("functions.team")
STORED_WAIT = 100
"""Polls (50 ms apart) for a memory whose event came before its record."""
CHAIN_WALK = 100
"""How many older versions a memory's root is looked for through (as memory_chain)."""


def item_key(record_id: str) -> str:
    return "item." + kv_key(record_id)


def gone_key(record_id: str) -> str:
    return "gone." + kv_key(record_id)


def chain_key(root: str) -> str:
    return "chain." + kv_key(root)


class TeamBook:
    def __init__(self, store: MemoryStore, kv: State, team_log: TeamLog, cfg: TeamConfig) -> None:
        self.store = store
        self.kv = kv
        self.log = team_log
        self.cfg = cfg
        self.applied: dict[str, int] = {}
        """Events applied per peer since this process started."""

    # ---- reading ---------------------------------------------------------------------
    async def item(self, record_id: str) -> TeamItem | None:
        return await self.kv.get(item_key(record_id), TeamItem)

    async def gone(self, record_id: str) -> bool:
        tomb: Tombstone | None = await self.kv.get(gone_key(record_id), Tombstone)
        return tomb is not None

    async def items(self) -> list[TeamItem]:
        return [i async for _, i in self.kv.scan("item.>", TeamItem) if i.team == self.cfg.team]

    async def tombstones(self) -> list[Tombstone]:
        return [t async for _, t in self.kv.scan("gone.>", Tombstone)]

    # ---- what this instance shares -------------------------------------------------
    async def share(
        self, record: Memory | Observation, item_type: str, *, root: str = ""
    ) -> tuple[TeamItem, bool]:
        """Share a record (idempotent: a record is one item); (item, newly shared)."""
        have = await self.item(record.id)
        if have is not None:
            return have, False
        memory = isinstance(record, Memory)
        if isinstance(record, Memory) and not root:
            root = await self._root(record)
        copy = shared_copy(record, self.cfg.team, self.cfg.origin)
        item = TeamItem(
            id=record.id,
            kind="memory" if memory else "observation",
            item_type=item_type,
            team=self.cfg.team,
            origin=self.cfg.origin,
            shared_by=self.cfg.user,
            shared_at=now_iso(),
            project=record.project,
            root=root if memory else "",
            memory=copy if isinstance(copy, Memory) else None,
            observation=copy if isinstance(copy, Observation) else None,
        )
        await self.log.append(Shared(item=item))  # first: an item here is an item sent
        await self.kv.put(item_key(record.id), item)
        await self._mark_team(record)
        if isinstance(record, Memory):
            before, after = await self._chain_add(root, record)
            await self._settle(before, after, record.id)
        return item, True

    async def share_version(self, memory: Memory) -> TeamItem | None:
        """A new local version of a shared memory is shared too, in its chain."""
        if memory.instance or not memory.supersedes:
            return None
        parent = await self.item(memory.supersedes)
        if parent is None or await self.item(memory.id) is not None:
            return None
        stored = await self.stored(memory.id)
        if stored is None:
            return None
        item, _ = await self.share(stored, parent.item_type, root=parent.root or parent.id)
        return item

    async def stored(self, memory_id: str) -> Memory | None:
        """The memory as stored, once it is: its event may come before the write path has
        stored it (it appends the event first). None if it was forgotten, or never came."""
        for _ in range(STORED_WAIT):
            m: Memory | None = await self.store.get(self.store.memories, memory_id, Memory)
            if m is not None:
                return m
            if await self.store.presence(self.store.memories, memory_id) == "deleted":
                return None
            await asyncio.sleep(0.05)
        return None

    async def forget(self, record_ids: list[str]) -> int:
        """This instance forgot these records: those shared are forgotten by the team."""
        n = 0
        for rid in record_ids:
            item = await self.item(rid)
            if item is None:
                continue
            ev = Forgotten(
                id=rid,
                kind=item.kind,
                team=item.team,
                origin=self.cfg.origin,
                at=now_iso(),
                root=item.root,
            )
            await self.log.append(ev)
            await self._bury(ev, item)
            n += 1
        return n

    # ---- what peers send -------------------------------------------------------------
    async def apply(self, event: TeamEvent, origin: str) -> str:
        """Apply a peer's event; what happened (for the log and the tests)."""
        if origin == self.cfg.origin:
            return "own"
        if isinstance(event, Shared):
            outcome = await self._apply_shared(event.item)
        else:
            outcome = await self._apply_forgotten(event)
        if outcome in ("stored", "forgotten"):
            self.applied[origin] = self.applied.get(origin, 0) + 1
        return outcome

    async def _apply_shared(self, item: TeamItem) -> str:
        if item.team != self.cfg.team:
            return "other team"
        record: Memory | Observation | None = item.memory or item.observation
        if record is None:
            return "empty"
        if await self.gone(item.id):
            if isinstance(record, Memory):
                await self._chain_add(item.root or item.id, record, gone=True)
            return "gone"
        had = await self.item(item.id)
        # The record before its item: a retry after a crash in between finds no item and
        # completes the work (each step is a no-op the second time).
        st = self.store
        if isinstance(record, Observation):
            if await st.get(st.observations, record.id, Observation) is None:
                await st.observations.put(kv_key(record.id), record)
                await st.publish_once(ObservationAdded(observation=record))
        else:
            before, after = await self._chain_add(item.root or item.id, record)
            if await st.get(st.memories, record.id, Memory) is None:
                record.superseded_by = None if after == record.id else after
                await st.memories.put(kv_key(record.id), record)
                if after == record.id:
                    await st.publish(MemoryAdded(memory=record), msg_id=record.id)
            await self._settle(before, after, record.id)
        if had is not None:
            return "duplicate"
        await self.kv.put(item_key(item.id), item)
        return "stored"

    async def _apply_forgotten(self, ev: Forgotten) -> str:
        if ev.team != self.cfg.team:
            return "other team"
        if await self.gone(ev.id):
            return "duplicate"
        await self._bury(ev, await self.item(ev.id))
        return "forgotten"

    async def _bury(self, ev: Forgotten, item: TeamItem | None) -> None:
        """A forgotten record: its tombstone first (so a late share cannot bring it back),
        then the record and its item go, and the indexes are told."""
        tomb = Tombstone(id=ev.id, by=ev.origin, at=ev.at, kind=ev.kind)
        await self.kv.put(gone_key(ev.id), tomb)
        if ev.kind == "memory":
            await self._chain_gone(ev.root or (item.root if item else "") or ev.id, ev.id)
        st = self.store
        state = st.memories if ev.kind == "memory" else st.observations
        removed = await state.presence(kv_key(ev.id)) == "present"
        if removed:
            await state.delete(kv_key(ev.id))
        await self.kv.delete(item_key(ev.id))
        if removed and ev.origin != self.cfg.origin:
            why = f"forgotten on {ev.origin}"
            await st.publish(RecordsRemoved(ids=[ev.id], reason=why, action="team"))
            await st.audit("team-forget", [ev.id], reason=why)

    # ---- version chains --------------------------------------------------------------
    async def _root(self, memory: Memory) -> str:
        cur: Memory | None = memory
        root = memory.id
        for _ in range(CHAIN_WALK):
            if cur is None or not cur.supersedes:
                break
            parent = await self.item(cur.supersedes)
            if parent is not None:
                return parent.root or parent.id
            root = cur.supersedes
            cur = await self.store.get(self.store.memories, cur.supersedes, Memory)
        return root

    async def _chain_add(
        self, root: str, memory: Memory, *, gone: bool = False
    ) -> tuple[str | None, str | None]:
        """Note a version in its chain; the chain's head before and after."""
        seen: dict[str, str | None] = {}

        def add(cur: Chain | None) -> Chain | None:
            chain = cur or Chain(root=root)
            seen["before"] = chain.head()
            had = chain.versions.get(memory.id)
            new = Version(memory.version, memory.created_at, gone or bool(had and had.gone))
            if had == new:
                return None
            chain.versions[memory.id] = new
            return chain

        chain = await self.kv.update(chain_key(root), add, type=Chain)
        return seen.get("before"), chain.head() if chain else None

    async def _chain_gone(self, root: str, record_id: str) -> None:
        def bury(cur: Chain | None) -> Chain | None:
            had = cur.versions.get(record_id) if cur else None
            if cur is None or had is None or had.gone:
                return None  # a share arriving later meets the tombstone
            cur.versions[record_id] = Version(had.version, had.created_at, True)
            return cur

        await self.kv.update(chain_key(root), bury, type=Chain)

    async def _settle(self, before: str | None, after: str | None, new_id: str) -> None:
        """The chain's head moved from `before` to `after`: the old head is superseded by
        the new one here too, and leaves the indexes; a newcomer that lost is kept, as an
        older version of the head."""
        st = self.store
        if after is None:
            return
        if new_id != after:
            await self._supersede(new_id, after)
        if before and before != after and before != new_id and await self._supersede(before, after):
            await st.publish(
                RecordsRemoved(ids=[before], reason=f"superseded by {after}", action="team")
            )

    async def _supersede(self, old: str, head: str) -> bool:
        changed: dict[str, bool] = {}

        def mark(cur: Memory | None) -> Memory | None:
            if cur is None or cur.superseded_by == head:
                return None
            cur.superseded_by, cur.updated_at = head, now_iso()
            changed["yes"] = True
            return cur

        await self.store.memories.update(kv_key(old), mark, type=Memory)
        return bool(changed)

    async def _mark_team(self, record: Memory | Observation) -> None:
        state = self.store.memories if isinstance(record, Memory) else self.store.observations
        team = self.cfg.team

        def mark(cur: Any) -> Any:
            if cur is None or cur.team == team:
                return None
            cur.team = team
            return cur

        await state.update(kv_key(record.id), mark, type=type(record))
