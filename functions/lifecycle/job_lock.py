"""A job lock: a key in KV so one lifecycle job of a kind runs at a time across replicas (a cron tick
and an on-demand call may otherwise overlap). Wall-clock based on purpose: it guards real
processes, not the simulated `now` a job is given."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import AsyncIterator

import msgspec

from engine import Bucket, CasConflict, Entry, FunctionError


class Lease(msgspec.Struct, kw_only=True):
    owner: str
    until: float


@contextlib.asynccontextmanager
async def held(state: Bucket, name: str, ttl: float = 600.0) -> AsyncIterator[None]:
    key = f"lease.{name}"
    me = secrets.token_hex(8)
    cur: Entry[Lease] | None = await state.entry(key, Lease)
    mine = Lease(owner=me, until=time.time() + ttl)
    try:
        if cur is None:
            ok = await state.create(key, mine) is not None
        elif cur.value.until < time.time():  # the holder died: take over
            await state.compare_and_set(key, mine, cur.revision)
            ok = True
        else:
            ok = False
    except CasConflict:
        ok = False
    if not ok:
        raise FunctionError(
            "CONFLICT", f"{name} is already running; retry when it has finished", retryable=True
        )
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await state.delete(key)
