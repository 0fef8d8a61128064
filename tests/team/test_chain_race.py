"""Versions of one shared memory applied at the same time settle on one live head. A new
member catches up on two peers' logs at once: each apply met a chain without the other's
record, and the record stored last kept the head it had seen (on the team of three, the
first version and a losing edit stayed live beside the resolved head). Also a settle that
worked from a chain read before another version joined it: its revive of the head it saw
landed after the other applier had pointed that version to the new head, leaving two live
(found by a clean-clone run; the settle now works again until the chain holds still)."""

from __future__ import annotations

import asyncio
import inspect
import random
from typing import Any, cast

from engine import Bucket, Client
from functions.kernel.records import Memory
from functions.kernel.store import MemoryStore
from functions.team.book import TeamBook
from functions.team.config import TeamConfig
from functions.team.log import TeamLog, shared_copy
from functions.team.records import Shared, TeamItem

TEAM = "dev-team"
CHAINS = 200
"""Chains raced: a stale settle showed in about one chain of 30-100 (a version revived after
another applier had pointed it to the new head), so enough of them to see it every run."""


class Jittered:
    """A bucket whose every call waits a few random milliseconds first: the interleavings
    of a busy worker, on the real bucket."""

    def __init__(self, state: Any, rng: random.Random) -> None:
        self._state, self._rng = state, rng

    def __getattr__(self, name: str) -> Any:
        got = getattr(self._state, name)
        if not inspect.iscoroutinefunction(got):
            return got

        async def call(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(self._rng.random() * 0.005)
            return await got(*args, **kwargs)

        return call


def item(memory: Memory, root: str, origin: str) -> Shared:
    copy = shared_copy(memory, TEAM, origin)
    assert isinstance(copy, Memory)
    return Shared(item=TeamItem(id=memory.id, kind="memory", item_type="memory", team=TEAM,
                                origin=origin, shared_by="u", shared_at="2026-12-01T10:00:00Z",
                                root=root, memory=copy))  # fmt: skip


async def test_versions_applied_at_once_leave_only_the_head_live(client: Client) -> None:
    store = await MemoryStore(client).open()
    cfg = TeamConfig(team=TEAM, user="c", mode="private", origin="c", peers=("a", "b"))
    team_log = TeamLog(client, cfg.origin)
    await team_log.ensure()
    rng = random.Random(7)
    store.memories = cast(Bucket, Jittered(store.memories, rng))
    book = TeamBook(
        store, cast(Bucket, Jittered(await client.bucket("mem_team"), rng)), team_log, cfg
    )
    bad: list[str] = []
    two_live: list[list[str]] = []
    for n in range(CHAINS):
        root = Memory(id=f"m{n}", content="the deploy key rotates", version=1,
                      created_at="2026-12-01T10:00:00Z")  # fmt: skip
        # Two edits of the root made apart (a conflict) and one on top of the first.
        e1 = Memory(id=f"m{n}a", content="weekly", version=2, supersedes=root.id,
                    created_at="2026-12-01T10:01:00Z")  # fmt: skip
        e2 = Memory(id=f"m{n}b", content="always", version=2, supersedes=root.id,
                    created_at="2026-12-01T10:02:00Z")  # fmt: skip
        e3 = Memory(id=f"m{n}c", content="weekly, on fridays", version=3, supersedes=e1.id,
                    created_at="2026-12-01T10:03:00Z")  # fmt: skip
        events = [(item(root, root.id, "a"), "a"), (item(e1, root.id, "a"), "a"),
                  (item(e2, root.id, "b"), "b"), (item(e3, root.id, "a"), "a")]  # fmt: skip
        rng.shuffle(events)
        await asyncio.gather(*(book.apply(ev, origin) for ev, origin in events))
        chain = await book.chains.get(root.id)
        assert chain is not None
        head = chain.head()
        live = []
        for m in (root, e1, e2, e3):
            got = await store.get(store.memories, m.id, Memory)
            assert got is not None, m.id
            want = None if m.id == head else head
            if got.superseded_by is None:
                live.append(m.id)
            if got.superseded_by != want:
                bad.append(f"{m.id}: superseded_by {got.superseded_by}, head {head}")
        if live != [head]:
            two_live.append(live)
    assert not two_live, two_live  # one live version per chain, its head
    assert not bad, bad  # and every other version points to it
