"""Where an instance lives: its data dir and its block of ports.

Ports, one instance: anchor+0 REST, +1 streams (WebSocket), +2 viewer, +3 console,
+4 NATS client, +5 NATS monitoring. `--port N` moves the anchor (default 3111);
`--instance K` shifts the block by 100×K and gives the instance its own data dir.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ANCHOR = 3111


@dataclass(frozen=True)
class Ports:
    rest: int
    streams: int
    viewer: int
    console: int
    nats: int
    nats_monitor: int

    @classmethod
    def for_instance(cls, instance: int = 0, anchor: int | None = None) -> Ports:
        base = (anchor or int(os.environ.get("AGENTMEMORY_PORT", DEFAULT_ANCHOR))) + 100 * instance
        return cls(base, base + 1, base + 2, base + 3, base + 4, base + 5)


def default_data_dir(instance: int = 0) -> Path:
    env = os.environ.get("AGENTMEMORY_DATA_DIR")
    if env:
        root = Path(env).expanduser()
    else:
        xdg = os.environ.get("XDG_DATA_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".local" / "share") / "agentmemory"
    return root if instance == 0 else root / f"instance-{instance}"


def settings_file() -> Path:
    return Path.home() / ".agentmemory" / ".env"


def load_settings() -> None:
    """Read ~/.agentmemory/.env into the environment; the process environment wins."""
    path = settings_file()
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        value = value.strip().strip('"').strip("'")
        os.environ.setdefault(key, value)
