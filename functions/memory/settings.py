"""The write path's settings: compression by the model, the capture inbox, whether retrieval
runs in the memory worker's process, and whether the instance runs the viewer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.settings import duration, flag, integer, load, path


@dataclass(frozen=True)
class MemorySettings:
    """The memory write path (observe, remember, forget, sessions, import, export)."""

    auto_compress: bool = flag(
        "AGENTMEMORY_AUTO_COMPRESS",
        False,
        "Let the model compress each observation (a provider must be configured).",
    )
    inbox_dir: Path | None = path(
        "AGENTMEMORY_INBOX_DIR",
        None,
        "Where observations wait while the bus cannot take them.",
        shown="<data dir>/memory/inbox",
    )
    inbox_max: int = integer(
        "AGENTMEMORY_INBOX_MAX", 10_000, "Observations the inbox holds at most.", lo=1
    )
    inbox_attempts: int = integer(
        "AGENTMEMORY_INBOX_ATTEMPTS",
        8,
        "Tries before an inbox entry is set aside as dead.",
        lo=1,
    )
    session_start_wait: float = duration(
        "AGENTMEMORY_SESSION_START_WAIT",
        0.6,
        "How long session/start waits for the context; what is not ready by then is left "
        "out and named in the reply (the hooks wait 0.8 s, AGENTMEMORY_HOOK_TIMEOUT_MS).",
    )
    finalize_idle_ms: int = duration(
        "AGENTMEMORY_FINALIZE_IDLE_MS",
        120_000,
        "A session whose turn ended (a Stop hook: `final: false`) ends after this much "
        "silence; 0 ends it at the Stop.",
        unit="milliseconds",
    )
    search: bool = flag(
        "AGENTMEMORY_SEARCH",
        True,
        "The memory worker serves retrieval in its own process too (config/engine.yaml "
        "sets off: retrieval has its own worker).",
    )
    viewer: bool | None = flag(
        "AGENTMEMORY_VIEWER",
        None,
        "Whether this instance runs the viewer (for livez and status).",
        shown="whether the engine config has the viewer worker",
    )


def memory_settings() -> MemorySettings:
    return load(MemorySettings)
