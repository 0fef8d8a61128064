"""Times: stored times are ISO-8601 strings in UTC (`2026-01-31T12:34:56.789Z`), coordination
keeps epoch milliseconds, and every scheduled job takes `now` (a datetime in UTC, from a
request's `now` or the wall clock) so tests and replays drive the clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated

import msgspec

from engine import FunctionError

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse(value: str) -> datetime:
    """An ISO-8601 string as an aware UTC datetime; unreadable or empty gives the epoch, so a
    malformed record counts as old rather than breaking a sweep."""
    if not value:
        return EPOCH
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return EPOCH
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now() -> datetime:
    return datetime.now(UTC)


def days_between(earlier: str | datetime, later: datetime) -> float:
    start = parse(earlier) if isinstance(earlier, str) else earlier
    return (later - start).total_seconds() / 86400.0


def now_iso() -> str:
    """The current UTC time as `2026-01-31T12:34:56.789Z`."""
    return _iso_millis(time.time_ns())


# The date and time of day change once a second: formatted then, not on every call (a
# datetime and its isoformat cost ~2 µs, on every write). time.time_ns() reads the clock
# datetime.now() reads, and datetime floors it to the microsecond and isoformat to the
# millisecond: the integer divisions below.
_iso_second: tuple[int, str] = (-1, "")


def _iso_millis(ns: int) -> str:
    global _iso_second
    second, prefix = _iso_second
    if ns // 1_000_000_000 != second:
        second = ns // 1_000_000_000
        prefix = datetime.fromtimestamp(second, UTC).isoformat().removesuffix("+00:00")
        _iso_second = (second, prefix)
    return f"{prefix}.{ns // 1_000_000 % 1000:03d}Z"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as `2026-01-31T12:34:56.789Z`."""
    dt = datetime.fromtimestamp(ms // 1000, UTC).isoformat().removesuffix("+00:00")
    return f"{dt}.{ms % 1000:03d}Z"


def ms_of(text: str) -> int:
    """`iso_ms` back to epoch milliseconds (0 for an empty or unreadable time)."""
    if not text:
        return 0
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


class Clocked(msgspec.Struct, rename="camel", kw_only=True):
    now: (
        Annotated[str, msgspec.Meta(max_length=64, extra_json_schema={"format": "date-time"})]
        | None
    ) = None
    """ISO-8601 time to run at; absent = the wall clock. Lets tests and replays drive time."""


def when(req: Clocked) -> datetime:
    if req.now is None:
        return now()
    try:
        datetime.fromisoformat(req.now.replace("Z", "+00:00"))
    except ValueError:
        raise FunctionError(
            "BAD_REQUEST", f"now must be an ISO-8601 date-time, got {req.now[:40]!r}", field="now"
        ) from None
    return parse(req.now)
