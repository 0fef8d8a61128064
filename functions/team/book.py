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
import time
from typing import Any

import msgspec

from engine import Bucket
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.records import (
    Memory,
    MemoryAdded,
    Observation,
    RecordsRemoved,
)
from functions.kernel.store import MemoryStore
from functions.kernel.trust import write_path as trust
from functions.team.chains import Chains
from functions.team.config import TeamConfig
from functions.team.log import TeamLog, shared_copy
from functions.team.records import (
    Echo,
    Forgotten,
    Link,
    Probe,
    Resolution,
    Resolved,
    Shared,
    TeamEvent,
    TeamItem,
    Tombstone,
)

log = logging.getLogger("functions.team")
STORED_WAIT = 100
"""Polls (50 ms apart) for a memory whose event came before its record."""


def item_key(record_id: str) -> str:
    return "item." + kv_key(record_id)


def gone_key(record_id: str) -> str:
    return "gone." + kv_key(record_id)


def link_key(peer: str) -> str:
    return "link." + kv_key(peer)


class TeamBook:
    def __init__(self, store: MemoryStore, kv: Bucket, team_log: TeamLog, cfg: TeamConfig) -> None:
        self.store = store
        self.kv = kv
        self.log = team_log
        self.cfg = cfg
        self.chains = Chains(store, kv)
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
            root = await self.chains.root_of(record, self._shared_root)
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
            await self.chains.settle(await self.chains.add(root, record))
        return item, True

    async def _shared_root(self, record_id: str) -> str | None:
        item = await self.item(record_id)
        return (item.root or item.id) if item is not None else None

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

    async def adopt(self, previous: str) -> int:
        """Items this instance shared as `previous` (its origin before it got, or changed,
        its domain) become its items as itself, and are appended again under its own
        subjects: a peer sourcing `team.log.<origin>.>` gets them. How many."""
        n = 0
        origin = self.cfg.origin
        for item in await self.items():
            if item.origin != previous:
                continue
            copy: Memory | Observation | None = item.memory or item.observation
            if copy is not None and copy.instance in ("", previous):
                copy = msgspec.structs.replace(copy, instance=origin)
            item = msgspec.structs.replace(
                item,
                origin=origin,
                memory=copy if isinstance(copy, Memory) else None,
                observation=copy if isinstance(copy, Observation) else None,
            )
            await self.log.append(Shared(item=item))
            await self.kv.put(item_key(item.id), item)
            n += 1
        return n

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
        elif isinstance(event, Forgotten):
            outcome = await self._apply_forgotten(event)
        elif isinstance(event, Probe):
            return await self._apply_probe(event, origin)
        elif isinstance(event, Echo):
            return await self._apply_echo(event, origin)
        else:
            outcome = await self._apply_resolved(event)
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
                await self.chains.add(item.root or item.id, record, gone=True)
            return "gone"
        had = await self.item(item.id)
        # A peer's words are third-party text, judged here whatever the peer concluded (its
        # verdict may hold the record, never clear it), sanitized and scrubbed.
        record = trust.vet(record, trust.PEER)
        item = _vetted_item(item, record)
        # The record before its item: a retry after a crash in between finds no item and
        # completes the work (each step is a no-op the second time).
        st = self.store
        if isinstance(record, Observation):
            # Stored once (over a local forget too, as the KV put before it did).
            await st.put_observation(record, replace=False, revive=True)
        else:
            moved = await self.chains.add(item.root or item.id, record)
            after = moved.chain.head() if moved.chain is not None else None
            if await st.get(st.memories, record.id, Memory) is None:
                record.superseded_by = None if after == record.id else after
                record.conflict, record.alternates = False, []
                await st.memories.put(kv_key(record.id), record)
                if after == record.id:
                    await st.publish(MemoryAdded(memory=record), msg_id=record.id)
            await self.chains.settle(moved)
        if had is not None:
            return "duplicate"
        await self.kv.put(item_key(item.id), item)
        trust.count(st.client, record.trust)
        return "stored"

    async def forgotten_by(self, record_id: str, origin: str) -> bool:
        """A peer reached over HTTP forgot this record (its export's `forgotten`): forget it
        here too when the team holds it. True when something went."""
        item = await self.item(record_id)
        if item is None:
            return False
        ev = Forgotten(id=record_id, kind=item.kind, team=item.team, origin=origin,
                       at=now_iso(), root=item.root)  # fmt: skip
        return await self._apply_forgotten(ev) == "forgotten"

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
            root = ev.root or (item.root if item else "") or ev.id
            await self.chains.settle(await self.chains.bury(root, ev.id))
        st = self.store
        if ev.kind == "memory":
            removed = await st.memories.presence(kv_key(ev.id)) == "present"
            if removed:
                await st.memories.delete(kv_key(ev.id))
        else:
            removed = bool(await st.forget_observations([ev.id]))
        await self.kv.delete(item_key(ev.id))
        if removed and ev.origin != self.cfg.origin:
            why = f"forgotten on {ev.origin}"
            await st.publish(RecordsRemoved(ids=[ev.id], reason=why, action="team"))
            await st.audit("team-forget", [ev.id], reason=why)

    # ---- conflicts ----------------------------------------------------------------
    async def resolve(self, root: str, head: str, over: list[str]) -> None:
        """A person here chose `head` over `over`: the chain's head here and, through the
        TEAM stream, on every instance."""
        res = Resolution(head=head, over=sorted(over), at=now_iso(), origin=self.cfg.origin,
                         by=self.cfg.user)  # fmt: skip
        await self.log.append(Resolved(root=root, team=self.cfg.team, resolution=res))
        await self.chains.settle(await self.chains.resolve(root, res))

    async def _apply_resolved(self, ev: Resolved) -> str:
        if ev.team != self.cfg.team:
            return "other team"
        moved = await self.chains.resolve(ev.root, ev.resolution)
        if not moved.changed:
            return "duplicate"
        await self.chains.settle(moved)
        return "resolved"

    # ---- the round-trip probe --------------------------------------------------------
    async def _apply_probe(self, probe: Probe, origin: str) -> str:
        """A peer's probe reached us: note it, and answer on our own log (the echo travels
        back the way our shares do)."""
        now = time.time()
        seen: list[bool] = []

        def heard(cur: Link | None) -> Link | None:
            link = cur or Link()
            if link.heard == probe.id:
                seen.append(True)
                return None  # a replay: answered already
            link.heard, link.heard_at = probe.id, now
            return link

        await self.kv.update(link_key(origin), heard, type=Link)
        if seen:
            return "duplicate"
        await self.log.echo(Echo(probe=probe.id, to=origin, origin=self.cfg.origin, at=now_iso()))
        return "echoed"

    async def _apply_echo(self, echo: Echo, origin: str) -> str:
        if echo.to != self.cfg.origin:
            return "duplicate"  # another peer's round trip: nothing for us
        now = time.time()

        seen: list[bool] = []

        def echoed(cur: Link | None) -> Link | None:
            link = cur or Link()
            if link.echoed == echo.probe:
                seen.append(True)
                return None
            link.echoed, link.echoed_at = echo.probe, now
            return link

        await self.kv.update(link_key(origin), echoed, type=Link)
        return "duplicate" if seen else "round trip"

    async def links(self) -> dict[str, Link]:
        return {k.removeprefix("link."): v async for k, v in self.kv.scan("link.>", Link)}

    async def _mark_team(self, record: Memory | Observation) -> None:
        team = self.cfg.team
        if isinstance(record, Observation):

            def mark_observation(cur: Observation) -> Observation | None:
                if cur.team == team:
                    return None
                # A rewrite the read models already counted (Observation.revision).
                cur.team, cur.revision = team, cur.revision + 1
                return cur

            await self.store.update_observation(record.id, mark_observation)
            return

        def mark(cur: Any) -> Any:
            if cur is None or cur.team == team:
                return None
            cur.team = team
            return cur

        await self.store.memories.update(kv_key(record.id), mark, type=Memory)


def _vetted_item(item: TeamItem, record: Memory | Observation) -> TeamItem:
    """A peer's item as this instance stores it: its strings sanitized and scrubbed, its
    record the vetted one."""
    bare = msgspec.to_builtins(msgspec.structs.replace(item, memory=None, observation=None))
    out = msgspec.convert(trust.stored_value(bare), TeamItem)
    if isinstance(record, Memory):
        out.memory = record
    else:
        out.observation = record
    return out
