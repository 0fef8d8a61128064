"""On a cluster, what the engine creates is replicated as the instance's `nats.replicas`
says, also when the code that creates it names no replica count."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine import Client, connect
from ops.cluster.nodes import NatsCluster
from triggers.cron import STREAM as CRON_STREAM
from triggers.cron import ensure_cron_stream
from triggers.queue.streams import ensure_queue_stream

ENV_REPLICAS = "ENGINE_REPLICAS"
"""What the supervisor sets for its workers from the config's `nats.replicas`."""


async def _replicas(client: Client, stream: str) -> tuple[int, int]:
    """The stream's configured replica count and how many peers hold it."""
    info = await client.nc.jetstream().stream_info(stream)
    peers = 1 + len(info.cluster.replicas or []) if info.cluster else 1
    return info.config.num_replicas or 1, peers


async def test_buckets_streams_and_object_stores_take_the_instance_replicas(
    nats_cluster: NatsCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_REPLICAS, "3")
    nc = await connect(nats_cluster.url)
    try:
        client = Client(nc)  # as every worker makes it: no replica count named
        assert client.replicas == 3
        await client.bucket("plain_bucket")
        await client.stream("PLAIN", subjects=["plain.>"]).ensure()
        await client.objects("plain_objects")
        await ensure_cron_stream(client)
        await ensure_queue_stream(client, "plain-queue")
        for stream in ("KV_plain_bucket", "PLAIN", "OBJ_plain_objects", CRON_STREAM,
                       "QUEUE_PLAIN_QUEUE"):  # fmt: skip
            assert await _replicas(client, stream) == (3, 3), stream
        # A caller that names its own count keeps it.
        await client.bucket("single_bucket", replicas=1)
        assert await _replicas(client, "KV_single_bucket") == (1, 1)
    finally:
        await nc.close()


async def test_a_replicated_bucket_stream_or_object_store_takes_writes_once_opened(
    nats_cluster: NatsCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stream just made with three replicas elects its leader first; a write sent before
    # that found no responder (a worker crashed at start on its first KV put).
    monkeypatch.setenv(ENV_REPLICAS, "3")
    nc = await connect(nats_cluster.url)
    try:
        client = Client(nc)

        async def bucket(i: int) -> None:
            await (await client.bucket(f"fresh_{i}")).put("k", i)

        async def stream(i: int) -> None:
            s = await client.stream(f"FRESH_{i}", subjects=[f"fresh{i}.>"]).ensure()
            await s.publish(f"fresh{i}.x", b"x")

        async def objects(i: int) -> None:
            await (await client.objects(f"fresh_obj_{i}")).put("o", b"data")

        await asyncio.gather(*(f(i) for i in range(20) for f in (bucket, stream, objects)))
    finally:
        await nc.close()


@pytest.mark.unit
def test_a_replica_count_jetstream_cannot_have_is_a_config_error(tmp_path: Path) -> None:
    from engine.config import ConfigError, load_config

    path = tmp_path / "engine.yaml"
    path.write_text("nats:\n  url: nats://127.0.0.1:4222\n  replicas: 7\n")
    with pytest.raises(ConfigError, match=r"nats\.replicas must be from 1 to 5"):
        load_config(path)
