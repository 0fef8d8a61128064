"""Dates named in a query (`on 25 May, 2022`, `in August 2023`, `2023-07-31`) as day ranges.

"What did we change on 3 March?" is about *when*, and a record's timestamp says when; the
time stream ranks the records whose day falls in (or just after) the named range. Days are
counted from 1970-01-01 so ranges are integer comparisons on a numpy array.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime

_MONTHS = {
    name.lower(): i
    for i in range(1, 13)
    for name in (calendar.month_name[i], calendar.month_abbr[i])
}
_M = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_M}\.?,?\s+(\d{{4}})\b", re.I
)
_MONTH_DAY_YEAR = re.compile(rf"\b{_M}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_M}\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_EPOCH = date(1970, 1, 1).toordinal()

AFTER_DAYS = 3
"""Records made a few days after a date often report what happened on it."""


def day_number(timestamp: str) -> int:
    """Days since 1970-01-01 of an ISO timestamp; -1 when it cannot be read."""
    if not timestamp:
        return -1
    try:
        return datetime.fromisoformat(timestamp[:19].replace("Z", "")).toordinal() - _EPOCH
    except ValueError:
        return -1


def _day(y: int, m: int, d: int) -> int | None:
    try:
        return date(y, m, d).toordinal() - _EPOCH
    except ValueError:
        return None


def _month(token: str) -> int:
    t = token.lower().rstrip(".")
    return _MONTHS.get(t) or _MONTHS.get(t[:3], 0)


def query_ranges(query: str) -> list[tuple[int, int]]:
    """Inclusive day ranges the query names, each widened by AFTER_DAYS at its end."""
    out: list[tuple[int, int]] = []
    spans: list[tuple[int, int]] = []

    def keep(start: int | None, end: int | None, span: tuple[int, int]) -> None:
        if start is None or end is None:
            return
        if any(s <= span[0] < e for s, e in spans):
            return
        spans.append(span)
        out.append((start, end + AFTER_DAYS))

    for m in _DAY_MONTH_YEAR.finditer(query):
        d = _day(int(m.group(3)), _month(m.group(2)), int(m.group(1)))
        keep(d, d, m.span())
    for m in _MONTH_DAY_YEAR.finditer(query):
        d = _day(int(m.group(3)), _month(m.group(1)), int(m.group(2)))
        keep(d, d, m.span())
    for m in _ISO.finditer(query):
        d = _day(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        keep(d, d, m.span())
    for m in _MONTH_YEAR.finditer(query):
        y, mo = int(m.group(2)), _month(m.group(1))
        if mo:
            last = calendar.monthrange(y, mo)[1]
            keep(_day(y, mo, 1), _day(y, mo, last), m.span())
    return out
