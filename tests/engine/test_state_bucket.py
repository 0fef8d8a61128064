"""Bucket's bucket-wide operations against a real JetStream: paged scans, purges without
tombstones, stored keys and info, create that never rewrites a deleted key, presence, and
the watch with its end-of-snapshot marker and its end when the connection closes."""

from __future__ import annotations

import asyncio
import contextlib

import msgspec
import pytest

from engine import Change, Client, SnapshotEnd, connect
from engine.server import NatsServer


class Doc(msgspec.Struct):
    n: int


async def test_a_scan_cut_short_by_an_outage_raises_instead_of_ending(
    nats_server: NatsServer,
) -> None:
    # A job that took a scan cut short for the whole bucket would act on part of it (a
    # summary missing records, a forget pass that skipped some): the scan raises.
    from engine import BusError

    nc = await connect(nats_server.url)
    try:
        st = await Client(nc).bucket("scan_cut")
        await asyncio.gather(*(st.put(f"d.{i:02d}", Doc(i)) for i in range(40)))
        seen = []
        with pytest.raises(BusError):
            async for k, _ in st.scan("d.>", Doc, page=10, timeout=0.5):
                seen.append(k)
                if len(seen) == 10:
                    nats_server.kill()
        assert len(seen) == 10
    finally:
        with contextlib.suppress(ConnectionError):  # its server is gone: nothing to flush
            await nc.close()
        nats_server.start()


async def test_scan_reads_every_live_key_over_several_pages(client: Client) -> None:
    st = await client.bucket("scan1")
    await asyncio.gather(*(st.put(f"d.{i:02d}", Doc(i)) for i in range(30)))
    await st.put("other.1", Doc(99))
    await st.delete("d.07")
    await st.put("d.13", b"not json")  # unreadable: skipped, the scan goes on
    got = dict([kv async for kv in st.scan("d.>", Doc, page=4)])
    assert sorted(got) == [f"d.{i:02d}" for i in range(30) if i not in (7, 13)]
    assert got["d.05"] == Doc(5)
    both = [k async for k, _ in st.scan(["d.01", "other.>"], Doc, page=3)]
    assert sorted(both) == ["d.01", "other.1"]
    assert [kv async for kv in st.scan("none.>", Doc)] == []
    assert [kv async for kv in st.scan([], Doc)] == []
    # each scan's consumer is gone with it, not left to expire
    assert (await client.connection.js.stream_info("KV_scan1")).state.consumer_count == 0


async def test_scan_of_a_bucket_with_history_gives_each_keys_last_value(client: Client) -> None:
    st = await client.bucket("scan2", history=5)
    for n in range(4):
        await st.put("k.a", Doc(n))
    await st.put("k.b", Doc(10))
    await st.put("k.gone", Doc(1))
    await st.delete("k.gone")
    assert dict([kv async for kv in st.scan("k.>", Doc, page=2)]) == {
        "k.a": Doc(3),
        "k.b": Doc(10),
    }


async def test_scan_patterns_list_is_one_pass_with_several_filters(client: Client) -> None:
    st = await client.bucket("scan3")
    for k in ("n.1", "n.2", "e.1.2", "m.1"):
        await st.put(k, Doc(1))
    keys = sorted([k async for k, _ in st.scan(["n.>", "e.>"], Doc, page=1)])
    assert keys == ["e.1.2", "n.1", "n.2"]


async def test_purge_removes_keys_with_no_tombstone(client: Client) -> None:
    st = await client.bucket("purge1")
    for k in ("stage.1.a", "stage.1.b", "stage.2.a", "keep"):
        await st.put(k, Doc(1))
    await st.delete("gone")  # a tombstone on a key never written
    assert sorted(await st.stored_keys()) == ["gone", "keep", "stage.1.a", "stage.1.b", "stage.2.a"]
    assert await st.purge("stage.>") == 3
    assert sorted(await st.stored_keys()) == ["gone", "keep"]
    assert await st.presence("stage.1.a") == "absent"  # purged: no tombstone left
    assert await st.presence("gone") == "deleted"
    assert await st.presence("keep") == "present"
    info = await st.info()
    assert info.messages == 2 and info.subjects == 2
    assert await st.purge("nothing.>") == 0


async def test_create_over_tombstone_false_never_rewrites_a_deleted_key(client: Client) -> None:
    st = await client.bucket("create1")
    rev = await st.create("a", Doc(1), over_tombstone=False)
    assert rev is not None and await st.get("a", Doc) == Doc(1)
    assert await st.create("a", Doc(2), over_tombstone=False) is None
    await st.delete("a")
    assert await st.create("a", Doc(3), over_tombstone=False) is None  # stays forgotten
    assert await st.get("a", Doc) is None
    assert await st.create("a", Doc(4)) is not None  # the default takes a deleted key
    assert await st.get("a", Doc) == Doc(4)


async def test_changes_give_the_snapshot_then_its_end_then_each_change(client: Client) -> None:
    st = await client.bucket("watch1")
    for i in range(300):  # more than the watch's queue holds
        await st.put(f"k.{i}", Doc(i))
    await st.delete("k.5")
    got: list[Change | SnapshotEnd] = []
    async with await st.changes("k.>") as watch:
        async for ch in watch:
            got.append(ch)
            if isinstance(ch, SnapshotEnd):
                await st.put("k.new", Doc(1))
                await st.delete("k.1")
            if len(got) == 303:
                break
    *snapshot, end, put, delete = got
    assert isinstance(end, SnapshotEnd)
    assert len(snapshot) == 300 and all(isinstance(c, Change) for c in snapshot)
    deleted = [c for c in snapshot if isinstance(c, Change) and c.op == "delete"]
    assert [(c.key, c.value) for c in deleted] == [("k.5", None)]
    assert isinstance(put, Change) and (put.key, put.op) == ("k.new", "put")
    assert msgspec.json.decode(put.value or b"", type=Doc) == Doc(1)
    assert isinstance(delete, Change) and (delete.key, delete.op) == ("k.1", "delete")
    assert delete.revision > put.revision


async def test_the_snapshot_end_comes_at_once_for_an_empty_bucket(client: Client) -> None:
    st = await client.bucket("watch2")
    async with await st.changes() as watch:
        first = await asyncio.wait_for(anext(watch), 5)
        assert isinstance(first, SnapshotEnd)
        await st.put("x", 1)
        second = await asyncio.wait_for(anext(watch), 5)
        assert isinstance(second, Change) and second.key == "x"


async def test_a_watch_ends_when_its_connection_closes(nats_server: NatsServer) -> None:
    nc = await connect(nats_server.url)
    st = await Client(nc).bucket("watch3")
    await st.put("a", 1)
    watch = await st.changes()
    seen: list[object] = []

    async def consume() -> None:
        async for ch in watch:
            seen.append(ch)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.2)
    await nc.close()
    await asyncio.wait_for(task, 5)  # ended, no exception
    assert isinstance(seen[0], Change) and isinstance(seen[1], SnapshotEnd)


async def test_keys_and_watch_keep_working_on_the_new_watch(client: Client) -> None:
    st = await client.bucket("watch4")
    await asyncio.gather(*(st.put(f"p.{i}", i) for i in range(50)))
    await st.delete("p.3")
    for _ in range(5):
        assert len(await st.keys("p.")) == 49
    changes = st.watch("p.>", include_existing=True)
    first = await asyncio.wait_for(anext(changes), 5)
    assert first.op == "put"
    await changes.aclose()


async def test_bucket_operations_need_the_connection(client: Client) -> None:
    st = await client.bucket("bare")
    from engine import Bucket

    bare = Bucket(st.kv, st.bucket)  # made by hand: per-key operations only
    await bare.put("k", 1)
    assert await bare.get("k") == 1
    with pytest.raises(RuntimeError, match=r"Client\.bucket\(\)"):
        await bare.info()
    joined = Bucket(st.kv, st.bucket, client.connection)
    assert (await joined.info()).messages == 1
