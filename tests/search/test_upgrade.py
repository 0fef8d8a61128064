"""A store written by the layout before issue 25 (an event subject per observation, a 600 s
duplicate window, a format-3 search snapshot) opens with this code: every record is found,
search answers as an index built from scratch does, the stream gets the short window, and
a replay of an old observation is still a duplicate (no second event)."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import Client
from functions.kernel.ids import kv_key
from functions.kernel.records import (
    EVENTS_STREAM,
    EVENTS_SUBJECT,
    OBSERVATIONS_BUCKET,
    MemEvent,
    ObservationAdded,
)
from functions.memory.observe import build
from functions.memory.wire import ObserveIn
from functions.search import index_snapshot
from functions.search.feeder import SNAPSHOT_BUCKET
from functions.search.index import SearchIndex
from tests.fixtures import eventually
from tests.search.test_functions import ENV

TOPICS = ["rotate the signing keys", "flaky parser test", "docker deploy timeout",
          "webhook relay retries", "pool exhausted under load", "schema migration rollback"]  # fmt: skip


def _payload(i: int) -> dict[str, Any]:
    return {
        "hookType": "prompt_submit", "sessionId": f"s{i % 4}", "project": f"proj{i % 2}",
        "cwd": "/w", "timestamp": f"2026-10-{1 + i % 28:02d}T10:00:00.000Z",
        "data": {"prompt": f"{TOPICS[i % len(TOPICS)]} case {i} marker{i}"},
    }  # fmt: skip


def _format3(index: SearchIndex) -> bytes:
    new = msgspec.msgpack.decode(index_snapshot.dump(index))
    old = dict(new, format=3, meta=[msgspec.to_builtins(m) for m in index.meta])
    ents = index.graph.ents_of
    old["graph_ents"] = {d: list(ents.get(d)) for d in range(len(index.meta)) if ents.get(d)}
    for k in ("meta_buf", "meta_end", "meta_live", "graph_ents_flat", "graph_ents_end",
              "ids_keys", "ids_slots"):  # fmt: skip
        old.pop(k, None)
    old["postings"] = _lists(index)  # one entry per term and partition, as format 3 had
    old.pop("sealed")
    return msgspec.msgpack.encode(old)


def _lists(index: SearchIndex) -> dict[str, list[tuple[int, bytes, bytes]]]:
    sealed = index.bm25.sealed
    return {t: [(p, d.tobytes(), f.tobytes()) for p, d, f in sealed.lists(t)] for t in sealed.terms}


async def _old_layout(client: Client, n: int, snapshot_after: int) -> list[MemEvent]:
    """What main wrote: the record's KV create, then its event on its own subject
    (expected last subject sequence 0), in a MEM_EVENTS with a 600 s window; and a
    format-3 snapshot of the index covering the first `snapshot_after` events."""
    events = client.stream(EVENTS_STREAM, subjects=[f"{EVENTS_SUBJECT}.>"], duplicate_window=600.0)
    await events.ensure()
    kv = await client.bucket(OBSERVATIONS_BUCKET)
    written: list[MemEvent] = []
    index = SearchIndex()
    for i in range(n):
        _key, obs = build(msgspec.convert(_payload(i), ObserveIn), "")
        await kv.create(kv_key(obs.id), obs)
        ev = ObservationAdded(observation=obs)
        ack = await events.publish(
            f"{EVENTS_SUBJECT}.observation.{kv_key(obs.id)}", ev, expect_last_subject_seq=0
        )
        written.append(ev)
        if i < snapshot_after:
            index.apply(ev, seq=ack.seq)
    store = await client.objects(SNAPSHOT_BUCKET)
    await store.put("index", _format3(index))
    return written


async def test_a_store_of_the_previous_layout_opens_with_every_record_and_the_same_results(
    client: Client, spawn: Any
) -> None:
    written = await _old_layout(client, 30, snapshot_after=20)
    fresh = SearchIndex()
    for seq, ev in enumerate(written, 1):
        fresh.apply(ev, seq=seq)
    spawn("workers.memory", env=ENV)

    async def every_record_found() -> bool:
        for ev in written:
            assert isinstance(ev, ObservationAdded)
            o = ev.observation
            marker = o.narrative.split()[-1]
            out = await client.call("mem::smart-search", {"query": marker, "project": o.project})
            if o.id not in [r["obsId"] for r in out["results"]]:
                return False
        return True

    await eventually(every_record_found, timeout=15)
    for topic in TOPICS:
        for project in ("proj0", "proj1"):
            out = await client.call(
                "mem::smart-search", {"query": topic, "project": project, "limit": 20}
            )
            want = fresh.search(topic, project=project, limit=20)
            assert [(r["obsId"], r["score"]) for r in out["results"]] == [
                (h.id, h.score) for h in want
            ], (topic, project)
    info = await client.nc.jetstream().stream_info(EVENTS_STREAM)
    assert info.config.duplicate_window == 120.0

    # A hook resending an observation the old layout stored: a duplicate, no second event.
    again = await client.call("mem::observe", _payload(3))
    assert again["status"] == "duplicate"
    assert (await client.nc.jetstream().stream_info(EVENTS_STREAM)).state.messages == 30
    new = await client.call("mem::observe", _payload(100))
    assert new["status"] == "accepted"
    await eventually(lambda: _found(client, "marker100", "proj0", new["observationId"]), timeout=15)


async def _found(client: Client, query: str, project: str, obs_id: str) -> bool:
    out = await client.call("mem::smart-search", {"query": query, "project": project})
    return obs_id in [r["obsId"] for r in out["results"]]
