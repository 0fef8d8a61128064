"""Where an Obsidian export may write (upstream's name)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.settings import load, path


@dataclass(frozen=True)
class FileSettings:
    """Exports to and compression of files on this machine."""

    export_root: Path | None = path(
        "AGENTMEMORY_EXPORT_ROOT",
        None,
        "The folder an Obsidian export may write under.",
        shown="~/.agentmemory",
    )


def file_settings() -> FileSettings:
    return load(FileSettings)
