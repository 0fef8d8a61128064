"""A sweep (and a session summary) reads every observation to find a session's: at a
million that scan takes a minute, so a stopping lifecycle worker ends it instead of waiting
out its drain timeout (a 1M soak's stop took 32 s on it). Nothing is written by a scan cut
short; the next run does it all again."""

from __future__ import annotations

import pytest

from engine import Client, FunctionError
from functions.kernel.records import SessionSummary
from functions.kernel.store import MemoryStore
from functions.lifecycle.episodes import summarize_sessions, sweep
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import SummarizeIn, SweepIn
from tests.lifecycle._data import T0, at, obs, put_obs, put_session


async def _closed_sessions(store: MemoryStore) -> None:
    for s in ("a", "b"):
        await put_session(store, s, at(hours=-1), status="ended")
        await put_obs(store, *(obs(s, n) for n in range(60)))


async def test_a_stop_ends_the_scan_and_writes_nothing(client: Client) -> None:
    store = await MemoryStore(client).open()
    await _closed_sessions(store)
    seen: list[str] = []
    got = await summarize_sessions(
        store, {"a", "b"}, T0, visit=lambda o: seen.append(o.id), stop=lambda: len(seen) >= 10
    )
    assert got == [] and len(seen) == 10  # the scan ended where the stop came
    assert await store.get(store.summaries, "a", SessionSummary) is None


async def test_a_sweep_cut_short_is_done_whole_by_the_next_one(client: Client) -> None:
    store = await MemoryStore(client).open()
    await _closed_sessions(store)
    cut = await sweep(store, T0, None, stop=lambda: True)
    assert cut.summarized == []
    whole = await sweep(store, T0, None)
    assert sorted(whole.summarized) == ["a", "b"]
    summary = await store.get(store.summaries, "a", SessionSummary)
    assert summary is not None and summary.observation_count == 60


async def test_the_lifecycle_service_sweeps_nothing_once_draining(client: Client) -> None:
    store = await MemoryStore(client).open()
    await _closed_sessions(store)
    svc = LifecycleService()
    await svc.start(client)
    await svc.drain(client)
    assert (await svc.sweep(SweepIn())).summarized == []
    with pytest.raises(FunctionError) as stopping:
        await svc.summarize(SummarizeIn(session_id="a"))
    assert stopping.value.code == "UNAVAILABLE" and stopping.value.retryable
    again = LifecycleService()
    await again.start(client)
    assert sorted((await again.sweep(SweepIn())).summarized) == ["a", "b"]


async def test_an_auto_forget_pass_ends_its_scan_when_the_worker_drains(client: Client) -> None:
    # Low-value records (old, unimportant) are judged one by one: those the scan reached
    # before the stop are removed, the rest wait for the next pass.
    from functions.lifecycle.maintenance import auto_forget
    from functions.lifecycle.settings import LifecycleConfig

    store = await MemoryStore(client).open()
    await put_obs(
        store, *(obs("s", n, type="file_read", importance=1, when=at(days=-90)) for n in range(40))
    )
    cfg = LifecycleConfig()
    now = at(days=1)
    calls = 0

    def stop() -> bool:
        nonlocal calls
        calls += 1
        return calls > 10

    cut = await auto_forget(store, cfg, now, stop=stop)
    assert cut.removed == {"low-value": 10}
    assert len(await store.load_observations()) == 30
    whole = await auto_forget(store, cfg, now)
    assert whole.removed == {"low-value": 30}
    assert await store.load_observations() == []
