"""The feeder's snapshots in the object store: stored compressed (a restart reads a blob a
quarter of the size), restored by the next replica to the same index; a snapshot an older
version stored uncompressed, or compressed in one piece, still restores."""

from __future__ import annotations

import zlib
from pathlib import Path

from engine import Client
from functions.kernel.records import Observation
from functions.kernel.store import MemoryStore
from functions.search import index_snapshot
from functions.search.feeder import PACKED, SNAPSHOT_BUCKET, SNAPSHOT_SPACING, IndexHolder
from tests.fixtures import add_observations


def _obs(i: int) -> Observation:
    return Observation(
        id=f"obs_snap{i:05d}", session_id=f"s{i % 5}", project="alpha",
        hook_type="post_tool_use", timestamp="2026-12-01T10:00:00.000Z",
        title=f"rotate key {i}", narrative=f"rotate the signing key {i} of service {i % 13}",
    )  # fmt: skip


def _answers(holder: IndexHolder) -> list[list[tuple[str, float]]]:
    return [
        [(h.id, h.score) for h in holder.index.search(q, project="alpha", limit=10)]
        for q in ("rotate key", "signing service 7", "key 42")
    ]


async def test_a_snapshot_is_stored_compressed_and_restores_the_same_index(
    client: Client,
) -> None:
    store = await MemoryStore(client).open()
    await add_observations(store, map(_obs, range(400)))
    first = IndexHolder(load_embedder=False, snapshot_every=3600)
    await first.start(client)
    assert await first.caught_up(timeout=10)
    expected = _answers(first)
    await first.stop(client)  # saves

    objects = await client.objects(SNAPSHOT_BUCKET)
    blob = await objects.get(first.snapshot_name)
    assert blob is not None and blob.startswith(index_snapshot.STREAMED)
    assert len(blob) < len(index_snapshot.dump(first.index)) / 2
    # the next periodic snapshot is spaced by what this one took
    assert first.snapshot_took > 0
    first.snapshot_every = 0.001
    assert first.snapshot_wait() == SNAPSHOT_SPACING * first.snapshot_took

    again = IndexHolder(load_embedder=False, snapshot_every=3600)
    await again.start(client)
    try:
        assert again.snapshot_seq == first.index.seq and len(again.index) == 400
        assert _answers(again) == expected and any(expected)
    finally:
        await again.stop(client)


async def test_an_uncompressed_snapshot_of_an_older_version_still_restores(
    client: Client,
) -> None:
    store = await MemoryStore(client).open()
    await add_observations(store, map(_obs, range(50)))
    first = IndexHolder(load_embedder=False, snapshot_every=3600)
    await first.start(client)
    assert await first.caught_up(timeout=10)
    expected = _answers(first)
    raw = index_snapshot.dump(first.index)
    await first.stop(client)
    objects = await client.objects(SNAPSHOT_BUCKET)
    # as older feeders stored it: plain msgpack, then zlib-compressed in one piece
    for stored in (raw, PACKED + zlib.compress(raw, 1)):
        await objects.put(first.snapshot_name, stored)
        again = IndexHolder(load_embedder=False, snapshot_every=3600)
        await again.start(client)
        try:
            assert again.snapshot_seq == first.index.seq  # restored, not rebuilt
            assert _answers(again) == expected
        finally:
            await again.stop(client)


async def test_a_replica_with_a_local_dir_stops_to_its_file_and_restarts_from_it(
    client: Client, tmp_path: Path
) -> None:
    store = await MemoryStore(client).open()
    await add_observations(store, map(_obs, range(300)))
    first = IndexHolder(load_embedder=False, snapshot_every=3600, local_dir=tmp_path)
    await first.start(client)
    assert await first.caught_up(timeout=10)
    expected = _answers(first)
    await first.save()  # periodic: the file and the object store
    objects = await client.objects(SNAPSHOT_BUCKET)
    in_store = await objects.get(first.snapshot_name)
    assert in_store is not None and in_store.startswith(index_snapshot.STREAMED)
    await add_observations(store, map(_obs, range(300, 340)))
    assert await first.caught_up(timeout=10)
    expected = _answers(first)
    await first.stop(client)  # final: the file alone (a stop does not wait for an upload)
    local = tmp_path / f"{first.snapshot_name}.snap"
    assert local.read_bytes().startswith(index_snapshot.PLAIN)
    assert await objects.get(first.snapshot_name) == in_store

    again = IndexHolder(load_embedder=False, snapshot_every=3600, local_dir=tmp_path)
    await again.start(client)
    try:
        assert again.snapshot_seq == first.index.seq and len(again.index) == 340
        assert _answers(again) == expected and any(expected)
    finally:
        await again.stop(client)

    # a file that cannot be read is passed over: the object store's older snapshot, then
    # the tail from the stream
    local.write_bytes(index_snapshot.PLAIN + b"\x00" * 64)
    third = IndexHolder(load_embedder=False, snapshot_every=3600, local_dir=tmp_path)
    await third.start(client)
    try:
        assert third.snapshot_seq == 300
        assert await third.caught_up(timeout=10)
        assert len(third.index) == 340 and _answers(third) == expected
    finally:
        await third.stop(client)
