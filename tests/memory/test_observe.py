"""mem::observe over the bus: delivery semantics, dedup, scrubbing, validation."""

from __future__ import annotations

from typing import Any

import msgspec
import nats.errors
import pytest

from engine import Client, FunctionError
from functions.kernel.records import ObservationAdded
from functions.memory.wire import ObserveOut
from tests.fixtures import stored, stored_ids


def payload(**over: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "hookType": "post_tool_use",
        "sessionId": "s1",
        "project": "demo",
        "cwd": "/work/demo",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "data": {
            "tool_name": "Edit",
            "tool_input": {"file_path": "src/app.py", "old_string": "a", "new_string": "b"},
            "tool_output": "ok",
        },
    }
    p.update(over)
    return p


async def observe(client: Client, p: dict[str, Any]) -> ObserveOut:
    out: ObserveOut = await client.call("mem::observe", p, response=ObserveOut, timeout=10)
    return out


async def test_observation_is_stored_compressed_and_acknowledged(
    client: Client, memory_worker: Any
) -> None:
    memory_worker()
    out = await observe(client, payload(eventId="toolu_1"))
    assert out.status == "accepted"
    assert out.boot_id and out.accepted_at and out.durable_after_ms >= 0
    obs = await stored(client, out.observation_id)
    assert obs is not None
    assert (obs.type, obs.files, obs.session_id, obs.project) == (
        "file_edit",
        ["src/app.py"],
        "s1",
        "demo",
    )


async def test_duplicate_event_id_is_stored_once(client: Client, memory_worker: Any) -> None:
    memory_worker()
    first = await observe(client, payload(eventId="toolu_dup"))
    again = await observe(client, payload(eventId="toolu_dup", timestamp="2026-11-29T11:00:00Z"))
    assert (first.status, again.status) == ("accepted", "duplicate")
    assert first.observation_id == again.observation_id
    assert await stored_ids(client) == [first.observation_id]


async def test_replay_without_event_id_is_a_duplicate_by_content_hash(
    client: Client, memory_worker: Any
) -> None:
    memory_worker()
    a = await observe(client, payload())
    b = await observe(client, payload())
    c = await observe(client, payload(timestamp="2026-11-29T10:00:01.000Z"))
    assert (a.status, b.status, c.status) == ("accepted", "duplicate", "accepted")
    assert a.observation_id == b.observation_id != c.observation_id


async def test_concurrent_replays_of_one_event_store_one_observation(
    client: Client, memory_worker: Any
) -> None:
    import asyncio

    memory_worker()
    outs = await asyncio.gather(
        *(observe(client, payload(eventId="toolu_race")) for _ in range(20))
    )
    assert len({o.observation_id for o in outs}) == 1
    assert any(o.status == "accepted" for o in outs)
    assert len(await stored_ids(client)) == 1


async def _events_of(client: Client, obs_id: str) -> list[ObservationAdded]:
    from functions.kernel.records import EVENTS_STREAM, EVENTS_SUBJECT

    js = client.nc.jetstream()
    sub = await js.subscribe(
        f"{EVENTS_SUBJECT}.observation.>", stream=EVENTS_STREAM, ordered_consumer=True
    )
    out: list[ObservationAdded] = []
    try:
        while True:
            msg = await sub.next_msg(timeout=0.5)
            ev = msgspec.json.decode(msg.data, type=ObservationAdded)
            if ev.observation.id == obs_id:
                out.append(ev)
    except nats.errors.TimeoutError:
        return out
    finally:
        await sub.unsubscribe()


async def test_forgotten_observation_stays_forgotten_on_replay(
    client: Client, memory_worker: Any
) -> None:
    memory_worker()
    first = await observe(client, payload(eventId="toolu_gone"))
    await client.call("mem::forget", {"observationIds": [first.observation_id]}, timeout=10)
    again = await observe(client, payload(eventId="toolu_gone"))
    assert again.status == "duplicate"
    assert await stored_ids(client) == []
    # The record was its event: forgetting it erased it from MEM_EVENTS.
    assert await _events_of(client, first.observation_id) == []


@pytest.mark.parametrize(
    ("over", "field", "code"),
    [
        ({"hookType": "not_a_hook"}, "hookType", "BAD_REQUEST"),
        ({"sessionId": ""}, "sessionId", "BAD_REQUEST"),
        ({"data": "nope"}, "data", "BAD_REQUEST"),
        ({"timestamp": "yesterday"}, "timestamp", "UNPROCESSABLE"),
    ],
)
async def test_bad_payload_is_rejected_naming_the_field(
    client: Client, memory_worker: Any, over: dict[str, Any], field: str, code: str
) -> None:
    memory_worker()
    with pytest.raises(FunctionError) as ei:
        await observe(client, payload(**over))
    assert (ei.value.code, ei.value.field) == (code, field)


async def test_missing_field_is_named(client: Client, memory_worker: Any) -> None:
    memory_worker()
    p = payload()
    del p["sessionId"]
    with pytest.raises(FunctionError) as ei:
        await observe(client, p)
    assert ei.value.field == "sessionId"


async def test_session_ids_that_are_not_kv_keys_still_work(
    client: Client, memory_worker: Any
) -> None:
    memory_worker()
    sid = "conversation: 42 / ..odd"
    out = await observe(client, payload(sessionId=sid, eventId="odd"))
    assert out.status == "accepted"
    await client.call("mem::session-start", {"sessionId": sid, "project": "p"}, timeout=5)
    await client.call("mem::session-end", {"sessionId": sid}, timeout=5)
    got = await client.call("mem::observations", {"sessionId": sid}, timeout=5)
    assert [o["sessionId"] for o in got["observations"]] == [sid]
    sessions = await client.call("mem::sessions", {}, timeout=5)
    assert [(s["id"], s["status"]) for s in sessions["sessions"]] == [(sid, "ended")]


@pytest.mark.unit
def test_bounded_cuts_and_marks_every_oversize_part_of_the_data() -> None:
    from functions.memory.observe import DATA_MAX, FIELD_MAX, ITEMS_MAX, bounded

    data = {
        "tool_input": {"content": "a" * (FIELD_MAX + 10), "small": "ok"},
        "tool_output": ["x"] * (ITEMS_MAX + 5),
        "image_data": "b" * (DATA_MAX * 2),
    }
    out, cut = bounded(data)
    assert out["tool_input"]["small"] == "ok"
    assert out["tool_input"]["content"].endswith("…[truncated 10 chars]")
    assert len(out["tool_output"]) == ITEMS_MAX
    assert cut == [
        f"data.tool_input.content ({FIELD_MAX + 10} chars)",
        f"data.tool_output ({ITEMS_MAX + 5} items)",
        f"data.image_data ({DATA_MAX * 2} chars)",
    ]
    assert len(msgspec.json.encode(out)) < DATA_MAX + 64 * 1024  # the whole budget holds
    assert bounded({"prompt": "short"}) == ({"prompt": "short"}, [])


async def test_a_5_mib_event_is_stored_cut_to_size_and_its_replay_is_a_duplicate(
    client: Client, memory_worker: Any
) -> None:
    memory_worker()
    huge = payload(
        data={
            "tool_name": "Write",
            "tool_input": {"file_path": "big.txt", "content": "z" * (5 << 20)},
            "tool_output": "written",
        }
    )
    first = await observe(client, huge)
    again = await observe(client, huge)
    assert (first.status, again.status) == ("accepted", "duplicate")
    assert again.observation_id == first.observation_id
    obs = await stored(client, first.observation_id)
    assert obs is not None and obs.truncated == [f"data.tool_input.content ({5 << 20} chars)"]
    assert len(msgspec.json.encode(obs)) < 64 * 1024
