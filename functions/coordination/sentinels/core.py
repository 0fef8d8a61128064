"""Sentinels: watchers that fire once and then unblock the actions they gate.

What fires one, and how (no timer lives in a process):
- `pattern`: an observation whose title or narrative matches: a cron (every 2 s) reads
  MEM_EVENTS from a cursor while any pattern sentinel watches (`scan_patterns`; a stream
  trigger would cost every observation a call even with no sentinel);
- `timer`: a key of `mem_coord_timers` whose JetStream TTL runs out at the due time; the
  state trigger delivers the expiry (`on_timer`), the sweep cron is the backstop;
- `checkpoint`: the checkpoint it names being resolved, from the state trigger on
  `mem_checkpoints` (`on_checkpoint`);
- `webhook`, `approval`, `custom`, `threshold`: a call to `trigger` from outside.
An `expiresInMs` sentinel still watching at its expiry becomes `expired` (a timer too)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncGenerator
from typing import Any

import msgspec

from engine import TRIGGERS_BUCKET, CasConflict, Change, FunctionError, SnapshotEnd, TriggerSpec
from functions.coordination.actions import core as actions
from functions.coordination.checkpoints.core import gate
from functions.coordination.inputs import StateChange, json_value
from functions.coordination.records import Checkpoint, Sentinel
from functions.coordination.sentinels.wire import (
    SentinelCheckOut,
    SentinelCreateIn,
    SentinelListIn,
    SentinelOut,
    SentinelsOut,
    SentinelTriggerIn,
    SentinelView,
)
from functions.coordination.store import CoordStore
from functions.kernel.clock import iso_ms, ms_of, now_iso, now_ms
from functions.kernel.ids import kv_key, new_id
from functions.kernel.names import names
from functions.kernel.records import EVENTS_SUBJECT, Observation
from functions.kernel.store import events_stream
from functions.kernel.views import as_view

log = logging.getLogger("functions.coordination")
OBSERVATION_EVENTS = f"{EVENTS_SUBJECT}.observation.>"
PATTERN_CURSOR = "sentinel-patterns"
"""`mem_coord_cursors` key: the MEM_EVENTS sequence the pattern scan has read up to."""
PATTERN_MAX = 200
MATCH_TEXT_MAX = 4000
"""Characters of an observation a pattern is matched against."""


def view(s: Sentinel) -> SentinelView:
    v: SentinelView = as_view(s, SentinelView)
    return v


def _config(req: SentinelCreateIn) -> dict[str, Any]:
    cfg = json_value(req.config, "config")
    if not isinstance(cfg, dict):
        raise FunctionError("UNPROCESSABLE", "config must be a JSON object", field="config")
    kind = req.type

    def bad(msg: str) -> FunctionError:
        return FunctionError("UNPROCESSABLE", msg, field="config")

    if kind == "timer":
        d = cfg.get("durationMs")
        if not isinstance(d, int | float) or isinstance(d, bool) or d <= 0:
            raise bad("timer config requires a positive durationMs")
    elif kind == "pattern":
        p = cfg.get("pattern")
        if not isinstance(p, str) or not p or len(p) > PATTERN_MAX:
            raise bad(f"pattern config requires a pattern string of 1..{PATTERN_MAX} characters")
        try:
            re.compile(p)
        except re.error as exc:
            raise bad(f"pattern is not a valid regular expression: {exc}") from None
    elif kind == "threshold":
        v = cfg.get("value")
        if (
            not cfg.get("metric")
            or cfg.get("operator") not in ("gt", "lt", "eq")
            or not isinstance(v, int | float)
            or isinstance(v, bool)
        ):
            raise bad("threshold config requires metric, operator (gt|lt|eq), and numeric value")
    elif kind == "webhook":
        if not isinstance(cfg.get("path"), str) or not cfg["path"]:
            raise bad("webhook config requires a path string")
    elif kind == "checkpoint":
        if not isinstance(cfg.get("checkpointId"), str) or not cfg["checkpointId"]:
            raise bad("checkpoint config requires a checkpointId")
    return cfg


async def create(cs: CoordStore, req: SentinelCreateIn) -> SentinelOut:
    cfg = _config(req)
    if req.type == "checkpoint":
        await cs.need(cs.checkpoints, cfg["checkpointId"], Checkpoint, "config", "checkpoint")
    for i, aid in enumerate(names(req.linked_action_ids)):
        await actions.load(cs, aid, f"linkedActionIds[{i}]")
    after_seq = 0
    if req.type == "pattern":  # it watches what is stored from now on
        with contextlib.suppress(FunctionError):
            after_seq = (await events_stream(cs.client).info()).last_seq
    now = now_ms()
    snl = Sentinel(
        id=new_id("snl"),
        name=req.name.strip(),
        type=req.type,
        config=cfg,
        created_at=iso_ms(now),
        linked_action_ids=names(req.linked_action_ids),
        expires_at=iso_ms(now + int(req.expires_in_ms)) if req.expires_in_ms else "",
        due_at=iso_ms(now + int(cfg["durationMs"])) if req.type == "timer" else "",
        after_seq=after_seq,
        project=req.project,
    )
    await cs.sentinels.create(kv_key(snl.id), snl)
    if snl.due_at:
        await cs.timer("sentinel", snl.id, ms_of(snl.due_at))
    if snl.expires_at:
        await cs.timer("sentinel-expiry", snl.id, ms_of(snl.expires_at))
    await gate(cs, snl.linked_action_ids, snl.id, req.agent_id)
    await cs.audit(
        "sentinel-create",
        [snl.id, *snl.linked_action_ids],
        actor=req.agent_id,
        project=snl.project,
        type=snl.type,
    )
    if snl.type == "checkpoint":  # already resolved: fire now
        cp = await cs.get(cs.checkpoints, kv_key(cfg["checkpointId"]), Checkpoint)
        if cp is not None and cp.status != "pending":
            fired = await fire(cs, snl.id, {"checkpointId": cp.id, "status": cp.status}, "")
            if fired is not None:
                return fired
    return SentinelOut(success=True, sentinel=view(snl))


async def _move(
    cs: CoordStore, sentinel_id: str, to: str, result: Any, *, due: bool = False
) -> tuple[Sentinel, Sentinel] | None:
    """CAS a watching sentinel to `to`: (before, after), None when it is not watching (or,
    with `due`, when its time has not come)."""
    key = kv_key(sentinel_id)
    for _ in range(16):
        cur = await cs.entry(cs.sentinels, key, Sentinel)
        if cur is None or cur.value.status != "watching":
            return None
        s = cur.value
        when = s.due_at if to == "triggered" else s.expires_at
        if due and (not when or ms_of(when) > now_ms()):
            return None
        new = msgspec.structs.replace(s, status=to, triggered_at=now_iso())
        if to == "triggered":
            new.result = result
        try:
            await cs.sentinels.compare_and_set(key, new, cur.revision)
        except CasConflict:
            continue
        return s, new
    return None


async def fire(
    cs: CoordStore, sentinel_id: str, result: Any, actor: str, *, due: bool = False
) -> SentinelOut | None:
    moved = await _move(cs, sentinel_id, "triggered", result, due=due)
    if moved is None:
        return None
    _before, s = moved
    await cs.audit("sentinel-trigger", [s.id], actor=actor, project=s.project, type=s.type)
    n = await actions.unblock_gated(cs, s.linked_action_ids, actor)
    return SentinelOut(success=True, sentinel=view(s), unblocked_count=n)


async def trigger(cs: CoordStore, req: SentinelTriggerIn) -> SentinelOut:
    cur = await cs.need(cs.sentinels, req.sentinel_id, Sentinel, "sentinelId", "sentinel")
    got = await fire(cs, cur.id, json_value(req.result, "result"), req.agent_id)
    if got is None:
        now = await cs.need(cs.sentinels, req.sentinel_id, Sentinel, "sentinelId", "sentinel")
        raise FunctionError("CONFLICT", f"sentinel already {now.status}", field="sentinelId")
    return got


async def cancel(cs: CoordStore, sentinel_id: str, actor: str) -> SentinelOut:
    await cs.need(cs.sentinels, sentinel_id, Sentinel, "sentinelId", "sentinel")
    moved = await _move(cs, sentinel_id, "cancelled", None)
    if moved is None:
        now = await cs.need(cs.sentinels, sentinel_id, Sentinel, "sentinelId", "sentinel")
        raise FunctionError(
            "CONFLICT", f"cannot cancel sentinel with status {now.status}", field="sentinelId"
        )
    s = moved[1]
    await cs.audit("sentinel-cancel", [s.id], actor=actor, project=s.project)
    return SentinelOut(success=True, sentinel=view(s))


async def expire(cs: CoordStore, sentinel_id: str, by: str) -> bool:
    moved = await _move(cs, sentinel_id, "expired", None, due=True)
    if moved is None:
        return False
    await cs.audit("sentinel-expire", [sentinel_id], project=moved[1].project, by=by)
    return True


async def listing(cs: CoordStore, req: SentinelListIn) -> SentinelsOut:
    found = [
        s
        for s in await cs.all(cs.sentinels, Sentinel)
        if (req.status is None or s.status == req.status)
        and (req.type is None or s.type == req.type)
    ]
    found.sort(key=lambda s: s.created_at, reverse=True)
    return SentinelsOut(True, [view(s) for s in found])


# ---- what fires them ---------------------------------------------------------------
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
            store = await cs.client.state(TRIGGERS_BUCKET, history=5)
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
    msgs = events_stream(cs.client).read(after=start, subject=OBSERVATION_EVENTS)
    try:
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
    finally:
        # read() is an async generator: closing it now ends its consumer (not at collection)
        if isinstance(msgs, AsyncGenerator):
            await msgs.aclose()
    if last > cursor:
        await cs.update(cs.cursors, PATTERN_CURSOR, lambda c: max(c or 0, last), int)
    return fired


async def check(cs: CoordStore) -> SentinelCheckOut:
    """Fire what is due now: timers and expiries past their time (the state trigger fires
    them as they fall due; this is the on-demand and backstop pass) and pattern sentinels
    against the observations stored since the last scan."""
    watching = [s for s in await cs.all(cs.sentinels, Sentinel) if s.status == "watching"]
    fired: list[str] = await scan_patterns(cs)
    now = now_ms()
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
