"""The cron trigger on server message schedules, with two cron workers running."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import pytest

from engine import Client, FunctionError
from tests.fixtures import eventually
from triggers.cron import DURABLE, SCHED, STREAM, TICK, server_schedule


async def _get(client: Client, key: str) -> Any:
    return await (await client.bucket("fixtures")).get(key)


async def test_two_cron_workers_fire_each_per_second_tick_once(client, spawn) -> None:
    spawn("workers.trigger_plugins", "cron")
    spawn("workers.trigger_plugins", "cron")
    spawn("tests.triggers.fixture_worker", "cron")
    await eventually(lambda: _get(client, "ticks"), what="a first tick")
    start_count, started = await _get(client, "ticks"), time.monotonic()

    async def six_more() -> bool:
        return int(await _get(client, "ticks") or 0) >= start_count + 6

    await eventually(six_more, timeout=15, what="six more ticks")
    elapsed = time.monotonic() - started
    fired = int(await _get(client, "ticks")) - start_count
    assert await _get(client, "ticks.dup") is None  # no tick ran twice
    assert fired <= elapsed + 2  # one firing per second, not one per replica


async def test_fire_now_runs_once_and_a_failing_firing_is_retried(client, spawn) -> None:
    spawn("workers.trigger_plugins", "cron")
    spawn("workers.trigger_plugins", "cron")
    spawn("tests.triggers.fixture_worker", "cron")
    out = await client.call("engine::cron-fire", {"function_id": "t::manual"}, timeout=5)
    assert out["seq"] > 0
    await eventually(lambda: _get(client, "manual.ok.7"), what="the retried firing")
    assert await _get(client, "manual.calls") == 2  # failed once, retried once, done
    assert await _get(client, "manual.ok.7") == 1


async def test_fire_now_names_what_is_missing(client, spawn) -> None:
    spawn("workers.trigger_plugins", "cron")
    with pytest.raises(FunctionError) as ei:
        await client.call("engine::cron-fire", {}, timeout=5)
    assert (ei.value.code, ei.value.field) == ("BAD_REQUEST", "id")
    with pytest.raises(FunctionError) as ei:
        await client.call("engine::cron-fire", {"function_id": "t::nope"}, timeout=5)
    assert ei.value.code == "NOT_FOUND"


async def test_five_field_schedule_with_time_zone_is_handed_to_the_server(client, spawn) -> None:
    spawn("workers.trigger_plugins", "cron")
    spawn("tests.triggers.fixture_worker", "cron")
    store = await client.bucket("engine_triggers", history=5)
    tids = [
        k.partition(".")[2]
        for k in await store.keys("cron.")
        if (await store.get(k))["function_id"] == "t::manual"
    ]
    tid = tids[0]
    js = client.nc.jetstream()

    async def scheduled() -> Any:
        return await js.get_last_msg(STREAM, SCHED + tid)

    msg = await eventually(scheduled, what="the schedule message")
    assert msg.headers["Nats-Schedule"] == "0 0 0 1 1 *"
    assert msg.headers["Nats-Schedule-Time-Zone"] == "Europe/Paris"


@pytest.mark.unit
def test_schedule_forms_are_converted_or_refused() -> None:
    assert server_schedule("*/5 * * * *") == "0 */5 * * * *"
    assert server_schedule("*/2  * * * * *") == "*/2 * * * * *"
    assert server_schedule("@every 30s") == "@every 30s"
    with pytest.raises(ValueError, match="5 or 6 fields"):
        server_schedule("* * *")


async def _tick_trigger_id(client: Client) -> str:
    store = await client.bucket("engine_triggers", history=5)
    for k in await store.keys("cron."):
        if (await store.get(k))["function_id"] == "t::tick":
            return k.partition(".")[2]
    raise AssertionError("no cron trigger for t::tick")


async def test_ticks_missed_during_downtime_fire_once_with_catch_up_once(client, spawn) -> None:
    cron = spawn("workers.trigger_plugins", "cron")
    spawn("tests.triggers.fixture_worker", "cron")
    await eventually(lambda: _get(client, "ticks"), what="a first tick")
    cron.send_signal(signal.SIGKILL)
    cron.wait()
    js = client.nc.jetstream()
    last = (await js.stream_info(STREAM)).state.last_seq

    async def three_missed() -> bool:
        return (await js.stream_info(STREAM)).state.last_seq >= last + 3

    await eventually(three_missed, what="three ticks stored while no cron worker ran")
    info = await js.consumer_info(STREAM, DURABLE)
    assert info.num_pending <= 1  # the missed ticks collapsed into one
    before = int(await _get(client, "ticks"))
    spawn("workers.trigger_plugins", "cron")

    async def fired_again() -> bool:
        return int(await _get(client, "ticks")) > before

    await eventually(fired_again, what="the catch-up firing")
    assert await _get(client, "ticks.dup") is None


async def test_a_stale_tick_is_dropped_with_catch_up_skip(client, spawn) -> None:
    spawn("tests.triggers.fixture_worker", "cron-skip")
    cron = spawn("workers.trigger_plugins", "cron")
    tid = await _tick_trigger_id(client)
    cron.send_signal(signal.SIGKILL)
    cron.wait()
    js = client.nc.jetstream()
    killed_at = (await js.stream_info(STREAM)).state.last_seq

    async def stale_tick() -> Any:
        msg = await js.get_last_msg(STREAM, TICK + tid)
        fresh_since_kill = msg.seq > killed_at
        return msg if fresh_since_kill and time.time() - _stored_at(msg) > 0.8 else None

    stale = await eventually(stale_tick, what="a tick older than the grace period")
    spawn("workers.trigger_plugins", "cron")

    async def next_fired() -> bool:
        keys = await (await client.bucket("fixtures")).keys("tick.")
        return any(int(k.rsplit("_", 1)[1]) > stale.seq for k in keys)

    await eventually(next_fired, what="the next tick after the restart")
    assert await _get(client, f"tick.cron_{tid}_{stale.seq}") is None  # skipped


def _stored_at(msg: Any) -> float:
    import datetime as dt

    return (
        dt.datetime.fromisoformat(msg.time.replace("Z", "+00:00")).timestamp()
        if isinstance(msg.time, str)
        else msg.time.timestamp()
    )


async def _schedules(client: Client) -> dict[str, int]:
    info = await client.nc.jetstream().stream_info(STREAM, subjects_filter=SCHED + ">")
    return dict(info.state.subjects or {})


async def test_deleting_a_cron_declaration_stops_its_schedule_live_and_after_downtime(
    client, spawn
) -> None:
    from engine import TriggerSpec

    store = await client.bucket("engine_triggers", history=5)
    live = TriggerSpec(kind="cron", function_id="t::tick", config={"schedule": "@every 1h"})
    offline = TriggerSpec(kind="cron", function_id="t::tick", config={"schedule": "@every 2h"})
    await store.put(live.key, live)
    await store.put(offline.key, offline)
    cron = spawn("workers.trigger_plugins", "cron")

    async def both() -> bool:
        return set(await _schedules(client)) == {SCHED + live.id, SCHED + offline.id}

    await eventually(both, what="both schedules")
    await store.delete(live.key)  # while the cron worker runs

    async def only_offline() -> bool:
        return set(await _schedules(client)) == {SCHED + offline.id}

    await eventually(only_offline, what="the live removal")
    cron.kill()
    cron.wait()
    await store.delete(offline.key)  # while no cron worker runs
    spawn("workers.trigger_plugins", "cron")

    async def none_left() -> bool:
        return await _schedules(client) == {}

    await eventually(none_left, what="the orphan schedule to be purged at start")


async def test_a_firing_waits_for_its_worker_to_come_back(client, spawn) -> None:
    """A tick whose function nobody serves yet (the worker still starting after a downtime)
    fires once the worker is back, instead of being dropped after its few attempts."""
    spawn("workers.trigger_plugins", "cron")
    fixture = spawn("tests.triggers.fixture_worker", "cron")
    fixture.kill()
    fixture.wait()
    await client.call("engine::cron-fire", {"function_id": "t::manual"}, timeout=5)
    await asyncio.sleep(4)  # past max_attempts (3) at backoff 0.2 s
    spawn("tests.triggers.fixture_worker", "cron")
    await eventually(lambda: _get(client, "manual.ok.7"), timeout=20, what="the waiting firing")
    assert await _get(client, "manual.ok.7") == 1
