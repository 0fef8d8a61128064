"""Free space on the disk that holds a path, and the reserve the engine keeps on it.

nats-server does not answer a write it cannot store for want of space (the publisher times
out) and refuses every later write to that stream until it restarts, even once space is
back. So the engine keeps a reserve: writers check it before writing and answer a clear,
retryable error instead (`nats.min_free_disk`, given to workers as ENGINE_MIN_FREE_DISK),
and the supervisor restarts a server that hit a full disk once the reserve is free again.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine._engine_settings import MIN_FREE_DISK, worker_identity
from engine._setting import parse_size as parse_size

DEFAULT_MIN_FREE = MIN_FREE_DISK


def min_free_disk() -> int:
    return worker_identity().min_free_disk


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the disk holding `path` (its nearest
    existing parent when it does not exist yet)."""
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    st = os.statvfs(p)
    return st.f_bavail * st.f_frsize


def mb(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB"
