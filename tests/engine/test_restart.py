"""A restart works at once after clients closed their connections: the sockets those leave
in TIME-WAIT on the REST port do not make the port look taken (they did, for a minute)."""

from __future__ import annotations

import socket
import time

from tests.fixtures import EngineProcess

CONFIG = """
env:
  AGENTMEMORY_SECRET: restart-secret
workers:
  - name: example
    module: workers.example
  - name: http
    command: ["{python}", "-m", "workers.trigger_plugins", "http"]
    depends_on: [example]
"""


def _http10(port: int, n: int) -> int:
    """n HTTP/1.0 requests, each on its own connection, which the server closes first: the
    side that closes keeps the connection in TIME-WAIT, here on the server's port."""
    answered = 0
    for _ in range(n):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /agentmemory/livez HTTP/1.0\r\nHost: x\r\n\r\n")
            while s.recv(4096):
                pass
            answered += 1
    return answered


def _time_wait_on(port: int) -> int:
    hex_port = f"{port:04X}"
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[1].endswith(":" + hex_port) and fields[3] == "06":  # TIME_WAIT
                count += 1
    return count


def test_stop_then_start_after_closed_clients_is_ready_at_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    eng = EngineProcess(tmp_path, CONFIG)
    eng.start()
    try:
        rest = eng.ports["rest"]
        assert _http10(rest, 40) == 40
        assert eng.stop() == 0
        assert _time_wait_on(rest) > 0  # the situation that refused a restart
        started = time.monotonic()
        eng.start(timeout=30)
        assert time.monotonic() - started < 30
        assert _http10(rest, 1) == 1
    finally:
        eng.stop()
        eng.kill_all()
