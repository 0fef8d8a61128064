"""MEM_EVENTS keeps one subject per project for observations (not one per observation), and
an observation still gets exactly one event: within the duplicate window by its msg id,
past it by reading whether the event is there (`MemoryStore.publish_once`)."""

from __future__ import annotations

import msgspec
import pytest

from engine import Client
from functions.kernel import store as store_module
from functions.kernel.ids import kv_key
from functions.kernel.records import (
    EVENTS_STREAM,
    EVENTS_SUBJECT,
    Observation,
    ObservationAdded,
    observation_events_subject,
)
from functions.kernel.store import MemoryStore


def _obs(i: int, project: str) -> Observation:
    return Observation(
        id=f"obs_layout{i:04d}", session_id="s1", project=project, hook_type="post_tool_use",
        timestamp="2026-12-01T10:00:00.000Z", title=f"edit {i}",
    )  # fmt: skip


async def _events(client: Client) -> list[str]:
    out: list[str] = []
    async for m in client.stream(EVENTS_STREAM).read(subject=f"{EVENTS_SUBJECT}.observation.>"):
        out.append(msgspec.json.decode(m.data, type=ObservationAdded).observation.id)
    return out


async def _store(client: Client) -> MemoryStore:
    return await MemoryStore(client).open()


async def test_observation_events_take_one_subject_per_project(client: Client) -> None:
    st = await _store(client)
    for i in range(30):
        o = _obs(i, "alpha" if i % 3 else "beta two/with spaces")
        assert await st.kv_create_fast(st.observations, o.id, o) is not None
        await st.publish_new(ObservationAdded(observation=o))
    info = await client.nc.jetstream().stream_info(
        EVENTS_STREAM, subjects_filter=f"{EVENTS_SUBJECT}.observation.>"
    )
    subjects = info.state.subjects or {}
    assert set(subjects) == {
        observation_events_subject("alpha"),
        observation_events_subject("beta two/with spaces"),
    }
    assert sum(subjects.values()) == 30
    assert sorted(await _events(client)) == sorted(_obs(i, "").id for i in range(30))


async def test_a_replay_inside_the_window_is_dropped_by_the_msg_id(client: Client) -> None:
    st = await _store(client)
    o = _obs(1, "alpha")
    await st.kv_create_fast(st.observations, o.id, o)
    await st.publish_new(ObservationAdded(observation=o))
    assert await st.publish_once(ObservationAdded(observation=o)) is False
    assert await _events(client) == [o.id]


async def test_a_replay_past_the_window_finds_the_event_or_publishes_it_once(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    st = await _store(client)
    # every record is "older than the window": the read of its project's subject decides
    monkeypatch.setattr(store_module, "DUPLICATE_WINDOW", 0.0)
    published = _obs(1, "alpha")
    await st.kv_create_fast(st.observations, published.id, published)
    await st.publish_new(ObservationAdded(observation=published))
    for i in range(5):  # other writes in between, on the same subject and another
        other = _obs(100 + i, "alpha" if i % 2 else "beta")
        await st.kv_create_fast(st.observations, other.id, other)
        await st.publish_new(ObservationAdded(observation=other))
    assert await st.publish_once(ObservationAdded(observation=published)) is False
    assert (await _events(client)).count(published.id) == 1
    assert await st.dedup.presence(store_module.EVENT_MARKER + kv_key(published.id)) == "absent"

    # what a writer killed between its two writes leaves: the record, no event
    orphan = _obs(2, "alpha")
    await st.kv_create_fast(st.observations, orphan.id, orphan)
    assert await st.publish_once(ObservationAdded(observation=orphan)) is True
    assert await st.publish_once(ObservationAdded(observation=orphan)) is False
    assert (await _events(client)).count(orphan.id) == 1


async def test_an_existing_stream_gets_the_short_duplicate_window(client: Client) -> None:
    js = client.nc.jetstream()
    old = client.stream(EVENTS_STREAM, subjects=[f"{EVENTS_SUBJECT}.>"], duplicate_window=600.0)
    await old.ensure()  # what main made: a 600 s window
    await _store(client)
    info = await js.stream_info(EVENTS_STREAM)
    assert info.config.duplicate_window == store_module.DUPLICATE_WINDOW == 120.0
