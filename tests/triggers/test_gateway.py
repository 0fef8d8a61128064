"""The WebSocket gateway: authenticated clients follow a subject or a stream live."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from nats.js.api import StreamConfig
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.fixtures import free_port

SECRET = "ws-secret"


@pytest.fixture
def gateway(spawn) -> Iterator[str]:  # type: ignore[no-untyped-def]
    port = free_port()
    spawn(
        "workers.trigger_plugins",
        "ws",
        env={"AGENTMEMORY_STREAMS_PORT": str(port), "AGENTMEMORY_SECRET": SECRET},
    )
    yield f"ws://127.0.0.1:{port}/ws"


async def test_client_follows_a_subject_live(client, gateway) -> None:
    async with connect(f"{gateway}?subject=news.*&token={SECRET}") as ws:
        # The gateway subscribes before it accepts, so nothing published now is missed.
        await client.nc.publish("news.a", b'{"n": 1}')
        got = json.loads(await asyncio.wait_for(ws.recv(), 5))
        assert got == {"subject": "news.a", "data": {"n": 1}}


async def test_client_follows_a_stream_from_the_start_then_live(client, gateway) -> None:
    js = client.nc.jetstream()
    await js.add_stream(StreamConfig(name="EVENTS", subjects=["events.>"]))
    for n in range(3):
        await js.publish(f"events.e{n}", b'{"n": %d}' % n)
    headers = {"Authorization": f"Bearer {SECRET}"}
    async with connect(f"{gateway}?stream=EVENTS&from=all", additional_headers=headers) as ws:
        seen = [json.loads(await ws.recv()) for _ in range(3)]
        assert [(f["seq"], f["data"]["n"]) for f in seen] == [(1, 0), (2, 1), (3, 2)]
        await js.publish("events.late", b"plain text")
        late = json.loads(await ws.recv())
        assert (late["seq"], late["subject"], late["data"]) == (4, "events.late", "plain text")


async def test_client_without_the_secret_or_from_a_foreign_origin_is_refused(gateway) -> None:
    for url, headers in (
        (f"{gateway}?subject=x", {}),
        (f"{gateway}?subject=x&token=wrong", {}),
        (f"{gateway}?subject=x&token={SECRET}", {"Origin": "https://evil.example"}),
    ):
        with pytest.raises(InvalidStatus):
            async with connect(url, additional_headers=headers) as ws:
                await ws.recv()
