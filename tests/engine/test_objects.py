"""Object stores through the engine's API against a real JetStream."""

from __future__ import annotations

import asyncio
import os

from engine import Client


async def test_an_object_round_trips_and_a_missing_one_is_none(client: Client) -> None:
    store = await client.objects("snaps")
    blob = os.urandom(300_000)  # several chunks
    await store.put("index", blob)
    assert await store.get("index") == blob
    assert await store.get("nothing") is None
    await store.put("index", b"smaller")  # replaced whole
    assert await store.get("index") == b"smaller"
    await store.put("empty", b"")
    assert await store.get("empty") == b""


async def test_opening_a_bucket_twice_or_concurrently_gives_one_store(client: Client) -> None:
    other = Client(client.nc)
    a, b = await asyncio.gather(client.objects("shared"), other.objects("shared"))
    await a.put("x", b"1")
    assert await b.get("x") == b"1"
    assert await client.objects("shared") is a
