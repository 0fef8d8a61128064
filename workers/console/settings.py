"""Console settings, read from the console worker's environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

from engine.paths import Instance
from triggers.http.secret import load_secret


@dataclass(frozen=True)
class ConsoleSettings:
    port: int = 3114
    """`AGENTMEMORY_CONSOLE_PORT`, else the instance's console port."""
    rest_port: int = 3111
    """`AGENTMEMORY_REST_PORT`: where "send a test HTTP request" is proxied."""
    viewer_port: int = 3113
    """`AGENTMEMORY_VIEWER_PORT`: the viewer, where memory records are read and edited."""
    readonly_buckets: tuple[str, ...] = ("mem_",)
    """`CONSOLE_READONLY_BUCKETS` (comma-separated prefixes): buckets the KV browser shows
    but does not write (the memory domain's records; see workers/console/records.py)."""
    secret: str = ""
    """The REST bearer secret (`AGENTMEMORY_SECRET`, else `~/.agentmemory/secret`)."""
    max_spans: int = 20000
    """`CONSOLE_MAX_SPANS`: spans kept in memory for trace search (the newest win)."""
    max_logs: int = 5000
    """`CONSOLE_MAX_LOGS`: log records kept in memory for the logs page."""
    host: str = "127.0.0.1"
    """Always loopback: the console can invoke any function and edit any state."""

    @classmethod
    def from_env(cls) -> ConsoleSettings:
        env = os.environ
        ports = Instance.resolve().ports
        return cls(
            port=int(env.get("AGENTMEMORY_CONSOLE_PORT") or ports.console),
            rest_port=int(env.get("AGENTMEMORY_REST_PORT") or ports.rest),
            viewer_port=int(env.get("AGENTMEMORY_VIEWER_PORT") or ports.viewer),
            readonly_buckets=tuple(
                p.strip()
                for p in env.get("CONSOLE_READONLY_BUCKETS", "mem_").split(",")
                if p.strip()
            ),
            secret=load_secret(),
            max_spans=int(env.get("CONSOLE_MAX_SPANS") or 20000),
            max_logs=int(env.get("CONSOLE_MAX_LOGS") or 5000),
        )
