"""Time as the lifecycle sees it: every job takes `now` (a datetime in UTC) so tests drive
the clock; stored times are ISO-8601 strings in UTC."""

from __future__ import annotations

from datetime import UTC, datetime

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
