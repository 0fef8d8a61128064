"""AUTO_FORGET_ENABLED=false (upstream's name): the schedule still ticks, but a scheduled
run deletes nothing; POST auto-forget still runs when asked (the control below deletes the
very memory the scheduled run left)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import Client
from functions.kernel.clock import iso
from functions.kernel.records import LIFECYCLE_BUCKET, Memory
from functions.kernel.store import MemoryStore
from tests.fixtures import eventually
from tests.lifecycle._data import T0, put_memory


async def test_a_scheduled_run_deletes_nothing_while_auto_forget_is_off(
    client: Client, store: MemoryStore, spawn: Any, tmp_path: Path
) -> None:
    env = {"HOME": str(tmp_path / "home"), "AUTO_FORGET_ENABLED": "false"}
    spawn("workers.lifecycle", env=env)
    spawn("workers.trigger_plugins", "cron", env=env)
    expired = Memory(id="mem_expired", content="old", project="p", created_at=iso(T0), ttl_days=1.0)
    await put_memory(store, expired)

    async def fired() -> Any:
        out = await client.call(
            "engine::cron-fire", {"function_id": "mem::auto-forget-scheduled"}, timeout=5
        )
        return out

    await eventually(fired, timeout=30, what="the cron trigger of the schedule")
    life = await client.bucket(LIFECYCLE_BUCKET)

    async def ran() -> Any:
        return await life.get("auto-forget.scheduled")

    last = await eventually(ran, timeout=30, what="the scheduled run")
    assert last["ran"] is False and last["reason"] == "AUTO_FORGET_ENABLED=false"
    assert await store.get(store.memories, "mem_expired", Memory) is not None

    asked = await client.call("mem::auto-forget", {}, timeout=30)  # a request still runs
    assert asked["removed"]["ttl"] == 1
    assert await store.get(store.memories, "mem_expired", Memory) is None


async def test_with_auto_forget_on_the_scheduled_run_deletes(
    client: Client, store: MemoryStore, spawn: Any, tmp_path: Path
) -> None:
    env = {"HOME": str(tmp_path / "home")}
    spawn("workers.lifecycle", env=env)
    spawn("workers.trigger_plugins", "cron", env=env)
    await put_memory(
        store,
        Memory(id="mem_expired", content="old", project="p", created_at=iso(T0), ttl_days=1.0),
    )

    async def fired() -> Any:
        return await client.call(
            "engine::cron-fire", {"function_id": "mem::auto-forget-scheduled"}, timeout=5
        )

    await eventually(fired, timeout=30, what="the cron trigger of the schedule")
    life = await client.bucket(LIFECYCLE_BUCKET)
    last = await eventually(lambda: life.get("auto-forget.scheduled"), timeout=30, what="a run")
    assert last["ran"] is True and last["removed"]["ttl"] == 1
    assert await store.get(store.memories, "mem_expired", Memory) is None
