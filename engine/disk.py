"""Free space on the disk that holds a path, and the reserve the engine keeps on it.

nats-server does not answer a write it cannot store for want of space (the publisher times
out) and refuses every later write to that stream until it restarts, even once space is
back. So the engine keeps a reserve: writers check it before writing and answer a clear,
retryable error instead (`nats.min_free_disk`, given to workers as ENGINE_MIN_FREE_DISK),
and the supervisor restarts a server that hit a full disk once the reserve is free again.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

DEFAULT_MIN_FREE = 64 << 20
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """`64M`, `1G`, `512MiB`, `1048576` -> bytes (powers of 1024, as nats-server reads them)."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (e.g. 64M, 1G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def min_free_disk() -> int:
    from engine.settings import worker_identity

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
