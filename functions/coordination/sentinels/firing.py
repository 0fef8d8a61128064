"""What fires a sentinel, and how (no timer lives in a process):
- `pattern`: an observation whose title or narrative matches: a cron (every 2 s) reads
  MEM_EVENTS from a cursor while any pattern sentinel watches (`scan_patterns`; a stream
  trigger would cost every observation a call even with no sentinel);
- `timer`: a key of `mem_coord_timers` whose JetStream TTL runs out at the due time; the
  state trigger delivers the expiry (`on_timer`), the sweep cron is the backstop;
- `checkpoint`: the checkpoint it names being resolved, from the state trigger on
  `mem_checkpoints` (`on_checkpoint`);
- `threshold` `{metric, operator, value}`: `check` (sentinels/check) compares the calls of
  the function `metric` names, summed over the workers' `$SRV.STATS` (`metrics`), and fires
  with reason `threshold_crossed`;
- `webhook`, `approval`, `custom` (and any sentinel): a call to `trigger` from outside
  (`core.trigger`).
An `expiresInMs` sentinel still watching at its expiry becomes `expired` (a timer too)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from typing import Any

import msgspec

from engine import TRIGGERS_BUCKET, Change, SnapshotEnd, TriggerSpec
from functions.coordination.inputs import StateChange
from functions.coordination.records import Sentinel
from functions.coordination.sentinels import metrics
from functions.coordination.sentinels.core import expire, fire
from functions.coordination.sentinels.wire import SentinelCheckOut
from functions.coordination.store import CoordStore
from functions.kernel.clock import ms_of, now_ms
from functions.kernel.ids import kv_key
from functions.kernel.records import EVENTS_SUBJECT, Observation
from functions.kernel.store import events_stream

log = logging.getLogger("functions.coordination")
OBSERVATION_EVENTS = f"{EVENTS_SUBJECT}.observation.>"
PATTERN_CURSOR = "sentinel-patterns"
"""`mem_coord_cursors` key: the MEM_EVENTS sequence the pattern scan has read up to."""
MATCH_TEXT_MAX = 4000
"""Characters of an observation a pattern is matched against."""


def _text(o: Observation) -> str:
    return f"{o.title}\n{o.narrative}"[:MATCH_TEXT_MAX]


class _Event(msgspec.Struct):
    """A MEM_EVENTS message; only observations matter here."""

    observation: Observation | None = None


_event = msgspec.json.Decoder(_Event)


SCAN_SCHEDULE = "*/2 * * * * *"
SCAN_TRIGGER = TriggerSpec(
    kind="cron",
    function_id="mem::sentinel-scan",
    config={"schedule": SCAN_SCHEDULE, "catch_up": "skip"},
    id="sentinel-scan",
    worker="mem::sentinel-scan",  # no worker's name: a worker's start never removes it
)


class Patterns:
    """Whether any pattern sentinel is watching, kept current by a watch of `mem_sentinels`
    (one per process): the scan cron returns at once while none is."""

    def __init__(self) -> None:
        self.watching: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._arming: asyncio.Task[None] | None = None
        self._cs: CoordStore | None = None

    def start(self, cs: CoordStore) -> None:
        self._cs = cs
        self._task = asyncio.get_running_loop().create_task(self._follow(cs))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    def _apply(self, ch: Change) -> None:
        was = bool(self.watching)
        self._apply_one(ch)
        if bool(self.watching) != was and self._cs is not None:
            self._arming = asyncio.get_running_loop().create_task(self._arm(self._cs))

    async def _arm(self, cs: CoordStore) -> None:
        """The scan's cron trigger exists while a pattern sentinel watches (every replica
        does the same put or delete: they converge)."""
        on = bool(self.watching)
        try:
            store = await cs.client.bucket(TRIGGERS_BUCKET, history=5)
            if on:
                await store.put(SCAN_TRIGGER.key, SCAN_TRIGGER)
            else:
                await store.delete(SCAN_TRIGGER.key)
        except Exception as exc:  # the bus is away: the next change or start arms it
            log.warning("pattern scan trigger not %s: %s", "armed" if on else "disarmed", exc)

    def _apply_one(self, ch: Change) -> None:
        s = None
        if ch.op == "put" and ch.value:
            with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                s = msgspec.json.decode(ch.value, type=Sentinel)
        if s is not None and s.type == "pattern" and s.status == "watching":
            self.watching.add(ch.key)
        else:
            self.watching.discard(ch.key)

    async def _follow(self, cs: CoordStore) -> None:
        while True:
            try:
                async with await cs.sentinels.changes(">") as watch:
                    async for ch in watch:
                        if isinstance(ch, SnapshotEnd):  # what is stored now: arm or disarm
                            await self._arm(cs)
                        else:
                            self._apply(ch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the bus went away: watch again
                log.debug("pattern sentinels watch ended: %s", exc)
            await asyncio.sleep(1.0)


async def scan_patterns(cs: CoordStore) -> list[str]:
    """Match the observations stored since the last scan (MEM_EVENTS, read from a cursor in
    KV) against every watching pattern sentinel; what matched fires. Each sentinel only
    sees observations stored after it was made (`afterSeq`)."""
    watching = [
        s
        for s in await cs.all(cs.sentinels, Sentinel)
        if s.type == "pattern" and s.status == "watching"
    ]
    if not watching:
        return []
    rules = []
    for s in watching:
        with contextlib.suppress(re.error, KeyError, TypeError):
            rules.append((s, re.compile(s.config["pattern"], re.I)))
    cursor = await cs.get(cs.cursors, PATTERN_CURSOR, int) or 0
    start = max(cursor, min(s.after_seq for s in watching))
    fired: list[str] = []
    last = start
    reader = events_stream(cs.client).read(after=start, subject=OBSERVATION_EVENTS)
    async with contextlib.aclosing(reader) as msgs:  # closing ends its consumer now
        async for m in msgs:
            last = m.seq
            try:
                o = _event.decode(m.data).observation
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if o is None:
                continue
            text = _text(o)
            for s, rx in rules:
                if s.id in fired or m.seq <= s.after_seq or not rx.search(text):
                    continue
                result = {
                    "reason": "pattern_matched",
                    "matchedObservationId": o.id,
                    "matchedTitle": o.title,
                }
                if await fire(cs, s.id, result, "") is not None:
                    fired.append(s.id)
    if last > cursor:
        await cs.update(cs.cursors, PATTERN_CURSOR, lambda c: max(c or 0, last), int)
    return fired


async def check(cs: CoordStore) -> SentinelCheckOut:
    """Fire what is due now: timers and expiries past their time (the state trigger fires
    them as they fall due; this is the on-demand and backstop pass) and pattern sentinels
    against the observations stored since the last scan, and threshold sentinels against the
    functions' call counters (`metrics`)."""
    watching = [s for s in await cs.all(cs.sentinels, Sentinel) if s.status == "watching"]
    fired: list[str] = await scan_patterns(cs)
    now = now_ms()
    thresholds = [s for s in watching if s.type == "threshold"]
    calls = await metrics.function_calls(cs.client) if thresholds else {}
    for s in thresholds:
        result = metrics.crossed(s.config, calls)
        if result is not None and await fire(cs, s.id, result, "") is not None:
            fired.append(s.id)
    for s in watching:
        if s.type == "timer" and s.due_at and ms_of(s.due_at) <= now:
            if await fire(cs, s.id, _timer_result(s), "", due=True) is not None:
                fired.append(s.id)
        if s.expires_at and ms_of(s.expires_at) <= now and s.id not in fired:
            await expire(cs, s.id, "check")
    return SentinelCheckOut(success=True, triggered=fired, checked_count=len(watching))


def _timer_result(s: Sentinel) -> dict[str, Any]:
    return {"reason": "timer_elapsed", "durationMs": s.config.get("durationMs")}


async def on_timer(cs: CoordStore, kind: str, target_id: str) -> bool:
    if kind == "sentinel":
        s = await cs.get(cs.sentinels, kv_key(target_id), Sentinel)
        if s is None:
            return False
        return await fire(cs, target_id, _timer_result(s), "", due=True) is not None
    if kind == "sentinel-expiry":
        return await expire(cs, target_id, "timer")
    return False


async def on_checkpoint(cs: CoordStore, ev: StateChange) -> list[str]:
    """The state trigger on `mem_checkpoints`: a resolved checkpoint fires the sentinels
    that watch it."""
    if ev.op == "deleted" or not isinstance(ev.new, dict):
        return []
    status = ev.new.get("status")
    if status in (None, "pending") or (isinstance(ev.old, dict) and ev.old.get("status") == status):
        return []
    cp_id = str(ev.new.get("id") or ev.key)
    fired = []
    for s in await cs.all(cs.sentinels, Sentinel):
        if (
            s.status == "watching"
            and s.type == "checkpoint"
            and s.config.get("checkpointId") == cp_id
        ):
            if await fire(cs, s.id, {"checkpointId": cp_id, "status": status}, "") is not None:
                fired.append(s.id)
    return fired
