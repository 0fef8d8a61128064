"""The data dir's format: a stamp `format.json` the CLI writes and checks, and the ordered
steps that bring an older data dir to the current format (`agentmemory upgrade`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

FORMAT = 1
"""1: JetStream store under nats/, logs/, the pidfile and lock (every release so far)."""
STAMP = "format.json"

# Step N brings a data dir of format N-1 to N. A data dir without a stamp is format 0: it
# was written before stamps existed, with the same layout as format 1.
MIGRATIONS: dict[int, Callable[[Path], None]] = {1: lambda data: None}


class TooNew(RuntimeError):
    pass


def read_format(data: Path) -> int:
    try:
        value = json.loads((data / STAMP).read_text()).get("format", 0)
    except (OSError, ValueError, AttributeError):
        return 0
    return value if isinstance(value, int) else 0


def check(data: Path) -> None:
    """Refuse a data dir written by a newer agentmemory (its format is not ours to read)."""
    found = read_format(data)
    if found > FORMAT:
        raise TooNew(
            f"{data} holds data of format {found}, newer than this agentmemory reads "
            f"({FORMAT}): upgrade agentmemory (pipx upgrade agentmemory-nats)"
        )


def migrate(data: Path) -> list[int]:
    """Run the steps this data dir has not had; returns the formats it went through."""
    check(data)
    done = []
    for step in range(read_format(data) + 1, FORMAT + 1):
        MIGRATIONS[step](data)
        done.append(step)
        _stamp(data, step)
    return done


def _stamp(data: Path, value: int) -> None:
    data.mkdir(parents=True, exist_ok=True)
    tmp = data / (STAMP + ".tmp")
    tmp.write_text(json.dumps({"format": value}) + "\n")
    os.replace(tmp, data / STAMP)
