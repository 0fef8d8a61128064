"""Console settings, read from the console worker's environment."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from engine.paths import Instance, current_layout
from engine.settings import integer, items, load
from triggers.http.secret import load_secret


@dataclass(frozen=True)
class ConsoleSettings:
    """The engine console: inspect and operate a running engine, on a loopback port."""

    port: int = 3114
    """The layout's console port (`AGENTMEMORY_CONSOLE_PORT`), else the instance's."""
    rest_port: int = 3111
    """The layout's REST port: where "send a test HTTP request" is proxied."""
    viewer_port: int = 3113
    """The layout's viewer port: the viewer, where memory records are read and edited."""
    readonly_buckets: tuple[str, ...] = items(
        "CONSOLE_READONLY_BUCKETS",
        ("mem_",),
        "Bucket name prefixes the KV browser shows but does not write.",
    )
    secret: str = ""
    """The REST bearer secret (`AGENTMEMORY_SECRET`, else `~/.agentmemory/secret`)."""
    max_spans: int = integer(
        "CONSOLE_MAX_SPANS", 20000, "Spans kept in memory for trace search (the newest).", lo=1
    )
    max_logs: int = integer(
        "CONSOLE_MAX_LOGS", 5000, "Log records kept in memory for the logs page.", lo=1
    )
    host: str = "127.0.0.1"
    """Always loopback: the console can invoke any function and edit any state."""

    @classmethod
    def from_env(cls) -> ConsoleSettings:
        ports = Instance.resolve().ports
        lay = current_layout()
        return dataclasses.replace(
            load(cls),
            port=lay.given_port("console") or ports.console,
            rest_port=lay.given_port("rest") or ports.rest,
            viewer_port=lay.given_port("viewer") or ports.viewer,
            secret=load_secret(),
        )
