"""Strength: time decays it on schedule, access raises it."""

from __future__ import annotations

import pytest

from functions.kernel.clock import iso
from functions.kernel.records import Memory
from functions.kernel.store import MemoryStore
from functions.lifecycle.decay import decayed, reinforced, tier
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import DecayIn, ReinforceIn
from tests.lifecycle._data import T0, at, put_memory


@pytest.mark.unit
def test_decay_composes_however_often_it_runs() -> None:
    once = decayed(1.0, iso(T0), at(days=60), 30)
    stepwise = 1.0
    for d in range(60):
        stepwise = decayed(stepwise, iso(at(days=d)), at(days=d + 1), 30)
    assert once == pytest.approx(0.25)
    assert stepwise == pytest.approx(once)
    assert reinforced(0.25, 0.3) == pytest.approx(0.475)
    assert [tier(x) for x in (0.9, 0.3, 0.1, 0.01)] == ["hot", "warm", "cold", "fading"]


async def test_decay_lowers_strength_on_schedule_and_access_raises_it(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await put_memory(
        store, Memory(id="m1", content="use uv", created_at=iso(T0), strength_at=iso(T0))
    )
    await put_memory(
        store,
        Memory(id="pinned", content="never", pinned=True, created_at=iso(T0), strength_at=iso(T0)),
    )

    async def strength(mid: str) -> float:
        m = await store.get(store.memories, mid, Memory)
        assert m is not None
        return m.strength

    out = await lifecycle.decay(DecayIn(now=at(days=30).isoformat()))
    assert out["memories"] == 1
    assert await strength("m1") == pytest.approx(0.5)
    await lifecycle.decay(DecayIn(now=at(days=60).isoformat()))
    assert await strength("m1") == pytest.approx(0.25)
    assert await strength("pinned") == 1.0

    got = await lifecycle.reinforce(ReinforceIn(ids=["m1"], now=at(days=60).isoformat()))
    assert got["memories"][0]["strength"] == pytest.approx(0.475, abs=1e-4)
    m = await store.get(store.memories, "m1", Memory)
    assert m is not None and m.access_count == 1
    # decay continues from the reinforced value
    await lifecycle.decay(DecayIn(now=at(days=90).isoformat()))
    assert await strength("m1") == pytest.approx(0.2375, abs=1e-4)
