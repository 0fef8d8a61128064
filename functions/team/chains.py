"""The version chains of shared memories (`mem_team/chain.*`, records.Chain) and what a
move of a chain's head does to the local records: the new head is the live one (in the
indexes), every other version points to it (`superseded_by`), competing versions are
flagged (`conflict`) and the head lists the branches it won over (`alternates`), so
`GET memories/<head>` shows them among its versions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import NamedTuple

from engine import Bucket
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.records import Memory, MemoryAdded, RecordsRemoved
from functions.kernel.store import MemoryStore
from functions.team.records import Chain, Resolution, Version

CHAIN_WALK = 100
"""How many older versions a memory's root is looked for through (as memory_chain)."""
SETTLE_ROUNDS = 8
"""Times a settle works again when the chain moved under it (each round is a no-op once the
records match the chain)."""


def chain_key(root: str) -> str:
    return "chain." + kv_key(root)


class Moved(NamedTuple):
    chain: Chain | None
    """The chain now (changed or not); None when there is none."""
    changed: bool


class Chains:
    def __init__(self, store: MemoryStore, kv: Bucket) -> None:
        self.store = store
        self.kv = kv

    async def get(self, root: str) -> Chain | None:
        return await self.kv.get(chain_key(root), Chain)

    async def _change(self, root: str, edit: Callable[[Chain], bool]) -> Moved:
        """Apply `edit` (True: it changed the chain) under compare-and-set."""
        changed: list[bool] = []

        def step(cur: Chain | None) -> Chain | None:
            chain = cur or Chain(root=root)
            changed[:] = [edit(chain)]
            return chain if changed[0] else None

        chain = await self.kv.update(chain_key(root), step, type=Chain)
        return Moved(chain, bool(changed and changed[0]))

    async def add(self, root: str, memory: Memory, *, gone: bool = False) -> Moved:
        """Note a version in its chain (made from `memory.supersedes`)."""

        def add(chain: Chain) -> bool:
            had = chain.versions.get(memory.id)
            parent = (memory.supersedes or "") if memory.id != chain.root else ""
            new = Version(memory.version, memory.created_at, gone or bool(had and had.gone), parent)
            if had == new:
                return False
            chain.versions[memory.id] = new
            return True

        return await self._change(root, add)

    async def bury(self, root: str, record_id: str) -> Moved:
        def bury(chain: Chain) -> bool:
            had = chain.versions.get(record_id)
            if had is None or had.gone:
                return False  # a share arriving later meets the tombstone
            chain.versions[record_id] = Version(had.version, had.created_at, True, had.parent)
            return True

        return await self._change(root, bury)

    async def resolve(self, root: str, resolution: Resolution) -> Moved:
        """Keep the later of this resolution and the chain's own (by at, then origin)."""

        def pick(chain: Chain) -> bool:
            old = chain.resolution
            if old is not None and (old.at, old.origin) >= (resolution.at, resolution.origin):
                return False
            chain.resolution = resolution
            return True

        return await self._change(root, pick)

    async def root_of(
        self, memory: Memory, shared_root: Callable[[str], Awaitable[str | None]]
    ) -> str:
        """The id of the first version of `memory`'s line: an older version's shared
        root when one is shared (`shared_root` gives it, or None), else the oldest."""
        cur: Memory | None = memory
        root = memory.id
        for _ in range(CHAIN_WALK):
            if cur is None or not cur.supersedes:
                break
            got = await shared_root(cur.supersedes)
            if got is not None:
                return got
            root = cur.supersedes
            cur = await self.store.get(self.store.memories, cur.supersedes, Memory)
        return root

    async def settle(self, moved: Moved) -> None:
        """Bring the chain's records to what the chain says now: its head live (a head that
        had lost before, as a resolution chose it, is live again), every other live version
        pointing to it, and every version's flags set. The chain is read again here, after
        the caller stored its record: two peers' versions applied at once (a new member
        catching up on two logs) each met a chain without the other's record, and the
        record stored last kept the head it saw when it began."""
        if moved.chain is None:
            return
        root = moved.chain.root
        chain = await self.get(root)
        for _ in range(SETTLE_ROUNDS):
            after = chain.head() if chain is not None else None
            if chain is None or after is None:
                return
            await self._settle_on(chain, after)
            # Another applier may have moved the chain while this one worked from what it
            # read, and this one's writes (a revive of the head it saw) may have landed
            # after the other's: work again from the chain as it is now, until it holds.
            again = await self.get(root)
            if again == chain:
                return
            chain = again

    async def _settle_on(self, chain: Chain, after: str) -> None:
        st = self.store
        for vid, v in chain.versions.items():
            if vid != after and not v.gone and await self._point(vid, after):
                await st.publish(
                    RecordsRemoved(ids=[vid], reason=f"superseded by {after}", action="team")
                )
        revived = await self._revive(after)
        if revived is not None:
            await st.publish(MemoryAdded(memory=revived))
        await self._flag(chain, after)

    async def _point(self, old: str, head: str) -> bool:
        """`old` now points to `head`; True when it was live until now (the indexes drop it)."""
        was_live: list[bool] = []

        def mark(cur: Memory | None) -> Memory | None:
            if cur is None or cur.superseded_by == head:
                return None
            was_live[:] = [not cur.superseded_by]
            cur.superseded_by, cur.updated_at = head, now_iso()
            return cur

        await self.store.memories.update(kv_key(old), mark, type=Memory)
        return bool(was_live and was_live[0])

    async def _revive(self, head: str) -> Memory | None:
        """The head's record made live (no `superseded_by`); the record if that changed it."""
        changed: list[Memory] = []

        def live(cur: Memory | None) -> Memory | None:
            if cur is None or not cur.superseded_by:
                return None
            cur.superseded_by, cur.updated_at = None, now_iso()
            changed.append(cur)
            return cur

        await self.store.memories.update(kv_key(head), live, type=Memory)
        return changed[0] if changed else None

    async def _flag(self, chain: Chain, head: str) -> None:
        competing = set(chain.conflict())
        alternates = chain.alternates(head)
        for vid, v in chain.versions.items():
            if v.gone:
                continue
            flag = vid in competing
            alts = alternates if vid == head else []

            def mark(
                cur: Memory | None, flag: bool = flag, alts: list[str] = alts
            ) -> Memory | None:
                if cur is None or (cur.conflict == flag and cur.alternates == alts):
                    return None
                cur.conflict, cur.alternates = flag, alts
                return cur

            await self.store.memories.update(kv_key(vid), mark, type=Memory)
