"""Lists of names on the wire: a JSON array, or one comma-separated string, which is how
upstream's MCP tools send them (`"concepts": "jwt, auth"`)."""

from __future__ import annotations

Names = list[str] | str


def names(value: Names) -> list[str]:
    """The names of `value`: a list as it is, a string split on commas, blanks dropped."""
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    return value
