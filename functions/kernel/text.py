"""Text cut to a length for display: a title, a label. A cut says so with "…"."""

from __future__ import annotations


def clip(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its first `limit - 1` and "…"."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"
