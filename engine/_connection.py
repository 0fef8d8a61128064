"""One NATS connection as the engine's bus modules share it: the connection, its JetStream
context, the shared reply inbox (engine/_requests.py) and the replicas a new stream, bucket
or object store gets when its caller names none.

A Client owns one (`Client.connection`); streams, buckets, watches, scans, object stores
and the JetStream API calls take it, so none of them reaches into the Client, and none of
them imports the module that imports them all (engine/_client.py).
"""

from __future__ import annotations

from nats.aio.client import Client as NATS
from nats.js.client import JetStreamContext

from engine._requests import Requester


class Connection:
    def __init__(self, nc: NATS, replicas: int) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        """nats-py's JetStream context, made once: its API requests wait nats-py's default."""
        self.requester = Requester(nc)
        """Every request/reply of this connection: calls and JetStream API requests."""
        self.replicas = replicas
        """JetStream replicas of what is created through this connection when its caller
        names none: the instance's `nats.replicas` (ENGINE_REPLICAS)."""

    def jetstream(self, timeout: float | None = None) -> JetStreamContext:
        """The shared JetStream context, or one whose API requests wait `timeout` seconds."""
        return self.js if timeout is None else self.nc.jetstream(timeout=timeout)
