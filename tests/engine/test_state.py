"""KV state against a real JetStream: CAS, retry, keys by prefix, watch, durability."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from engine import CasConflict, Client, connect
from engine.server import NatsServer


class Doc(msgspec.Struct):
    n: int


async def test_put_get_delete_roundtrip_typed(client: Client) -> None:
    st = await client.bucket("t1")
    await st.put("a.b", Doc(1))
    assert await st.get("a.b", Doc) == Doc(1)
    await st.delete("a.b")
    assert await st.get("a.b", Doc) is None


async def test_compare_and_set_rejects_a_stale_revision(client: Client) -> None:
    st = await client.bucket("t2")
    rev = await st.put("k", Doc(1))
    await st.compare_and_set("k", Doc(2), rev)
    with pytest.raises(CasConflict) as ei:
        await st.compare_and_set("k", Doc(3), rev)  # rev is stale now
    assert ei.value.code == "CONFLICT" and ei.value.retryable
    assert await st.get("k", Doc) == Doc(2)


async def test_create_is_atomic_once(client: Client) -> None:
    st = await client.bucket("t3")
    results = await asyncio.gather(*(st.create("once", Doc(i)) for i in range(10)))
    assert sum(r is not None for r in results) == 1


async def test_concurrent_updates_retry_and_lose_nothing(client: Client, nats_server) -> None:
    # Three connections hammer one counter: CAS conflicts happen and are retried.
    ncs = [await connect(nats_server.url) for _ in range(3)]
    clients = [Client(nc) for nc in ncs]
    states = [await c.bucket("t4") for c in clients]

    async def bump(i: int) -> None:
        await states[i % 3].update("ctr", lambda cur: (cur or 0) + 1)

    await asyncio.gather(*(bump(i) for i in range(60)))
    assert await states[0].get("ctr") == 60
    for nc in ncs:
        await nc.close()


async def test_keys_by_prefix(client: Client) -> None:
    st = await client.bucket("t5")
    for k in ("obs.1", "obs.2", "mem.1", "obsx"):
        await st.put(k, 1)
    await st.delete("obs.2")
    assert sorted(await st.keys("obs.")) == ["obs.1"]
    assert sorted(await st.keys("obs")) == ["obs.1", "obsx"]
    assert sorted(await st.keys()) == ["mem.1", "obs.1", "obsx"]


async def test_watch_sees_put_update_delete_in_order(client: Client) -> None:
    st = await client.bucket("t6")
    await st.put("old", 0)
    seen: list[tuple[str, str, object]] = []
    watching = asyncio.Event()

    async def follow() -> None:
        async for ch in st.watch(include_existing=False):
            if ch.key == "ready":  # the watch is live: what follows it must all be seen
                watching.set()
                continue
            seen.append((ch.key, ch.op, ch.value and msgspec.json.decode(ch.value)))
            if len(seen) == 3:
                return

    task = asyncio.create_task(follow())
    # Not a fixed sleep: under load the watch took longer than 0.2 s to start and missed
    # the first put. Mark until the watcher has seen a mark, then write.
    for _ in range(100):
        await st.put("ready", 1)
        try:
            await asyncio.wait_for(watching.wait(), 0.1)
            break
        except TimeoutError:
            continue
    assert watching.is_set(), "the watch never started"
    await st.put("x", 1)
    await st.put("x", 2)
    await st.delete("x")
    await asyncio.wait_for(task, 30)  # generous on a loaded machine: order and loss are what count
    assert seen == [("x", "put", 1), ("x", "put", 2), ("x", "delete", None)]


async def test_acknowledged_put_survives_sigkill_of_nats_server(tmp_path) -> None:
    store = tmp_path / "store"
    srv = NatsServer(store_dir=store).start()
    port = srv.client_port
    nc = await connect(srv.url)
    st = await Client(nc).bucket("durable")
    await st.put("k", Doc(42))  # acknowledged by JetStream
    await nc.close()
    srv.kill()  # SIGKILL
    srv2 = NatsServer(store_dir=store, port=port or -1).start()
    try:
        nc2 = await connect(srv2.url)
        assert await (await Client(nc2).bucket("durable")).get("k", Doc) == Doc(42)
        await nc2.close()
    finally:
        srv2.kill()


async def test_keys_lists_every_key_every_time(client: Client) -> None:
    # Regression: the KV watcher's end-of-snapshot marker could overtake the snapshot's
    # first entries, and a listing came back short (sometimes empty).
    st = await client.bucket("t7")
    await asyncio.gather(*(st.put(f"k.{i}", i) for i in range(300)))
    await st.delete("k.7")
    for _ in range(15):
        keys = await st.keys("k.")
        assert len(keys) == 299 and "k.7" not in keys
