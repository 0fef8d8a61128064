"""Lists of names on the wire: a JSON array, or one comma-separated string, which is how
upstream's MCP tools send them (`"concepts": "jwt, auth"`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

V = TypeVar("V", bound=str)

Names = list[str] | str

NONBLANK = "[^\\s\\u001c-\\u001f\\u0085]"
"""A pattern for one character that is not blank, the same in JSON Schema (ECMA-262) and in
Python's `re`: Python's `\\s` (and `str.strip`) also takes the separators U+001C-U+001F and
U+0085, which ECMA's does not."""
VISIBLE = "[^\\s\\u001c-\\u001f\\u0085\\u200b-\\u200d\\u2060\\u202a-\\u202e\\u2066-\\u2069\\ufeff]"
"""As NONBLANK, and not one of the invisible characters the write path removes
(functions/kernel/trust/invisible.py) that one pattern can name alike in both dialects
(those of the basic plane): a text the write path keeps something of."""

SOME_NAMES: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "contains": {"type": "string", "pattern": NONBLANK}},
        {"type": "string", "pattern": NONBLANK.replace("[^", "[^,")},
    ]
}
"""JSON Schema of a `Names` value that names at least one."""
TEXT: dict[str, Any] = {"type": "string", "pattern": NONBLANK}
"""JSON Schema of a string with a non-blank character."""


def at_least_one_of(**fields: dict[str, Any]) -> dict[str, Any]:
    """`extra_json_schema` of a request that needs one of `fields`, each given as the
    schema that makes it count (e.g. `memoryIds=SOME_NAMES`)."""
    return {
        "anyOf": [
            {"required": [name], "properties": {name: schema}} for name, schema in fields.items()
        ]
    }


def choices_pattern(choices: tuple[str, ...]) -> str:
    """The pattern of a comma-separated string of `choices` (blank: none), so a `Names`
    field restricted to a vocabulary says so in its schema."""
    alt = "|".join(re.escape(c) for c in choices)
    return rf"^\s*(?:(?:{alt})\s*(?:,\s*(?:{alt})\s*)*)?$"


def names(value: str | Sequence[str]) -> list[str]:
    """The names of `value`: a list's items or a string split on commas, stripped, blanks
    dropped (a blank name names nothing)."""
    parts = value.split(",") if isinstance(value, str) else value
    return [p.strip() for p in parts if p.strip()]


def chosen(value: str | Sequence[str], vocabulary: tuple[V, ...]) -> list[V]:
    """The names of `value` that are words of `vocabulary` (a Literal's values), in order and
    typed as such: what a field restricted to a vocabulary holds once decoded."""
    return [word for name in names(value) for word in vocabulary if word == name]
