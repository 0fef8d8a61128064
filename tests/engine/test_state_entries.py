"""`Bucket.entries`: many keys read in a few batched direct gets, each answer what `entry`
gives for that key (values, revisions, tombstones, expiry markers, missing and invalid
keys), on a bucket one server holds; an old bucket is brought to direct gets when opened,
and a refused batch falls back to key-by-key reads."""

from __future__ import annotations

import logging

import msgspec
import pytest
from nats.js.api import KeyValueConfig

from engine import Client
from tests.fixtures import eventually


class Doc(msgspec.Struct):
    n: int


async def test_entries_answer_like_entry_for_every_kind_of_key(client: Client) -> None:
    st = await client.bucket("ent1", marker_ttl=30)
    assert st._direct
    keys = [f"k.{i}" for i in range(600)]  # three batches of DIRECT_BATCH
    for i, k in enumerate(keys):
        await st.put(k, Doc(i))
    await st.put("k.7", Doc(70))  # a later revision: the last value counts
    await st.delete("k.8")  # a tombstone
    await st.create("lease", Doc(1), ttl=1)

    async def expired() -> bool:
        return await st.entry("lease", Doc) is None

    await eventually(expired, timeout=5, what="the key's TTL to run out")
    asked = [*keys, "k.8", "missing", "bad key!", "lease", "k.7", "k.3"]
    got = await st.entries(asked, Doc)
    want = [await st.entry(k, Doc) for k in asked]
    assert got == want
    assert got[7] is not None and got[7].value == Doc(70) and got[7].revision > 600
    assert got[8] is None and got[600] is None and got[601] is None and got[602] is None
    assert got[603] is None  # the expiry marker reads as a deletion
    assert [e.value.n for e in got[:5] if e is not None] == [0, 1, 2, 3, 4]
    assert await st.entries([], Doc) == []


async def test_an_old_bucket_is_opened_for_direct_gets(client: Client) -> None:
    # A bucket made before this layout (no direct gets): the first open allows them.
    await client.connection.js.create_key_value(KeyValueConfig(bucket="ent2"))
    info = await client.connection.js.stream_info("KV_ent2")
    assert not info.config.allow_direct
    st = await client.bucket("ent2")
    await st.put("a", Doc(1))
    assert (await client.connection.js.stream_info("KV_ent2")).config.allow_direct
    got = await st.entries(["a", "b"], Doc)
    assert got[0] is not None and got[0].value == Doc(1) and got[1] is None


async def test_a_refused_batch_is_read_key_by_key(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    st = await client.bucket("ent3")
    await st.put("a", Doc(1))
    st._stream = "KV_no_such_stream"  # a batch no stream answers (no responders)
    with caplog.at_level(logging.WARNING, logger="engine.state"):
        got = await st.entries(["a", "b"], Doc)
    assert got[0] is not None and got[0].value == Doc(1) and got[1] is None
    assert "batched read refused" in caplog.text
