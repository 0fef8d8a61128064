"""Git snapshots of memory state: where the repository lives and whether the clock takes
them (upstream's names)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.settings import duration, flag, load, path, text


@dataclass(frozen=True)
class SnapshotSettings:
    """Git snapshots of memory state."""

    dir: Path | None = path(
        "SNAPSHOT_DIR", None, "The snapshots' git repository.", shown="<data dir>/snapshots"
    )
    enabled: bool = flag("SNAPSHOT_ENABLED", False, "Take snapshots on a schedule.")
    schedule: str = text(
        "SNAPSHOT_SCHEDULE", "", "Their cron schedule; else every SNAPSHOT_INTERVAL seconds."
    )
    interval: int = duration(
        "SNAPSHOT_INTERVAL", 3600, "Seconds between two scheduled snapshots.", lo=1, clamp=True
    )


def snapshot_settings() -> SnapshotSettings:
    return load(SnapshotSettings)
