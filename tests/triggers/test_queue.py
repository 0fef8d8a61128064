"""The queue trigger with real processes: durability, retries, dead letters, concurrency."""

from __future__ import annotations

import signal
from typing import Any

from engine import Client
from tests.fixtures import eventually
from triggers.queue.streams import enqueue


async def _get(client: Client, key: str) -> Any:
    return await (await client.bucket("fixtures")).get(key)


async def _start(spawn) -> None:  # type: ignore[no-untyped-def]
    spawn("tests.triggers.fixture_worker", "queue")
    spawn("workers.trigger_plugins", "queue")


async def test_enqueued_call_runs_and_a_repeated_msg_id_is_stored_once(client, spawn) -> None:
    await _start(spawn)
    first = await enqueue(client, "record", {"id": "a"}, msg_id="job-a")
    again = await enqueue(client, "record", {"id": "a"}, msg_id="job-a")
    assert (again.seq, again.duplicate, first.duplicate) == (first.seq, True, False)
    await eventually(lambda: _get(client, "count.a"), what="the job to run")
    assert await _get(client, "starts.a") == 1
    assert await _get(client, "done.a") == "job-a"  # the msg id reached the handler


async def test_handler_killed_mid_message_gets_it_redelivered_and_records_once(
    client, spawn
) -> None:
    victim = spawn("tests.triggers.fixture_worker", "queue")
    spawn("workers.trigger_plugins", "queue")
    await enqueue(client, "record", {"id": "k", "sleep": 30}, msg_id="job-k")
    await eventually(lambda: _get(client, "starts.k"), what="the handler to start")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    spawn("tests.triggers.fixture_worker", "queue")
    await eventually(lambda: _get(client, "count.k"), timeout=15, what="the redelivery")
    assert await _get(client, "starts.k") == 2  # it really ran again
    assert await _get(client, "count.k") == 1  # and was recorded once


async def test_handler_failing_three_times_lands_in_dead_letters_and_redrive_runs_it(
    client, spawn
) -> None:
    await _start(spawn)
    await enqueue(client, "flaky", {"id": "f"}, msg_id="job-f")

    async def dead() -> list[Any]:
        page = await client.call("engine::dlq-list", {"queue": "flaky"}, timeout=5)
        return list(page["items"])

    items = await eventually(dead, what="the dead letter")
    assert await _get(client, "attempts.f") == 3
    letter = items[0]
    assert (letter["queue"], letter["function_id"], letter["attempts"]) == ("flaky", "t::flaky", 3)
    assert letter["msg_id"] == "job-f" and letter["payload"] == {"id": "f"}
    assert letter["error"]["code"] == "INTERNAL"

    await (await client.bucket("fixtures")).put("healed", True)
    out = await client.call("engine::dlq-redrive", {"seq": letter["seq"]}, timeout=5)
    assert out["count"] == 1
    await eventually(lambda: _get(client, "done.f"), what="the redriven call")
    assert await dead() == []


async def test_non_retryable_error_is_dead_lettered_at_once_and_can_be_discarded(
    client, spawn
) -> None:
    await _start(spawn)
    await enqueue(client, "reject", {"id": "r"})

    async def dead() -> list[Any]:
        page = await client.call("engine::dlq-list", {"queue": "reject"}, timeout=5)
        return list(page["items"])

    items = await eventually(dead, what="the dead letter")
    assert items[0]["attempts"] == 1
    assert items[0]["error"]["field"] == "id"
    out = await client.call("engine::dlq-discard", {"queue": "reject"}, timeout=5)
    assert out["count"] == 1
    assert await dead() == []


async def test_dead_letter_functions_reject_an_empty_selection(client, spawn) -> None:
    await _start(spawn)
    from engine import FunctionError

    try:
        await client.call("engine::dlq-redrive", {}, timeout=5)
    except FunctionError as err:
        assert (err.code, err.field) == ("BAD_REQUEST", "seq")
    else:
        raise AssertionError("an empty selection must be refused")


async def test_concurrency_limit_bounds_calls_in_flight(client, spawn) -> None:
    await _start(spawn)
    for i in range(6):
        await enqueue(client, "gauge", {"id": str(i), "sleep": 0.3})
    await eventually(lambda: _eq(client, "gauge.done", 6), what="all six calls")
    assert await _get(client, "gauge.max") == 2


async def _eq(client: Client, key: str, value: int) -> bool:
    return bool(await _get(client, key) == value)


async def test_enqueue_function_validates_the_queue_name(client, spawn) -> None:
    await _start(spawn)
    from engine import FunctionError

    try:
        await client.call("engine::enqueue", {"queue": "bad name", "payload": {}}, timeout=5)
    except FunctionError as err:
        assert (err.code, err.field) == ("BAD_REQUEST", "queue")
    else:
        raise AssertionError("a bad queue name must be refused")
    out = await client.call(
        "engine::enqueue", {"queue": "gauge", "payload": {"id": "x"}}, timeout=5
    )
    assert out["seq"] >= 1
