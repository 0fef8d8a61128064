"""The records a hit shows come from the search replica's own file (functions/search/shown.py),
not from a get by key on the observations bucket (which costs nats-server a block load):
the same records, across a crash and a restart; KV again when the file cannot serve."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import msgspec
import pytest

from engine import Client
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.records import (
    Memory,
    MemoryAdded,
    Observation,
    ObservationAdded,
    RecordsRemoved,
)
from functions.kernel.store import events_stream
from functions.search import index_snapshot
from functions.search.index import SearchIndex
from functions.search.shown import HEADER, ShownRecords
from tests.fixtures import eventually


def _obs(i: int, *, revision: int = 0, narrative: str = "") -> Observation:
    return Observation(
        id=f"obs_shown{i:04d}", session_id=f"s{i % 3}", project="alpha",
        hook_type="post_tool_use", timestamp="2026-12-01T10:00:00.000Z",
        title=f"rotate key {i}", narrative=narrative or f"rotate the signing key {i}",
        facts=[f"fact {i}"], revision=revision,
    )  # fmt: skip


def _json(o: Observation) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(o))
    return out


# ---- the file ----------------------------------------------------------------------------
@pytest.mark.unit
def test_records_read_back_and_slots_without_one_hold_nothing(tmp_path: Path) -> None:
    f = ShownRecords(tmp_path / "shown")
    f.open(0)
    f.put(0, b'{"a":1}')
    f.put(2, b'{"b":"' + b"x" * 5000 + b'"}')
    assert f.get(0) == b'{"a":1}'
    assert f.get(1) is None and f.get(3) is None and f.get(-1) is None
    assert f.get(2) == b'{"b":"' + b"x" * 5000 + b'"}'
    assert (tmp_path / "shown").stat().st_size < HEADER + 200  # compressed
    f.put(1, b"late")  # a slot behind the end is never written over
    assert f.get(1) is None


@pytest.mark.unit
def test_a_restore_keeps_what_the_snapshot_holds_and_cuts_the_rest(tmp_path: Path) -> None:
    f = ShownRecords(tmp_path / "shown")
    f.open(0)
    for n in range(3):
        f.put(n, f'{{"n":{n}}}'.encode())
    taken = f.dump()
    f.put(3, b'{"n":3}')  # after the snapshot: comes again with the replayed events
    f.close()
    again = ShownRecords(tmp_path / "shown")
    again.open(3, *taken)
    assert [again.get(n) for n in range(4)] == [b'{"n":0}', b'{"n":1}', b'{"n":2}', None]
    assert (tmp_path / "shown").stat().st_size == HEADER + again.held
    assert again.first == 0
    again.put(3, b'{"n":"3 again"}')
    assert again.get(3) == b'{"n":"3 again"}'


@pytest.mark.unit
def test_a_file_that_does_not_match_the_snapshot_starts_again(tmp_path: Path) -> None:
    f = ShownRecords(tmp_path / "shown")
    f.open(0)
    f.put(0, b'{"n":0}')
    file_id, first, ends = f.dump()
    f.close()
    other = ShownRecords(tmp_path / "shown")
    # another replica's snapshot (another file id), then one longer than the file
    other.open(5, "6f0d1c8e-0000-4000-8000-000000000000", first, ends)
    assert other.get(0) is None and other.first == 5 and other.file_id != file_id
    other.put(5, b'{"n":5}')
    taken = other.dump()
    other.close()
    cut = ShownRecords(tmp_path / "shown")
    cut.open(6, taken[0], taken[1], taken[2] + taken[2])  # ends past the file's size
    assert cut.get(5) is None and cut.first == 6
    cut.close()
    garbled = ShownRecords(tmp_path / "shown")
    garbled.open(7, "not-a-uuid", 0, b"")  # a damaged snapshot field: a new file, no error
    assert garbled.usable and garbled.first == 7


@pytest.mark.unit
def test_a_second_owner_of_the_file_reads_nothing_from_it(tmp_path: Path) -> None:
    first = ShownRecords(tmp_path / "shown")
    first.open(0)
    first.put(0, b'{"n":0}')
    second = ShownRecords(tmp_path / "shown")
    second.open(0)
    assert second.disabled and not second.usable and second.get(0) is None
    second.put(0, b'{"n":"overwritten"}')
    assert first.get(0) == b'{"n":0}'


# ---- the index ---------------------------------------------------------------------------
@pytest.mark.unit
def test_the_index_keeps_the_record_of_each_observation_it_holds(tmp_path: Path) -> None:
    index = SearchIndex()
    index.shown = ShownRecords(tmp_path / "shown")
    index.shown.open(0)
    for i in range(5):
        index.apply(ObservationAdded(observation=_obs(i)), seq=i + 1)
    index.apply(MemoryAdded(memory=Memory(id="mem_1", content="a memory", title="m")), seq=6)
    revised = _obs(2, revision=1, narrative="the model's rewrite of record two")
    index.apply(ObservationAdded(observation=revised), seq=7)
    index.apply(RecordsRemoved(ids=[_obs(4).id]), seq=8)

    def shown(i: str) -> Any:
        got = index.shown_record(i)
        return msgspec.json.decode(got) if got is not None else None

    assert [shown(_obs(i).id) for i in (0, 1, 3)] == [_json(_obs(i)) for i in (0, 1, 3)]
    assert shown(_obs(2).id) == _json(revised)
    assert shown(_obs(4).id) is None and shown("mem_1") is None
    assert index.shown.dead > 0  # the first copy of record two and record four


@pytest.mark.unit
def test_a_snapshot_finds_the_records_again_and_the_replay_adds_the_rest(
    tmp_path: Path,
) -> None:
    index = SearchIndex()
    index.shown = ShownRecords(tmp_path / "shown")
    index.shown.open(0)
    for i in range(10):
        index.apply(ObservationAdded(observation=_obs(i)), seq=i + 1)
    blob = index_snapshot.dump(index)
    for i in range(10, 15):
        index.apply(ObservationAdded(observation=_obs(i)), seq=i + 1)
    index.shown.close()  # the process died

    fresh = SearchIndex()
    fresh.shown = ShownRecords(tmp_path / "shown")
    index_snapshot.load(blob, fresh)
    assert all(fresh.shown_record(_obs(i).id) == msgspec.json.encode(_obs(i)) for i in range(10))
    for i in range(10, 15):
        fresh.apply(ObservationAdded(observation=_obs(i)), seq=i + 1)
    assert all(fresh.shown_record(_obs(i).id) == msgspec.json.encode(_obs(i)) for i in range(15))
    # an index without the file (the older layout, or another host) loads the same snapshot
    plain = index_snapshot.load(blob, SearchIndex())
    assert len(plain) == 10 and plain.shown_record(_obs(0).id) is None


# ---- the search worker -------------------------------------------------------------------
GETS = (
    "$JS.API.DIRECT.GET.KV_mem_observation_index",
    "$JS.API.DIRECT.GET.KV_mem_observation_index.>",
    "$JS.API.STREAM.MSG.GET.KV_mem_observation_index",
)
"""The requests a get by id of an observation starts with (its index entry, direct or through
the API); its record is then read from MEM_EVENTS by sequence."""


async def _sniff(client: Client) -> tuple[list[str], Any]:
    seen: list[str] = []

    async def got(msg: Any) -> None:
        seen.append(msg.subject)

    subs = [await client.nc.subscribe(s, cb=got) for s in GETS]
    return seen, subs


async def _search(client: Client) -> list[dict[str, Any]]:
    out = await client.call(
        "mem::search", {"query": "handshake timeout", "project": "alpha", "limit": 8}, timeout=10
    )
    return list(out["results"])


async def test_the_search_worker_shows_hits_from_its_file_across_a_crash(
    client: Client, spawn: Any, tmp_path: Path
) -> None:
    env = {"SEARCH_INDEX_DIR": str(tmp_path / "search"), "SEARCH_SNAPSHOT_SECONDS": "0.5",
           "EMBEDDING_PROVIDER": "none", "ENGINE_WORKER_NAME": "search"}  # fmt: skip
    spawn("workers.memory", env={"AGENTMEMORY_SEARCH": "off", "EMBEDDING_PROVIDER": "none"})
    search = spawn("workers.search", env=env)
    ids = []
    for i in range(12):
        out = await client.call("mem::observe", {
            "hookType": "post_tool_use", "sessionId": f"s{i % 2}", "project": "alpha",
            "timestamp": "2026-12-01T10:00:00Z",
            "data": {"tool_name": "Bash", "tool_input": {"command": f"curl api {i}"},
                     "tool_output": f"TLS handshake timeout after {i} seconds on api {i}"},
        }, timeout=10)  # fmt: skip
        ids.append(out["observationId"])

    async def all_found() -> list[dict[str, Any]]:
        hits = await _search(client)
        return hits if len(hits) == 8 else []

    await eventually(all_found, timeout=20, what="the observations searchable")
    records = await ObservationRecords(client, events_stream(client)).open()
    stored: dict[str, Any] = {}
    for i in ids:
        stored[i] = msgspec.to_builtins(await records.get(i))

    async def folded() -> bool:  # the memory worker's index reads are done before the sniff
        mark, _ = await records.index.watermark()
        return mark.seq >= (await client.stream("MEM_EVENTS").info()).last_seq

    await eventually(folded, timeout=10, what="the observation index folded")
    status = await client.call("mem::search-status", {}, timeout=10)
    assert status["shownRecords"] >= 12 and status["shownFile"].endswith("index.shown.search-0")
    seen, subs = await _sniff(client)
    hits = await _search(client)
    assert hits and all(h["record"] == stored[h["id"]] for h in hits)
    await client.nc.flush()
    assert seen == []  # no get by key for a hit

    # a crash after a snapshot, then more writes: the restart finds the file again
    async def snapped() -> bool:
        return (tmp_path / "search" / "index.snap").exists()

    await eventually(snapped, timeout=10, what="a snapshot")
    await asyncio.sleep(1.0)
    os.kill(search.pid, signal.SIGKILL)
    search.wait()
    search = spawn("workers.search", env=env)
    hits = await eventually(all_found, timeout=20, what="the restarted worker answering")
    assert all(h["record"] == stored[h["id"]] for h in hits)
    await client.nc.flush()
    assert seen == []

    # its file lost (while it was down), hits read their records from the store: the same
    os.kill(search.pid, signal.SIGKILL)
    search.wait()
    for f in (tmp_path / "search").glob("index.shown.*"):
        f.unlink()
    spawn("workers.search", env=env)
    hits = await eventually(all_found, timeout=20, what="the worker without its file")
    assert all(h["record"] == stored[h["id"]] for h in hits)
    await client.nc.flush()
    assert len(seen) >= len(hits)
    for sub in subs:
        await sub.unsubscribe()


@pytest.mark.unit
async def test_a_file_mostly_dead_is_rewritten_with_the_live_records(tmp_path: Path) -> None:
    index = SearchIndex()
    index.shown = ShownRecords(tmp_path / "shown")
    index.shown.open(0)
    index.shown.compact_min = 1000
    for i in range(60):
        index.apply(ObservationAdded(observation=_obs(i)), seq=i + 1)
    assert not index.shown.wasteful()
    for i in range(40):  # the model revises some, others are forgotten
        index.apply(ObservationAdded(observation=_obs(i, revision=1, narrative=f"r{i}")))
    index.apply(RecordsRemoved(ids=[_obs(i).id for i in range(50, 60)]))
    want = {_obs(i).id: index.shown_record(_obs(i).id) for i in range(50)}
    size, old_id = (tmp_path / "shown").stat().st_size, index.shown.file_id
    assert index.shown.wasteful()

    async def later() -> None:  # an observation arriving while the copy runs
        index.apply(ObservationAdded(observation=_obs(99)))

    await asyncio.gather(index.shown.compact(lambda n: bool(index.alive[n])), later())
    assert (tmp_path / "shown").stat().st_size < size * 0.6
    assert index.shown.file_id != old_id and not index.shown.wasteful()
    assert {i: index.shown_record(i) for i in want} == want and all(want.values())
    assert index.shown_record(_obs(99).id) == msgspec.json.encode(_obs(99))
    assert index.shown_record(_obs(55).id) is None
    # a snapshot after the rewrite finds the new file again
    blob = index_snapshot.dump(index)
    index.shown.close()
    fresh = SearchIndex()
    fresh.shown = ShownRecords(tmp_path / "shown")
    index_snapshot.load(blob, fresh)
    assert {i: fresh.shown_record(i) for i in want} == want
    assert not list(tmp_path.glob(".*.tmp"))
