"""A model's reply as a typed record, or nothing.

Our prompts ask for one JSON object. A reply may wrap it in a ``` fence or put a sentence
before it; the first JSON value from the first `{` is decoded by the standard library's
decoder (`raw_decode` stops at the value's end, ignoring what follows), then converted to the
caller's Struct (lax: "3" for an int is fine). Every string in the result is scrubbed: a
model may echo what it should not."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")
_FENCE = re.compile(r"```(?:json|JSON)?\s*")
_decoder = json.JSONDecoder()


def first_object(text: str) -> Any:
    """The first JSON object in `text`, or None."""
    body = _FENCE.sub("", text or "")
    start = body.find("{")
    while start != -1:
        try:
            value, _ = _decoder.raw_decode(body, start)
        except ValueError:
            start = body.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = body.find("{", start + 1)
    return None


def _clean(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value.strip())
    if isinstance(value, dict):
        return {k: _clean(v, scrub) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v, scrub) for v in value]
    return value


def decode(text: str, type_: type[T], scrub: Callable[[str], str]) -> T | None:
    """`text`'s first JSON object as `type_`, strings scrubbed; None if it is not one."""
    found = first_object(text)
    if found is None:
        return None
    try:
        return msgspec.convert(_clean(found, scrub), type_, strict=False)
    except msgspec.ValidationError:
        return None
