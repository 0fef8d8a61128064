"""A lesson named both ways (`id` and upstream's `lessonId`) is the `lessonId` one: the
stateful schemathesis run (seed 2612026) created a lesson, then strengthened it by the
returned `lessonId` beside a generated `id`, and got 404 for the lesson it had just made."""

from __future__ import annotations

import msgspec
import pytest

from functions.lessons.wire import LessonReinforceIn

pytestmark = pytest.mark.unit


def test_lesson_id_wins_over_id() -> None:
    req = msgspec.convert({"id": "0", "lessonId": "lsn_real"}, LessonReinforceIn)
    assert req.id == "lsn_real"
    assert msgspec.convert({"id": "lsn_a"}, LessonReinforceIn).id == "lsn_a"
