"""`python -m engine stream delete NAME` and `consumer delete STREAM DURABLE`: what a
ConfigDrift tells a person to run when JetStream cannot change a declared stream or
consumer in place. The next start then creates it as declared.

Works whether the instance runs or not: a running one is asked over its own bus; a stopped
one gets a private nats-server on its store for the time of the request (loopback, a free
port, no leaf links), so a start that failed on the drift can be fixed before the next."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from engine import _jetstream
from engine._client import Client
from engine._config import EngineConfig
from engine._connect import connect
from engine._instance import Instance
from engine._nats_server import NatsServer, ensure_credentials


@contextlib.asynccontextmanager
async def bus(inst: Instance, cfg: EngineConfig) -> AsyncIterator[Client]:
    if cfg.nats.url:
        nc = await connect(cfg.nats.url, cfg.nats.credentials, name="engine-maintenance")
        server = None
    elif inst.running_pid() is not None:
        url = str((inst.read_pidfile() or {}).get("nats_url"))
        nc = await connect(url, str(inst.credentials), name="engine-maintenance")
        server = None
    else:
        user, password = ensure_credentials(inst.credentials)
        server = NatsServer(
            store_dir=inst.data_dir / "nats",
            user=user,
            password=password,
            server_name=f"{inst.layout.name}-{inst.number}-maintenance",
            domain=cfg.nats.domain,
        ).start()
        nc = await connect(server.url, str(inst.credentials), name="engine-maintenance")
    try:
        yield Client(nc)
    finally:
        await nc.close()
        if server is not None:
            server.stop()


async def delete_stream(inst: Instance, cfg: EngineConfig, name: str) -> str:
    async with bus(inst, cfg) as client:
        info = await _jetstream.stream_info(client.connection, name)
        await _jetstream.delete(client.connection, f"STREAM.DELETE.{name}")
    return (
        f"stream {name} deleted ({info.messages} messages); the next start creates it as declared"
    )


async def delete_consumer(inst: Instance, cfg: EngineConfig, stream: str, durable: str) -> str:
    async with bus(inst, cfg) as client:
        if await _jetstream.consumer_config(client.connection, stream, durable) is None:
            return f"stream {stream} has no consumer {durable}"
        await _jetstream.delete(client.connection, f"CONSUMER.DELETE.{stream}.{durable}")
    return f"consumer {durable} of {stream} deleted; the next start creates it as declared"
