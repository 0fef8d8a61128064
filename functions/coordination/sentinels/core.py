"""Sentinels: watchers that fire once and then unblock the actions they gate. Here: making,
firing, cancelling, expiring and listing them; what fires them (patterns, timers,
checkpoints): `firing`."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import msgspec

from engine import CasConflict, FunctionError
from functions.coordination.actions import core as actions
from functions.coordination.actions.gates import unblock_gated
from functions.coordination.checkpoints.core import gate
from functions.coordination.inputs import json_value
from functions.coordination.records import Checkpoint, Sentinel
from functions.coordination.sentinels.wire import (
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
from functions.kernel.store import events_stream
from functions.kernel.views import as_view

PATTERN_MAX = 200


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
    n = await unblock_gated(cs, s.linked_action_ids, actor)
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
