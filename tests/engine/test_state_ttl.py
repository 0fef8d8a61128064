"""Per-key TTL on KV (nats-server 2.11+ `Nats-TTL`): a key written with `ttl=` is removed by
JetStream itself, a CAS write renews it, and in a bucket with `marker_ttl` the expiry is a
deletion that watchers see and that Bucket reads as one."""

from __future__ import annotations

import asyncio
import time

import msgspec
import pytest

from engine import CasConflict, Client, SnapshotEnd, _kv
from tests.fixtures import eventually


class Doc(msgspec.Struct):
    n: int


@pytest.mark.unit
def test_ttl_header_rounds_up_to_whole_seconds() -> None:
    assert [_kv.ttl_header(t) for t in (0.2, 1.0, 1.5, 600)] == ["1", "1", "2", "600"]
    with pytest.raises(ValueError):
        _kv.ttl_header(0)


async def test_a_key_created_with_a_ttl_is_removed_by_jetstream(client: Client) -> None:
    st = await client.bucket("ttl1")
    t0 = time.monotonic()
    assert await st.create("lease", Doc(1), ttl=1) is not None
    assert await st.create("lease", Doc(2), ttl=1) is None  # held
    assert await st.get("lease", Doc) == Doc(1)

    async def gone() -> bool:
        return await st.get("lease", Doc) is None

    await eventually(gone, timeout=5, what="the key's TTL to run out")
    assert time.monotonic() - t0 >= 0.9
    assert await st.create("lease", Doc(3), ttl=1) is not None  # free again


async def test_expiry_in_a_marker_bucket_reads_as_a_deletion(client: Client) -> None:
    st = await client.bucket("ttl2", marker_ttl=30)
    rev = await st.create("lease", Doc(1), ttl=1)
    assert rev is not None
    changes = await st.changes(">")
    seen: list[tuple[str, str]] = []

    async def follow() -> None:
        async for ch in changes:
            if not isinstance(ch, SnapshotEnd):
                seen.append((ch.key, ch.op))

    task = asyncio.create_task(follow())
    try:

        async def deleted() -> bool:
            return ("lease", "delete") in seen

        await eventually(deleted, timeout=5, what="the expiry marker")
        # The marker holds the subject: it reads as deleted, never as a value...
        assert await st.get("lease", Doc) is None
        assert await st.entry("lease", Doc) is None
        assert await st.presence("lease") == "deleted"
        assert "lease" not in await st.keys()
        # ...and a create (or a CAS from revision 0) writes over it, once.
        results = await asyncio.gather(*(st.create("lease", Doc(i), ttl=5) for i in range(5)))
        assert sum(r is not None for r in results) == 1
        await st.delete("lease")
        await st.compare_and_set("lease", Doc(9), 0)
        assert await st.get("lease", Doc) == Doc(9)
    finally:
        await changes.stop()
        task.cancel()


async def test_a_cas_write_with_a_ttl_renews_the_key(client: Client) -> None:
    st = await client.bucket("ttl3", marker_ttl=30)
    rev = await st.create("lease", Doc(1), ttl=1)
    assert rev is not None
    rev2 = await st.compare_and_set("lease", Doc(2), rev, ttl=3)
    with pytest.raises(CasConflict):
        await st.compare_and_set("lease", Doc(3), rev, ttl=3)  # stale revision
    await asyncio.sleep(1.6)
    assert await st.get("lease", Doc) == Doc(2)  # the first TTL no longer applies

    async def gone() -> bool:
        return await st.get("lease", Doc) is None

    await eventually(gone, timeout=5, what="the renewed TTL to run out")
    with pytest.raises(CasConflict):
        await st.compare_and_set("lease", Doc(4), rev2, ttl=3)  # expired: nothing to renew


async def test_a_put_with_a_ttl_expires(client: Client) -> None:
    st = await client.bucket("ttl4")
    await st.put("signal", Doc(1), ttl=1)
    await st.put("kept", Doc(2))

    async def gone() -> bool:
        return await st.get("signal", Doc) is None

    await eventually(gone, timeout=5, what="the put's TTL to run out")
    assert await st.get("kept", Doc) == Doc(2)


async def test_delete_at_a_revision_refuses_a_stale_one(client: Client) -> None:
    st = await client.bucket("ttl5")
    rev = await st.put("k", Doc(1))
    rev2 = await st.put("k", Doc(2))
    with pytest.raises(CasConflict):
        await st.delete("k", revision=rev)
    assert await st.get("k", Doc) == Doc(2)
    await st.delete("k", revision=rev2)
    assert await st.presence("k") == "deleted"
