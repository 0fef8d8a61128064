"""Signals: messages between agents, or to all of them, typed and threaded by `replyTo`.

A signal is a KV record (with a JetStream TTL when it has one), so an agent that was
offline when it was sent reads it when it comes back. Each reader's first read writes a
receipt with a KV create, atomic across replicas: one read, and only one, reports a signal
as new (`unreadOnly`), and the sender sees when its recipient read it (`readAt`)."""

from __future__ import annotations

import math

import msgspec

from functions.coordination.inputs import flag
from functions.coordination.records import Receipt, Signal
from functions.coordination.signals.wire import (
    SignalOut,
    SignalReadIn,
    SignalSendIn,
    SignalsOut,
    SignalView,
)
from functions.coordination.store import CoordStore
from functions.kernel.clock import iso_ms, ms_of, now_ms
from functions.kernel.ids import kv_key, new_id
from functions.kernel.scrub import scrub
from functions.kernel.views import as_view


def _receipt_key(signal_id: str, agent_id: str) -> str:
    return f"{kv_key(signal_id)}.{kv_key(agent_id)}"


def _ttl(s: Signal, now: int) -> float | None:
    if not s.expires_at:
        return None
    return max(1.0, (ms_of(s.expires_at) - now) / 1000)


async def send(cs: CoordStore, req: SignalSendIn) -> SignalOut:
    now = now_ms()
    thread = req.thread_id
    if req.reply_to and not thread:
        parent = await cs.get(cs.signals, kv_key(req.reply_to), Signal)
        if parent is not None:
            thread = parent.thread_id or parent.id
    # At least a second (JetStream's TTL unit): a tiny value would round to no TTL at all.
    ttl = max(1, math.ceil(req.expires_in_ms / 1000)) if req.expires_in_ms else None
    sig = Signal(
        id=new_id("sig"),
        from_=scrub(req.from_.strip()),
        to=scrub(req.to.strip()),
        content=scrub(req.content.strip()),
        type=req.type,
        thread_id=thread or new_id("thr"),
        reply_to=req.reply_to,
        metadata=req.metadata,
        created_at=iso_ms(now),
        expires_at=iso_ms(now + ttl * 1000) if ttl else "",
    )
    await cs.signals.put(kv_key(sig.id), sig, ttl=ttl)
    await cs.audit(
        "signal-send",
        [sig.id],
        actor=sig.from_,
        to=sig.to or "*",
        type=sig.type,
        threadId=sig.thread_id,
    )
    return SignalOut(True, as_view(sig, SignalView))


async def read(cs: CoordStore, req: SignalReadIn) -> SignalsOut:
    me = req.agent_id
    now = now_ms()
    mine = [
        s
        for s in await cs.all(cs.signals, Signal)
        if not (s.expires_at and ms_of(s.expires_at) <= now)
        and (s.to == me or not s.to or s.from_ == me)
        and (not req.thread_id or s.thread_id == req.thread_id)
        and (req.type is None or s.type == req.type)
    ]
    read_at = {
        r.signal_id: r.read_at async for _k, r in cs.receipts.scan(f"*.{kv_key(me)}", Receipt)
    }
    mine.sort(key=lambda s: s.created_at, reverse=True)
    unread_only = flag(req.unread_only)
    out: list[Signal] = []
    for s in mine:
        addressed = s.from_ != me
        if addressed:
            seen = read_at.get(s.id, "")
            if not seen:
                seen = await _receive(cs, s, me, now)
                if not seen:  # a concurrent read by the same agent took it first
                    if unread_only:
                        continue
                    got = await cs.get(cs.receipts, _receipt_key(s.id, me), Receipt)
                    seen = got.read_at if got else ""
            elif unread_only:
                continue
            s = msgspec.structs.replace(s, read_at=seen)
        else:
            if unread_only:
                continue
            if s.to:  # a signal of mine to one agent: when it read it
                got = await cs.get(cs.receipts, _receipt_key(s.id, s.to), Receipt)
                s = msgspec.structs.replace(s, read_at=got.read_at if got else "")
        out.append(s)
        if len(out) >= req.limit:
            break
    return SignalsOut(True, as_view(out, list[SignalView]))


async def _receive(cs: CoordStore, s: Signal, me: str, now: int) -> str:
    """Write `me`'s receipt of `s` unless one exists; its time, or "" when another read
    wrote it first."""
    at = iso_ms(now)
    made = await cs.receipts.create(
        _receipt_key(s.id, me), Receipt(signal_id=s.id, agent_id=me, read_at=at), ttl=_ttl(s, now)
    )
    if made is None:
        return ""
    await cs.audit("signal-read", [s.id], actor=me, readAt=at, threadId=s.thread_id)
    return at
