"""A lesson's words must hold a character the write path keeps: the schema says so, with
the same pattern in JSON Schema and in Python (schemathesis sent a lone U+0085, which the
schema allowed and the route then refused as blank)."""

from __future__ import annotations

import re

import msgspec
import pytest

from functions.kernel.names import NONBLANK, VISIBLE
from functions.kernel.trust.invisible import INVISIBLE
from functions.lessons.wire import LessonSaveIn

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text", ["\u0085", " \t\n", "\u200b", "\ufeff\u2066", "\u001c"])
def test_a_lesson_of_blank_or_invisible_characters_is_refused_naming_content(text: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=r"\$\.content"):
        msgspec.convert({"content": text}, LessonSaveIn)


def test_a_lesson_with_one_visible_character_is_taken() -> None:
    assert msgspec.convert({"content": "\u200bx"}, LessonSaveIn).content == "\u200bx"


def test_visible_names_every_invisible_character_of_the_basic_plane() -> None:
    basic = {c for c in INVISIBLE if ord(c) <= 0xFFFF}
    assert basic and all(re.fullmatch(VISIBLE, c) is None for c in basic)
    assert all(re.fullmatch(NONBLANK, c) for c in basic)  # NONBLANK alone lets them by
