"""Disk compression of what grows with use (docs/PERFORMANCE.md, "Disk"), on a real
nats-server: a bucket declared with `compression="s2"` is made compressed (nats-py cannot
say so at creation) and an old uncompressed one is brought to it in place, its records
still read back; by default MEM_EVENTS (which holds the observations) and the record
buckets are S2 (`events` keeps the buckets plain); and compressed blocks take fewer bytes on disk than the same records
uncompressed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine import Bucket, Client, connect
from engine._jetstream import raw_stream_info
from engine.server import NatsServer
from functions.kernel.records import EVENTS_STREAM, MEMORIES_BUCKET
from functions.kernel.store import MemoryStore


async def read(st: Bucket, key: str) -> Any:
    return await st.get(key)


async def compression(client: Client, stream: str) -> str:
    return str((await raw_stream_info(client.connection, stream))[0].get("compression", "none"))


async def test_a_new_bucket_is_made_compressed_and_an_old_one_is_brought_to_it(
    nats_server: NatsServer, client: Client
) -> None:
    fresh = await client.bucket("mem_new", compression="s2")
    await fresh.put("k", {"v": 1})
    assert await compression(client, "KV_mem_new") == "s2"

    old = await client.bucket("mem_old")
    await old.put("a", {"text": "written before the upgrade"})
    assert await compression(client, "KV_mem_old") == "none"
    later = Client(await connect(nats_server.url))
    try:
        upgraded = await later.bucket("mem_old", compression="s2")
        assert await compression(later, "KV_mem_old") == "s2"
        assert await read(upgraded, "a") == {"text": "written before the upgrade"}
        await upgraded.put("b", {"text": "after"})
        assert await read(upgraded, "b") == {"text": "after"}
    finally:
        await later.nc.close()


async def test_events_compresses_the_log_and_leaves_records_read_by_key_plain(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`events`: MEM_EVENTS (read in order) is S2 and the record buckets (read by key,
    where nats-server decompresses a whole block per read) are plain."""
    monkeypatch.setenv("AGENTMEMORY_STORE_COMPRESSION", "events")
    await MemoryStore(client).open()
    assert await compression(client, EVENTS_STREAM) == "s2"
    assert await compression(client, f"KV_{MEMORIES_BUCKET}") == "none"


@pytest.mark.parametrize("value", ["all", "s2", ""])
async def test_all_compresses_the_record_buckets_too(
    client: Client, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    if value:
        monkeypatch.setenv("AGENTMEMORY_STORE_COMPRESSION", value)
    else:  # the default
        monkeypatch.delenv("AGENTMEMORY_STORE_COMPRESSION", raising=False)
    await MemoryStore(client).open()
    assert await compression(client, EVENTS_STREAM) == "s2"
    assert await compression(client, f"KV_{MEMORIES_BUCKET}") == "s2"


N_RECORDS = 5_000
"""~10 MB: more than one block of a bucket's stream (nats-server compresses a block once it
is full; the one being written is plain)."""

RECORD = {
    "title": "Edited src/module.py",
    "narrative": "Ran the test suite after changing the retry policy; " * 36,
    "files": ["src/module.py"],
}


def _blocks(store_dir: Path, stream: str) -> dict[str, int]:
    found = list(store_dir.rglob(f"streams/{stream}"))
    assert found, f"no directory for {stream} under {store_dir}"
    return {p.name: p.stat().st_size for p in found[0].rglob("*.blk")}


async def _fill(st: Bucket, prefix: str) -> None:
    for start in range(0, N_RECORDS, 250):
        await asyncio.gather(
            *(st.put(f"{prefix}{i:06d}", {"id": i, **RECORD}) for i in range(start, start + 250))
        )


async def test_a_new_compressed_bucket_takes_fewer_bytes_on_disk(
    nats_server: NatsServer, client: Client
) -> None:
    plain = await client.bucket("mem_plain")
    packed = await client.bucket("mem_packed", compression="s2")
    await _fill(plain, "obs_")
    await _fill(packed, "obs_")
    assert (await read(packed, "obs_000007"))["id"] == 7
    store = Path(nats_server.store_dir)
    plain_bytes = sum(_blocks(store, "KV_mem_plain").values())
    packed_bytes = sum(_blocks(store, "KV_mem_packed").values())
    assert packed_bytes < plain_bytes * 0.5, (plain_bytes, packed_bytes)


async def test_an_upgraded_bucket_compresses_what_it_writes_after_a_restart(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    first = Client(await connect(nats_server.url))
    await _fill(await first.bucket("mem_up"), "a")
    await first.bucket("mem_up", compression="s2")  # the upgrade: an update in place
    await first.nc.close()
    before = _blocks(Path(nats_server.store_dir), "KV_mem_up")
    nats_server.kill()
    nats_server.start()
    again = Client(await connect(nats_server.url))
    try:
        st = await again.bucket("mem_up", compression="s2")
        await _fill(st, "b")
        assert (await read(st, "a000003"))["id"] == 3  # written before, read after
        after = _blocks(Path(nats_server.store_dir), "KV_mem_up")
    finally:
        await again.nc.close()
    new = {name: size for name, size in after.items() if name not in before}
    full = max(before.values())
    assert len(new) >= 2, (before, after)
    # every new block but the one still being written is a fraction of a plain full one
    assert sorted(new.values())[0] < full * 0.5, (before, new)


async def test_the_setting_turns_it_off_and_a_bad_value_names_it(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTMEMORY_STORE_COMPRESSION", "none")
    await MemoryStore(client).open()
    assert await compression(client, EVENTS_STREAM) == "none"
    assert await compression(client, f"KV_{MEMORIES_BUCKET}") == "none"
    monkeypatch.setenv("AGENTMEMORY_STORE_COMPRESSION", "zstd")
    with pytest.raises(ValueError, match="AGENTMEMORY_STORE_COMPRESSION"):
        await MemoryStore(client).open()


async def test_a_data_dir_with_plain_records_opens_with_the_new_default(
    nats_server: NatsServer, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data dir written while `events` was the default (the record buckets plain) is
    brought to today's default in place: the buckets turn S2, and every record, in plain
    and compressed blocks alike, is read back after a restart."""
    monkeypatch.setenv("AGENTMEMORY_STORE_COMPRESSION", "events")
    old = await MemoryStore(client).open()
    await _fill(old.memories, "a")
    nats_server.kill()
    nats_server.start()
    monkeypatch.delenv("AGENTMEMORY_STORE_COMPRESSION")
    again = Client(await connect(nats_server.url))
    try:
        st = await MemoryStore(again).open()
        assert await compression(again, f"KV_{MEMORIES_BUCKET}") == "s2"
        assert await compression(again, EVENTS_STREAM) == "s2"
        await _fill(st.memories, "b")
        for key in ("a000000", "a004999", "b000000", "b004999"):
            assert (await read(st.memories, key))["id"] == int(key[1:])
    finally:
        await again.nc.close()
