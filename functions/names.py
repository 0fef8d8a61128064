"""Lists of names on the wire: a JSON array, or one comma-separated string, which is how
upstream's MCP tools send them (`"concepts": "jwt, auth"`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

Names = list[str] | str

SOME_NAMES: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "minItems": 1},
        {"type": "string", "pattern": "[^,\\s]"},
    ]
}
"""JSON Schema of a `Names` value that names at least one."""
TEXT: dict[str, Any] = {"type": "string", "pattern": "\\S"}
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
    """The names of `value`: a list as it is, a string split on commas, blanks dropped."""
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    return list(value)
