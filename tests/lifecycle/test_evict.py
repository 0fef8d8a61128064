"""evict as upstream's evict.ts has it, beyond auto-forget: stale sessions (started more
than staleSessionDays ago, no summary) are recovered (summary written) and their session row
deleted; a project over maxObservationsPerProject loses its lowest-importance observations;
the knobs come from `mem_lifecycle/config.eviction`; dryRun counts and removes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from engine import FunctionError
from functions.kernel.clock import iso
from functions.kernel.records import LIFECYCLE_BUCKET, Session, SessionSummary
from functions.kernel.store import MemoryStore
from functions.lifecycle.evict import CONFIG_KEY, EvictionConfig
from functions.lifecycle.wire import AutoForgetIn
from tests.lifecycle._data import at, obs, put_obs

NOW = at(days=100)
REPLY = {"staleSessions", "lowImportanceObs", "capEvictions", "expiredMemories",
         "nonLatestMemories", "dryRun", "removed", "ids"}  # fmt: skip


async def session(store: MemoryStore, sid: str, started_days_before: float) -> None:
    started = at(days=100 - started_days_before)
    await store.sessions.put(sid, Session(id=sid, project="work", started_at=iso(started)))


async def test_stale_sessions_are_recovered_then_dropped(
    store: MemoryStore, lifecycle: Any
) -> None:
    await session(store, "old", 60)  # stale, with observations: summarized, then dropped
    await session(store, "empty", 45)  # stale, nothing to recover: dropped
    await session(store, "fresh", 2)  # recent: kept
    await session(store, "done", 60)  # stale but summarized: kept
    await store.summaries.put("done", SessionSummary(session_id="done", project="work",
                                                     title="Done"))  # fmt: skip
    await put_obs(store, obs("old", 1, files=["src/app.py"], project="work", when=at(days=40)))

    preview = await lifecycle.evict(AutoForgetIn(now=NOW.isoformat(), dry_run=True))
    assert set(preview) == REPLY and preview["dryRun"] is True
    assert preview["staleSessions"] == 2 and sorted(preview["ids"]["stale-session"]) == [
        "empty", "old"]  # fmt: skip
    assert await store.sessions.get("old", Session) is not None  # a dry run keeps them

    out = await lifecycle.evict(AutoForgetIn(now=NOW.isoformat()))
    assert out["staleSessions"] == 2 and out["dryRun"] is False
    for gone in ("old", "empty"):
        assert await store.sessions.get(gone, Session) is None
    for kept in ("fresh", "done"):
        assert await store.sessions.get(kept, Session) is not None
    summary = await store.summaries.get("old", SessionSummary)
    assert summary is not None and "src/app.py" in summary.files  # recovered before dropping
    again = await lifecycle.evict(AutoForgetIn(now=NOW.isoformat()))
    assert again["staleSessions"] == 0


async def test_a_project_over_its_cap_loses_its_lowest_importance_observations(
    store: MemoryStore, lifecycle: Any
) -> None:
    life = await store.client.bucket(LIFECYCLE_BUCKET)
    await life.put(CONFIG_KEY, EvictionConfig(max_observations_per_project=3))
    importance = [5, 9, 2, 8, 4]
    items = [obs("s1", n, files=[f"f{n}.py"], importance=imp, when=at(days=99))
             for n, imp in enumerate(importance)]  # fmt: skip
    other = [obs("s2", n, files=["g.py"], importance=1, project="other", when=at(days=99))
             for n in range(3)]  # fmt: skip
    await put_obs(store, *items, *other)
    lowest = {items[2].id, items[4].id}  # importance 2 and 4

    preview = await lifecycle.evict(AutoForgetIn(now=NOW.isoformat(), dry_run=True))
    assert preview["capEvictions"] == 2 and set(preview["ids"]["project-cap"]) == lowest
    assert await store.count_observations() == 8

    out = await lifecycle.evict(AutoForgetIn(now=NOW.isoformat()))
    assert out["capEvictions"] == 2 and set(out["ids"]["project-cap"]) == lowest
    left = {o.id for o in items + other if await store.get_observation(o.id)}
    assert left == {o.id for o in items + other} - lowest  # "other" holds 3: at its cap
    assert (await lifecycle.evict(AutoForgetIn(now=NOW.isoformat())))["capEvictions"] == 0


async def test_a_stored_config_that_is_not_one_is_refused_naming_it(
    store: MemoryStore, lifecycle: Any
) -> None:
    life = await store.client.bucket(LIFECYCLE_BUCKET)
    await life.put(CONFIG_KEY, {"maxObservationsPerProject": 0})
    with pytest.raises(FunctionError) as bad:
        await lifecycle.evict(AutoForgetIn(now=NOW.isoformat(), dry_run=True))
    assert bad.value.code == "UNPROCESSABLE" and bad.value.field == CONFIG_KEY
