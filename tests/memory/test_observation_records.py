"""Observations as records on MEM_EVENTS (one subject per project), found by id through the
index: round trips (add, get, put, update, scan, count, forget), exactness of the
create-once under replays inside and past the duplicate window, and what a writer killed
between its steps leaves behind (docs/design/observation-records.md)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from engine import Client
from functions.kernel import store as store_module
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.records import (
    EVENTS_STREAM,
    EVENTS_SUBJECT,
    Observation,
    ObservationAdded,
    observation_events_subject,
)
from functions.kernel.store import MemoryStore, events_stream

SUBJECTS = f"{EVENTS_SUBJECT}.observation.>"


def _obs(i: int, project: str = "alpha", **over: object) -> Observation:
    o = Observation(
        id=f"obs_rec{i:06d}", session_id="s1", project=project, hook_type="post_tool_use",
        timestamp="2026-12-01T10:00:00.000Z", title=f"edit {i}",
    )  # fmt: skip
    return msgspec.structs.replace(o, **over)


async def _messages(client: Client) -> list[tuple[int, Observation]]:
    """Every observation message of MEM_EVENTS: (seq, record)."""
    out = []
    async for m in client.stream(EVENTS_STREAM).read(subject=SUBJECTS):
        out.append((m.seq, msgspec.json.decode(m.data, type=ObservationAdded).observation))
    return out


async def _ids(client: Client) -> list[str]:
    return sorted(o.id for _, o in await _messages(client))


async def _store(client: Client) -> MemoryStore:
    return await MemoryStore(client).open()


@pytest.fixture
def short_window(monkeypatch: pytest.MonkeyPatch) -> float:
    """MEM_EVENTS with a 2 s duplicate window: a replay 2 s on is past it."""
    monkeypatch.setattr(store_module, "DUPLICATE_WINDOW", 2.0)
    return 2.0


async def test_records_take_one_subject_per_project_and_read_back(client: Client) -> None:
    st = await _store(client)
    for i in range(30):
        assert await st.add_observation(_obs(i, "alpha" if i % 3 else "beta two/with spaces"))
    counts = await client.stream(EVENTS_STREAM).subject_counts(SUBJECTS)
    assert counts == {
        observation_events_subject("alpha"): 20,
        observation_events_subject("beta two/with spaces"): 10,
    }
    assert await st.count_observations() == 30
    assert (await st.get_observation(_obs(4).id)) == _obs(4, "alpha")
    assert sorted(await st.get_observations([_obs(i).id for i in (1, 2, 99)])) == [
        _obs(1).id,
        _obs(2).id,
    ]
    alpha = [o.id async for o in st.scan_observations("alpha")]
    assert alpha == [_obs(i).id for i in range(30) if i % 3]  # oldest first
    assert await st.observation_presence(_obs(3).id) == "present"
    assert await st.observation_presence("obs_never") == "absent"
    await st.close()


async def test_a_replay_inside_the_window_is_one_record(client: Client) -> None:
    a, b = await _store(client), await _store(client)  # two writer processes
    o = _obs(1)
    got = await asyncio.gather(*(s.add_observation(o) for s in (a, b, a, b)))
    assert sorted(got) == [False, False, False, True]
    assert await _ids(client) == [o.id]


async def test_a_replay_past_the_window_is_the_index_s(client: Client, short_window: float) -> None:
    st = await _store(client)
    o = _obs(1)
    assert await st.add_observation(o)
    await asyncio.sleep(short_window + 0.5)  # the msg id is forgotten by JetStream now
    again = await _store(client)  # another process: nothing of the first in its memory
    assert await again.add_observation(o) is False
    assert await _ids(client) == [o.id]


async def test_a_writer_killed_before_its_fold_still_dedups_a_late_replay(
    client: Client, short_window: float
) -> None:
    # What a writer killed right after its publish leaves: the record, its msg id, and an
    # index that never heard of it.
    o = _obs(1)
    await _store(client)  # the stream, with the short window
    await client.stream(EVENTS_STREAM).publish(
        observation_events_subject(o.project),
        ObservationAdded(observation=o),
        msg_id=o.id,
    )
    await asyncio.sleep(short_window + 0.5)
    st = await _store(client)
    # The watermark is older than the window: the write folds before it trusts the index.
    assert await st.add_observation(o) is False
    assert await _ids(client) == [o.id]
    assert await st.get_observation(o.id) == o


async def test_a_forgotten_record_is_erased_and_stays_forgotten_past_the_window(
    client: Client, short_window: float
) -> None:
    st = await _store(client)
    kept, gone, fresh = _obs(1), _obs(2), _obs(3)
    for o in (kept, gone):
        await st.add_observation(o)
    await st.fold_observations()
    await st.add_observation(fresh)  # forgotten before the index folds it
    removed = await st.forget_observations([gone.id, fresh.id, "obs_never"])
    assert sorted(o.id for o in removed) == [gone.id, fresh.id]
    assert await _ids(client) == [kept.id]
    assert await st.get_observation(gone.id) is None
    assert await st.observation_presence(gone.id) == "deleted"
    assert await st.observation_presence(fresh.id) == "deleted"
    await asyncio.sleep(short_window + 0.5)
    other = await _store(client)
    assert await other.add_observation(gone) is False
    assert await other.add_observation(fresh) is False
    assert await _ids(client) == [kept.id]


async def test_forget_keeps_what_the_predicate_keeps(client: Client) -> None:
    st = await _store(client)
    mine, theirs = _obs(1, agent_id="me"), _obs(2, agent_id="them")
    for o in (mine, theirs):
        await st.add_observation(o)
    gone = await st.forget_observations([mine.id, theirs.id], keep=lambda o: o.agent_id == "me")
    assert [o.id for o in gone] == [mine.id]
    assert await _ids(client) == [theirs.id]


async def test_update_replaces_the_record_under_compare_and_set(client: Client) -> None:
    st, other = await _store(client), await _store(client)
    o = _obs(1)
    await st.add_observation(o)

    def add_fact(n: int):  # type: ignore[no-untyped-def]
        def fn(cur: Observation) -> Observation:
            cur.facts = [*cur.facts, f"fact {n}"]
            cur.revision += 1
            return cur

        return fn

    # Concurrent read-modify-writes from two processes: none is lost.
    await asyncio.gather(*(s.update_observation(o.id, add_fact(n)) for n, s in
                           enumerate([st, other, st, other, st, other])))  # fmt: skip
    got = await other.get_observation(o.id)
    assert got is not None and sorted(got.facts) == [f"fact {n}" for n in range(6)]
    assert got.revision == 6
    messages = await _messages(client)
    assert [m.id for _, m in messages] == [o.id]  # one version left: the older ones deleted
    assert await st.update_observation("obs_never", add_fact(9)) is None
    assert await st.update_observation(o.id, lambda cur: None) == got


async def test_put_stores_new_replaces_or_revives_as_asked(client: Client) -> None:
    st = await _store(client)
    o = _obs(1)
    assert await st.put_observation(o, replace=False)
    assert await st.put_observation(msgspec.structs.replace(o, title="no"), replace=False) is False
    assert await st.put_observation(msgspec.structs.replace(o, title="yes"))
    assert (await st.get_observation(o.id)).title == "yes"  # type: ignore[union-attr]
    assert await st.put_observation(msgspec.structs.replace(o, title="yes"))  # unchanged: no-op
    assert len(await _messages(client)) == 1
    await st.forget_observations([o.id])
    assert await st.put_observation(o) is False  # forgotten: not without revive
    assert await st.put_observation(o, revive=True)
    assert await st.get_observation(o.id) == o
    assert await _ids(client) == [o.id]


async def test_a_rewrite_after_a_forget_does_not_bring_the_record_back(client: Client) -> None:
    st = await _store(client)
    o = _obs(1)
    await st.add_observation(o)
    await st.fold_observations()
    await st.forget_observations([o.id])
    # A writer that read the record before the forget publishes its rewrite after it.
    late = msgspec.structs.replace(o, title="late", revision=1)
    await client.stream(EVENTS_STREAM).publish(
        observation_events_subject(o.project), ObservationAdded(observation=late)
    )
    await st.fold_observations()
    assert await _ids(client) == []
    assert await st.get_observation(o.id) is None


async def test_a_rewrite_that_died_before_deleting_the_old_version_is_cleaned_by_the_fold(
    client: Client,
) -> None:
    st = await _store(client)
    o = _obs(1)
    await st.add_observation(o)
    await st.fold_observations()
    newer = msgspec.structs.replace(o, title="newer", revision=1)
    await client.stream(EVENTS_STREAM).publish(
        observation_events_subject(o.project), ObservationAdded(observation=newer)
    )
    assert (await st.get_observation(o.id)) == o  # the index still says the old one
    await st.fold_observations()
    assert [m for _, m in await _messages(client)] == [newer]
    assert await st.get_observation(o.id) == newer


async def test_another_process_reads_what_the_index_has_not_folded(client: Client) -> None:
    writer = await _store(client)
    o = _obs(1, "gamma")
    await writer.add_observation(o)
    reader = await ObservationRecords(client, events_stream(client)).open()
    assert await reader.get(o.id) == o  # from the tail, before any fold
    assert await reader.presence(o.id) == "present"
    await writer.close()  # folds what it wrote
    mark, _ = await reader.index.watermark()
    assert mark.seq >= (await client.stream(EVENTS_STREAM).info()).last_seq
    assert await reader.get(o.id) == o


async def test_the_index_holds_many_ids_in_few_subjects(client: Client) -> None:
    st = await _store(client)
    for i in range(300):
        await st.add_observation(_obs(i))
    await st.fold_observations()
    index = await client.bucket("mem_observation_index")
    subjects = await index.stored_keys()
    assert "w" in subjects and len(subjects) <= 301
    for i in range(0, 300, 37):
        assert await st.get_observation(_obs(i).id) == _obs(i)


async def test_an_existing_stream_gets_the_short_duplicate_window(client: Client) -> None:
    js = client.nc.jetstream()
    old = client.stream(EVENTS_STREAM, subjects=[f"{EVENTS_SUBJECT}.>"], duplicate_window=600.0)
    await old.ensure()  # what an older main made: a 600 s window
    await _store(client)
    info = await js.stream_info(EVENTS_STREAM)
    assert info.config.duplicate_window == store_module.DUPLICATE_WINDOW == 120.0


async def test_an_observation_is_not_published_as_a_plain_event(client: Client) -> None:
    st = await _store(client)
    with pytest.raises(TypeError):
        await st.publish(ObservationAdded(observation=_obs(1)))


async def test_concurrent_lookups_share_requests_and_each_gets_its_own_answer(
    client: Client,
) -> None:
    """Create-once writes look their id up in the index; made at once, the lookups go
    together in a few batched reads, and each still answers for its own key (present,
    absent, in a block it shares with another key or not), a cancelled one included."""
    st = await _store(client)
    for i in range(40):
        assert await st.add_observation(_obs(i))
    records = await ObservationRecords(client, events_stream(client)).open()
    await records.folder.fold()
    index = records.index
    sent = client.nc.stats["out_msgs"]
    stored = [f"obs_rec{i:06d}" for i in range(40)]
    absent = [f"obs_none{i:06d}" for i in range(40)]
    doomed = asyncio.ensure_future(index.lookup(absent[0]))
    asks = [index.lookup(k) for k in stored + absent]
    await asyncio.sleep(0)
    doomed.cancel()
    got = await asyncio.gather(*asks)
    assert all(v is not None and v > 0 for v in got[:40])
    assert got[40:] == [None] * 40
    assert len(set(got[:40])) == 40  # each key its own sequence
    assert client.nc.stats["out_msgs"] - sent <= 3  # 80 lookups, not 80 round trips
    assert await index.lookup(stored[5]) == got[5]  # alone, later: still answered


async def test_one_process_folds_behind_the_writes_at_a_time(client: Client) -> None:
    """Two replicas writing at once would each fold the same records: the fold behind the
    writes is claimed, given back after, and a claim whose holder died lapses."""
    first = await ObservationRecords(client, events_stream(client)).open()
    second = await ObservationRecords(client, events_stream(client)).open()
    a, b = first.folder, second.folder
    now = await client.bus_time()
    held = await first.index.claim(a.owner, now, now + 10)
    assert held is not None
    assert await second.index.claim(b.owner, now, now + 10) is None
    assert await first.index.claim(a.owner, now, now + 10) is not None  # its own: renewed
    await _store(client)  # the stream
    assert await second.add(_obs(1))  # its fold waits while the other holds the claim
    await asyncio.sleep(0.6)
    assert b.folds == 0
    revision = await first.index.claim(a.owner, now, now + 10)
    assert revision is not None
    await first.index.unclaim(a.owner, revision)
    for _ in range(50):
        if b.folds:
            break
        await asyncio.sleep(0.1)
    assert b.folds >= 1
    # a holder that died: its claim lapses at `until`
    assert await first.index.claim(a.owner, now, now - 1) is not None
    later = await client.bus_time()
    assert await second.index.claim(b.owner, later, later + 10) is not None
    for r in (first, second):
        await r.close()
