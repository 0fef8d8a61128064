"""A host whose clock is off: a worker process run under libfaketime (LD_PRELOAD), which
shifts what time.time() and datetime.now() say in that process only; its monotonic clock is
left alone. nats-server is a static Go binary that libfaketime cannot reach: the bus keeps
the machine's clock, as NTP-synced servers would."""

from __future__ import annotations

import glob

_LIBS = glob.glob("/usr/lib/*/faketime/libfaketime.so.1") + glob.glob(
    "/usr/lib/faketime/libfaketime.so.1"
)
LIB = _LIBS[0] if _LIBS else ""
MISSING = "" if LIB else "libfaketime is not installed (apt-get install libfaketime)"


def skewed(seconds: float) -> dict[str, str]:
    """Environment for a process whose wall clock is `seconds` off (+ ahead, - behind)."""
    return {
        "LD_PRELOAD": LIB,
        "FAKETIME": f"{seconds:+g}s",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_NO_CACHE": "1",
    }
