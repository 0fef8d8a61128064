"""`mem::evict`, as upstream's evict.ts: on top of auto-forget (expired, superseded, fading,
contradicted memories; old low-value observations):

- stale sessions: a session started more than `staleSessionDays` ago that has no summary is
  recovered first (its summary written from its observations, as a session end would) and
  then its session row is deleted (its observations stay); a session whose summary cannot
  be written is kept;
- the per-project cap: a project holding more than `maxObservationsPerProject` observations
  loses the excess, lowest importance first (then oldest).

The knobs are upstream's, read from `mem_lifecycle/config.eviction` (upstream's
`KV.config["eviction"]`) over upstream's defaults. `dryRun` counts and removes nothing.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated

import msgspec

from engine import FunctionError
from functions.kernel import clock
from functions.kernel.records import (
    LIFECYCLE_BUCKET,
    Session,
    SessionSummary,
)
from functions.kernel.store import MemoryStore
from functions.lifecycle.maintenance import PREVIEW, AutoForgetOut, remove
from functions.memory.wire import ForgetIn

CONFIG_KEY = "config.eviction"
UNKNOWN_PROJECT = "unknown"
"""Upstream's name for the project of observations that have none."""


class EvictionConfig(msgspec.Struct, rename="camel", kw_only=True):
    """`mem_lifecycle/config.eviction`; every field optional, upstream's defaults."""

    stale_session_days: Annotated[float, msgspec.Meta(gt=0, le=36_500)] = 30
    low_importance_max_days: Annotated[float, msgspec.Meta(gt=0, le=36_500)] = 90
    """Upstream's; our auto-forget's low-value rule (AUTO_FORGET_* settings) applies."""
    low_importance_threshold: Annotated[int, msgspec.Meta(ge=0, le=10)] = 3
    """Upstream's; see `low_importance_max_days`."""
    max_observations_per_project: Annotated[int, msgspec.Meta(ge=1)] = 10_000


class EvictOut(msgspec.Struct, rename="camel", kw_only=True):
    stale_sessions: int
    low_importance_obs: int
    cap_evictions: int
    expired_memories: int
    non_latest_memories: int
    dry_run: bool
    removed: dict[str, int]
    """Ours: every removal by reason (auto-forget's reasons, `stale-session`, `project-cap`)."""
    ids: dict[str, list[str]]
    """Ours: the ids by reason (the first 1000 of each)."""


Summarizer = Callable[[set[str]], Awaitable[list[SessionSummary]]]


async def load_config(store: MemoryStore) -> EvictionConfig:
    life = await store.client.bucket(LIFECYCLE_BUCKET)
    try:
        got: EvictionConfig | None = await life.get(CONFIG_KEY, EvictionConfig)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise FunctionError(
            "UNPROCESSABLE",
            f"{LIFECYCLE_BUCKET}/{CONFIG_KEY} is not an eviction config: {exc}",
            field=CONFIG_KEY,
        ) from None
    return got or EvictionConfig()


async def stale_sessions(
    store: MemoryStore, cfg: EvictionConfig, now: datetime, summarize: Summarizer, dry_run: bool
) -> list[str]:
    """Sessions started longer ago than the setting, without a summary: recovered (their
    summary written) and deleted; in a dry run, listed."""
    stale: dict[str, str] = {}  # session id -> its key
    async for key, s in store.sessions.scan(">", Session):
        if not s.started_at or clock.days_between(s.started_at, now) <= cfg.stale_session_days:
            continue
        sid = s.id or key
        if await store.get(store.summaries, sid, SessionSummary) is None:
            stale[sid] = key
    if dry_run or not stale:
        return list(stale)
    summarized = {x.session_id for x in await summarize(set(stale))}
    with_obs: set[str] = set()
    async for o in store.scan_observations():
        if o.session_id in stale:
            with_obs.add(o.session_id)
    evicted: list[str] = []
    for sid, key in stale.items():
        if sid in with_obs and sid not in summarized:
            continue  # not recovered: kept for a later run (upstream does the same)
        await store.sessions.delete(key)
        evicted.append(sid)
    if evicted:
        await store.audit("evict", evicted[:PREVIEW], reason="stale session without summary")
    return evicted


async def project_cap(store: MemoryStore, cfg: EvictionConfig, dry_run: bool) -> list[str]:
    """The observations past the per-project cap, lowest importance (then oldest) first;
    removed unless a dry run. Two passes: counts, then the lowest of the projects over."""
    limit = cfg.max_observations_per_project
    counts: Counter[str] = Counter()
    async for o in store.scan_observations():
        counts[o.project or UNKNOWN_PROJECT] += 1
    over = {p: n - limit for p, n in counts.items() if n > limit}
    rows: dict[str, list[tuple[int, str, str]]] = {p: [] for p in over}
    if over:
        async for o in store.scan_observations():
            held = rows.get(o.project or UNKNOWN_PROJECT)
            if held is not None:
                held.append((o.importance, o.timestamp, o.id))
    out = [oid for p, n in over.items() for _, _, oid in heapq.nsmallest(n, rows[p])]
    if out and not dry_run:
        for i in range(0, len(out), 200):
            await remove(store, ForgetIn(observation_ids=out[i : i + 200]), "project-cap")
    return out


def reply(forgot: AutoForgetOut, stale: list[str], capped: list[str], dry_run: bool) -> EvictOut:
    removed, ids = dict(forgot.removed), dict(forgot.ids)
    for reason, got in (("stale-session", stale), ("project-cap", capped)):
        if got:
            removed[reason], ids[reason] = len(got), got[:PREVIEW]
    return EvictOut(
        stale_sessions=len(stale),
        low_importance_obs=removed.get("low-value", 0),
        cap_evictions=len(capped),
        expired_memories=removed.get("ttl", 0),
        non_latest_memories=removed.get("superseded", 0),
        dry_run=dry_run,
        removed=removed,
        ids=ids,
    )
