"""Each case of the layout before records on MEM_EVENTS (an observation per KV key), written
by hand, comes out of the in-place upgrade as one record (functions/kernel/store_upgrade.py),
and an upgrade killed half way resumes where it was. test_store_upgrade_datadir.py opens a
data dir the code before the change wrote."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec
import pytest

from engine import Client, FunctionError
from functions.kernel import store_upgrade
from functions.kernel.ids import kv_key
from functions.kernel.observation_fold import OBSERVATION_SUBJECTS
from functions.kernel.records import (
    EVENTS_STREAM,
    EVENTS_SUBJECT,
    OBSERVATIONS_BUCKET,
    Observation,
    ObservationAdded,
    observation_events_subject,
)
from functions.kernel.store import MemoryStore


async def messages(client: Client) -> list[Observation]:
    return [
        msgspec.json.decode(m.data, type=ObservationAdded).observation
        async for m in client.stream(EVENTS_STREAM).read(subject=OBSERVATION_SUBJECTS)
    ]


async def gone(client: Client, stream: str) -> bool:
    try:
        await client.stream(stream).info()
    except FunctionError as err:
        return err.code == "NOT_FOUND"
    return False


def _obs(i: int, **over: Any) -> Observation:
    o = Observation(
        id=f"obs_up{i:04d}", session_id="s1", project="alpha", hook_type="post_tool_use",
        timestamp="2026-11-01T10:00:00.000Z", title=f"record {i}", narrative=f"word{i}",
    )  # fmt: skip
    return msgspec.structs.replace(o, **over)


async def _old_layout(client: Client, n_plain: int = 0) -> dict[str, Observation]:
    """What the KV layout could hold: each case of `store_upgrade`'s docstring. Returns the
    record each id must have after the upgrade."""
    kv = await client.bucket(OBSERVATIONS_BUCKET)
    dedup = await client.bucket("mem_dedup")
    events = client.stream(EVENTS_STREAM, subjects=[f"{EVENTS_SUBJECT}.>"])
    await events.ensure()

    async def event(o: Observation, subject: str = "") -> None:
        await events.publish(
            subject or observation_events_subject(o.project), ObservationAdded(observation=o)
        )

    want: dict[str, Observation] = {}
    for i in range(n_plain):  # the usual: the record and its event
        o = _obs(100 + i)
        await kv.create(o.id, o)
        await event(o)
        want[o.id] = o
    plain = _obs(1)
    await kv.create(plain.id, plain)
    await event(plain)
    want[plain.id] = plain
    marked = _obs(2)  # a team share marked the bucket's copy only
    await kv.create(marked.id, marked)
    await event(marked)
    await kv.put(marked.id, msgspec.structs.replace(marked, team="dev"))
    want[marked.id] = msgspec.structs.replace(marked, team="dev", revision=1)
    revised = _obs(3)  # the compression model's rewrite, announced
    await event(revised)
    await kv.put(revised.id, msgspec.structs.replace(revised, title="better", revision=1))
    await event(msgspec.structs.replace(revised, title="better", revision=1))
    want[revised.id] = msgspec.structs.replace(revised, title="better", revision=1)
    unannounced = _obs(4)  # the rewrite's event never went out
    await event(unannounced)
    await kv.put(unannounced.id, msgspec.structs.replace(unannounced, title="b", revision=1))
    want[unannounced.id] = msgspec.structs.replace(unannounced, title="b", revision=1)
    orphan = _obs(5)  # a writer died between its two writes: no event at all
    await kv.create(orphan.id, orphan)
    want[orphan.id] = orphan
    forgotten = _obs(6)
    await kv.create(forgotten.id, forgotten)
    await event(forgotten)
    await kv.delete(forgotten.id)
    old_subject = _obs(7)  # the layout before per-project subjects
    await kv.create(old_subject.id, old_subject)
    await event(old_subject, f"{EVENTS_SUBJECT}.observation.{kv_key(old_subject.id)}")
    want[old_subject.id] = msgspec.structs.replace(old_subject, revision=1)
    await dedup.put("ev.obs_up0004", {"at": "2026-11-01T10:00:00Z"})
    return want


async def _check(client: Client, store: MemoryStore, want: dict[str, Observation]) -> None:
    assert await gone(client, f"KV_{OBSERVATIONS_BUCKET}")
    assert await gone(client, "KV_mem_dedup")
    for oid, o in want.items():
        assert await store.get_observation(oid) == o, oid
    stored = await messages(client)
    assert sorted(o.id for o in stored) == sorted(want)  # one message a record
    assert all(m == want[m.id] for m in stored)
    assert await store.get_observation("obs_up0006") is None  # forgotten: its event erased
    assert await store.observation_presence("obs_up0006") == "deleted"
    assert not await store.add_observation(_obs(6))  # and it stays forgotten
    counts = await client.stream(EVENTS_STREAM).subject_counts(OBSERVATION_SUBJECTS)
    assert list(counts) == [observation_events_subject("alpha")]


async def test_every_case_of_the_old_layout_comes_out_as_one_record(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    want = await _old_layout(client)
    with caplog.at_level(logging.WARNING, "functions.kernel.store_upgrade"):
        store = await MemoryStore(client).open()
    await _check(client, store, want)
    said = [r.getMessage() for r in caplog.records]
    assert any("upgrading the observation store:" in m and "(100%)" in m for m in said), said
    assert any("observation store upgraded" in m for m in said), said
    again = await MemoryStore(client).open()  # the next start: nothing left to do
    await _check(client, again, want)


@pytest.mark.parametrize("killed_at", [2, 5, 9])
async def test_a_killed_upgrade_resumes_where_it_was(
    client: Client, monkeypatch: pytest.MonkeyPatch, killed_at: int
) -> None:
    """Killed at the `killed_at`-th progress save: in the fold, between the phases, in the
    check of the bucket's keys."""
    want = await _old_layout(client, n_plain=40)
    monkeypatch.setattr(store_upgrade, "BATCH", 7)
    monkeypatch.setattr(store_upgrade, "KEYS_BATCH", 9)
    saves = 0
    real_save = store_upgrade._Upgrade._save

    async def dies(self: Any) -> None:
        nonlocal saves
        saves += 1
        if saves == killed_at:
            raise KeyboardInterrupt("killed")  # as a SIGKILL: nothing after this runs
        await real_save(self)

    monkeypatch.setattr(store_upgrade._Upgrade, "_save", dies)
    with pytest.raises(KeyboardInterrupt):
        await MemoryStore(client).open()
    assert not await gone(client, f"KV_{OBSERVATIONS_BUCKET}")
    monkeypatch.setattr(store_upgrade._Upgrade, "_save", real_save)
    # The killed process's claim is still fresh: the next start waits it out, then resumes.
    monkeypatch.setattr(store_upgrade, "STALE", 1.0)
    store = await asyncio.wait_for(MemoryStore(client).open(), 60)
    await _check(client, store, want)
