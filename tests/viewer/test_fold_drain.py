"""The viewer's day records fold MEM_EVENTS in runs of up to 20k events: a stopping viewer
ends the run it is in (what it folded saved, its cursor with it) instead of holding the
engine's stop (a restart on a 1M data dir waited 4.3 s on mem::viewer::fold)."""

from __future__ import annotations

from engine import Client
from functions.kernel.records import Observation
from functions.kernel.store import MemoryStore
from functions.viewer.trends import TrendsService
from tests.fixtures import add_observations


async def test_a_draining_fold_saves_what_it_folded_and_the_next_goes_on(client: Client) -> None:
    store = await MemoryStore(client).open()
    last = await add_observations(store, (
        Observation(
            id=f"obs_fold{i:05d}", session_id="s", project="p", hook_type="post_tool_use",
            timestamp="2026-12-01T10:00:00.000Z", title=f"step {i}",
        )
        for i in range(300)
    ))  # fmt: skip
    first = TrendsService()
    await first.start(client)
    await first.drain(client)
    behind = await first.fold()
    cursor: int = await first.bucket.get("cursor.events", int) or 0
    assert 0 < cursor < last and behind == last - cursor  # ended early, saved
    again = TrendsService()
    await again.start(client)
    assert await again.fold() == 0
    assert await again.bucket.get("cursor.events", int) == last
