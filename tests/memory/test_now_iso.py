"""now_iso formats the second once and the milliseconds by integer arithmetic: it must give
what datetime gives for the same instant."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from functions.kernel.clock import _iso_millis, now_iso

pytestmark = pytest.mark.unit

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _reference(ns: int) -> str:
    # datetime.now(UTC) keeps whole microseconds of the clock, floored
    at = _EPOCH + timedelta(microseconds=ns // 1000)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@settings(max_examples=500, deadline=None)
@given(
    st.integers(0, 7_258_118_400 * 10**9)  # up to 2200
    | st.integers(1_800_000_000, 1_800_000_003).flatmap(
        # neighbouring instants within and across one second, as calls come
        lambda s: st.integers(s * 10**9 - 2, s * 10**9 + 999_999_999)
    )
)
def test_formatting_matches_datetime(ns: int) -> None:
    assert _iso_millis(ns) == _reference(ns)


def test_now_iso_is_now_in_the_stored_format() -> None:
    before = datetime.now(UTC)
    text = now_iso()
    after = datetime.now(UTC)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text)
    at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert before - timedelta(milliseconds=1) <= at <= after
