"""Cron across hosts whose clocks disagree by seconds (libfaketime on the cron workers): one
call per tick however the clocks differ, and `catch_up: skip` measures a tick's lateness by
the bus's clock, which stamped it (a worker running 6 s ahead skipped every tick)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from engine import Client
from tests.faults.skew import MISSING, skewed
from tests.fixtures import eventually

pytestmark = pytest.mark.skipif(bool(MISSING), reason=MISSING or "ok")


async def _get(client: Client, key: str) -> Any:
    return await (await client.bucket("fixtures")).get(key)


async def test_skip_ticks_fire_on_a_cron_worker_whose_clock_runs_ahead(client, spawn) -> None:
    spawn("tests.triggers.fixture_worker", "cron-skip")  # every 3 s, grace 0.5 s
    spawn("workers.trigger_plugins", "cron", env=skewed(+6))

    async def fired() -> bool:
        return bool(await (await client.bucket("fixtures")).keys("tick."))

    await eventually(fired, timeout=12, what="a tick fired by the fast host")


async def test_cron_workers_with_clocks_apart_fire_each_tick_once(client, spawn) -> None:
    spawn("workers.trigger_plugins", "cron", env=skewed(-5))
    spawn("workers.trigger_plugins", "cron", env=skewed(+5))
    spawn("tests.triggers.fixture_worker", "cron")  # every second
    await eventually(lambda: _get(client, "ticks"), what="a first tick")
    start_count, started = int(await _get(client, "ticks")), time.monotonic()

    async def six_more() -> bool:
        return int(await _get(client, "ticks") or 0) >= start_count + 6

    await eventually(six_more, timeout=15, what="six more ticks")
    elapsed = time.monotonic() - started
    fired = int(await _get(client, "ticks")) - start_count
    assert await _get(client, "ticks.dup") is None  # no tick ran twice
    assert fired <= elapsed + 2  # one firing per second, not one per host
