"""The cron jobs that keep stores bounded: decay, auto-forget, audit retention.

Each streams its bucket in pages (see scan.py) and writes with compare-and-set, so a job
never holds a whole scope and never overwrites a concurrent change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

import msgspec

from functions.kernel.records import LESSONS_BUCKET, Lesson, Memory, Session
from functions.kernel.store import MemoryStore
from functions.lifecycle.decay import decay_lesson, decay_memory, reinforce_memory, tier
from functions.lifecycle.forgetting import ForgetPlan, MemoryRules, low_value
from functions.lifecycle.session_cap import SessionCap
from functions.lifecycle.settings import LifecycleConfig
from functions.memory.forget import forget
from functions.memory.wire import ForgetIn

PARALLEL_REMOVALS = 8
PREVIEW = 1000
"""Ids listed per reason in a dry run (counts are always complete)."""


class DecayOut(msgspec.Struct, rename="camel", kw_only=True):
    memories: int
    lessons: int
    tiers: dict[str, int]


class AutoForgetOut(msgspec.Struct, rename="camel", kw_only=True):
    dry_run: bool
    removed: dict[str, int]
    ids: dict[str, list[str]]


class ScheduledOut(msgspec.Struct, rename="camel", kw_only=True):
    """`mem_lifecycle/auto-forget.scheduled`: the last scheduled auto-forget."""

    ran: bool
    at: str
    reason: str = ""
    """Why it did not run (AUTO_FORGET_ENABLED=false)."""
    removed: dict[str, int] = msgspec.field(default_factory=dict)


async def run_decay(store: MemoryStore, cfg: LifecycleConfig, now: datetime) -> DecayOut:
    tiers: dict[str, int] = {"hot": 0, "warm": 0, "cold": 0, "fading": 0}
    changed = 0
    async for key, m in store.memories.scan(">", Memory):
        if m.superseded_by:
            continue
        if decay_memory(msgspec.structs.replace(m), now, cfg.decay) is not None:
            new = await store.memories.update(
                key, lambda cur: decay_memory(cur, now, cfg.decay) if cur else None, type=Memory
            )
            changed += 1
            m = new if new is not None else m
        tiers[tier(m.strength)] += 1
    lessons = await store.client.bucket(LESSONS_BUCKET)
    n_lessons = 0
    if cfg.decay.lesson_decay:
        async for key, lesson in lessons.scan(">", Lesson):
            if decay_lesson(msgspec.structs.replace(lesson), now, cfg.decay) is None:
                continue
            await lessons.update(
                key, lambda cur: decay_lesson(cur, now, cfg.decay) if cur else None, type=Lesson
            )
            n_lessons += 1
    return DecayOut(memories=changed, lessons=n_lessons, tiers=tiers)


async def reinforce(
    store: MemoryStore, cfg: LifecycleConfig, ids: list[str], now: datetime
) -> list[Memory]:
    out: list[Memory] = []
    for mid in dict.fromkeys(ids):
        m = await store.memories.update(
            mid, lambda cur: reinforce_memory(cur, now, cfg.decay) if cur else None, type=Memory
        )
        if m is not None:
            out.append(m)
    return out


async def auto_forget(
    store: MemoryStore,
    cfg: LifecycleConfig,
    now: datetime,
    *,
    dry_run: bool = False,
    stop: Callable[[], bool] | None = None,
) -> AutoForgetOut:
    """The forgetting rules over memories, then over every observation (low value, the
    per-session cap). When `stop()` turns true (the worker drains) the observations' scan
    ends: what it found is removed (each record judged on its own), the session cap, which
    needs every record counted, waits for the next run (at a million records the scan
    held a stop for its whole drain timeout)."""
    plan = ForgetPlan()
    rules = MemoryRules(cfg.forget, cfg.decay, now, plan)
    async for _, m in store.memories.scan(">", Memory):
        rules.add(m)
    removed: dict[str, int] = {}
    ids: dict[str, list[str]] = {}
    for reason, mids in plan.memories.items():
        mids = list(dict.fromkeys(mids))
        removed[reason] = len(mids)
        ids[reason] = mids[:PREVIEW]
        if not dry_run:
            for i in range(0, len(mids), cfg.forget.batch):
                await remove(store, ForgetIn(memory_ids=mids[i : i + cfg.forget.batch]), reason)
    # Observations are removed batch by batch while scanning, a few batches in flight: the
    # candidate list is never held whole, however many there are.
    batch: list[str] = []
    count = 0
    preview: list[str] = []
    inflight: set[asyncio.Task[None]] = set()

    async def submit(ids: list[str]) -> None:
        if len(inflight) >= PARALLEL_REMOVALS:
            done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
            inflight.difference_update(done)
            for t in done:
                t.result()  # surface a failed removal
        inflight.add(asyncio.create_task(remove(store, ForgetIn(observation_ids=ids), "low-value")))

    cap = await _session_cap(store, cfg.forget.max_obs_per_session)
    stopped = False
    async for o in store.scan_observations():
        if stop is not None and stop():
            stopped = True
            break
        if not low_value(o, cfg.forget, now):
            if cap is not None:
                cap.count(o)
            continue
        count += 1
        if len(preview) < PREVIEW:
            preview.append(o.id)
        if dry_run:
            continue
        batch.append(o.id)
        if len(batch) >= cfg.forget.batch:
            await submit(batch)
            batch = []
    if batch:
        await submit(batch)
    if inflight:
        await asyncio.gather(*inflight)
    if count:
        removed["low-value"] = count
        ids["low-value"] = preview
    if cap is not None and not stopped:
        await _apply_cap(store, cfg, cap, now, dry_run, removed, ids)
    return AutoForgetOut(dry_run=dry_run, removed=removed, ids=ids)


async def _session_cap(store: MemoryStore, limit: int) -> SessionCap | None:
    if limit <= 0:
        return None
    hinted = set()
    async for sid, s in store.sessions.scan(">", Session):
        if s.observation_count > limit:
            hinted.add(s.id or sid)
    return SessionCap(limit, hinted)


async def _apply_cap(
    store: MemoryStore,
    cfg: LifecycleConfig,
    cap: SessionCap,
    now: datetime,
    dry_run: bool,
    removed: dict[str, int],
    ids: dict[str, list[str]],
) -> None:
    late = cap.unannounced()
    if late:  # sessions over the cap that their stored count did not announce
        async for o in store.scan_observations():
            if o.session_id in late and not low_value(o, cfg.forget, now):
                cap.keep(o)
    extra = cap.excess()
    if not extra:
        return
    removed["session-cap"] = len(extra)
    ids["session-cap"] = extra[:PREVIEW]
    if not dry_run:
        for i in range(0, len(extra), cfg.forget.batch):
            await remove(
                store, ForgetIn(observation_ids=extra[i : i + cfg.forget.batch]), "session-cap"
            )


async def remove(store: MemoryStore, req: ForgetIn, reason: str) -> None:
    req.reason = f"auto-forget: {reason}"
    await forget(store, req, action="auto-forget")


async def purge_audit(store: MemoryStore, months: int, now: datetime) -> int:
    """Drop audit months older than `months` (audit keys start with yyyymm): one subject
    purge per month, looking back ten years. Returns how many entries went."""
    audit = store.audit_log
    before = (await audit.info()).messages
    y, m = now.year, now.month
    for back in range(months, months + 120):
        yy, mm = y + (m - 1 - back) // 12, (m - 1 - back) % 12 + 1
        await audit.purge(f"{yy:04d}{mm:02d}.>")
    after = (await audit.info()).messages
    return before - after
