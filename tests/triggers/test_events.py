"""subscribe, stream and state triggers with real processes, including restarts."""

from __future__ import annotations

import signal
from typing import Any

from nats.js.api import StreamConfig

from engine import Client
from tests.fixtures import eventually
from triggers.subscribe import publish


async def _get(client: Client, key: str) -> Any:
    return await (await client.bucket("fixtures")).get(key)


async def test_publish_runs_every_subscribed_function_once(client, spawn) -> None:
    spawn("tests.triggers.fixture_worker", "subscribe")
    spawn("workers.trigger_plugins", "subscribe")
    spawn("workers.trigger_plugins", "subscribe")  # a replica must not double the calls
    await publish(client, "news", {"n": 1})
    await eventually(lambda: _get(client, "fan.a.1"), what="subscriber a")
    await eventually(lambda: _get(client, "fan.b.1"), what="subscriber b")
    out = await client.call("engine::publish", {"topic": "news", "payload": {"n": 2}}, timeout=5)
    assert out == {"topic": "news"}
    await eventually(lambda: _get(client, "fan.b.2"), what="the second message")
    assert (await _get(client, "fan.a.1"), await _get(client, "fan.b.1")) == (1, 1)


async def test_stream_consumer_restarted_skips_nothing_and_repeats_nothing(client, spawn) -> None:
    js = client.nc.jetstream()
    await js.add_stream(StreamConfig(name="EVENTS", subjects=["events.>"]))
    spawn("tests.triggers.fixture_worker", "stream")
    consumer = spawn("workers.trigger_plugins", "stream")
    for n in range(1, 41):
        await js.publish(f"events.e{n}", b'{"n": %d, "sleep": 0.02}' % n)

    async def some() -> bool:
        return int(await _get(client, "consume.count") or 0) >= 10

    await eventually(some, what="the first messages")
    consumer.send_signal(signal.SIGKILL)
    consumer.wait()
    for n in range(41, 81):
        await js.publish(f"events.e{n}", b'{"n": %d}' % n)
    spawn("workers.trigger_plugins", "stream")

    async def all_seen() -> bool:
        return await _get(client, "consume.count") == 80

    await eventually(all_seen, timeout=20, what="all 80 messages")
    assert await _get(client, "consume.disorder") is None
    # At most the one message in flight at the kill is delivered again: the consumer
    # resumed where it stopped instead of replaying the stream.
    assert int(await _get(client, "consume.dup") or 0) <= 1


async def test_state_trigger_sees_create_update_delete_in_order_and_resumes(client, spawn) -> None:
    things = await client.bucket("things", history=10)  # keep every revision until delivered
    spawn("tests.triggers.fixture_worker", "state")
    trig = spawn("workers.trigger_plugins", "state")
    await things.put("a", 1)
    await things.put("a", 2)
    await things.delete("a")

    async def logged(n: int) -> list[str] | None:
        log = await _get(client, "state.log")
        return log if log and len(log) >= n else None

    log = await eventually(lambda: logged(3), what="three changes")
    assert log == ["created:a:None:1", "updated:a:1:2", "deleted:a:2:None"]

    trig.send_signal(signal.SIGTERM)
    trig.wait()
    await things.put("b", {"x": 1})
    spawn("workers.trigger_plugins", "state")
    log = await eventually(lambda: logged(4), what="the change made while stopped")
    assert log == [
        "created:a:None:1",
        "updated:a:1:2",
        "deleted:a:2:None",
        "created:b:None:{'x': 1}",
    ]


async def test_state_trigger_sees_a_key_whose_ttl_ran_out_as_deleted(client, spawn) -> None:
    # JetStream removes the key itself (per-key TTL) and leaves a marker, not a KV delete.
    expiring = await client.bucket("expiring", marker_ttl=30)
    spawn("tests.triggers.fixture_worker", "state-ttl")
    spawn("workers.trigger_plugins", "state")
    await expiring.create("lease", 1, ttl=1)

    async def logged() -> list[str] | None:
        log = await _get(client, "state.log")
        return log if log and len(log) >= 2 else None

    log = await eventually(logged, timeout=10, what="the creation and the expiry")
    assert log == ["created:lease:None:1", "deleted:lease:1:None"]
