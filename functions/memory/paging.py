"""Upstream's list paging (0.9.30, src/state/list-query.ts): rows newest first by a sort
key, ties by id descending; a page after an opaque keyset cursor, base64url of JSON
`{key, id}`. A cursor that does not decode starts from the first row, as upstream's does."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec

T = TypeVar("T")


class Cursor(msgspec.Struct, omit_defaults=True):
    key: str = ""
    id: str = ""


def encode_cursor(key: str, id: str) -> str:
    raw = msgspec.json.encode(Cursor(key=key, id=id))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> Cursor | None:
    if not text:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return msgspec.json.decode(raw, type=Cursor)
    except (binascii.Error, ValueError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def newest_first(rows: Sequence[T], key: Callable[[T], tuple[str, str]]) -> list[T]:
    return sorted(rows, key=key, reverse=True)


def page(
    rows: Sequence[T],
    key: Callable[[T], tuple[str, str]],
    *,
    limit: int,
    offset: int = 0,
    cursor: str = "",
) -> tuple[list[T], str | None]:
    """`rows` (already newest first by `key`): the page after `cursor` (else from `offset`)
    of at most `limit`, and the cursor of its last row when more remain (else None)."""
    after = decode_cursor(cursor)
    if after is not None:
        mark = (after.key, after.id)
        start = next((i for i, r in enumerate(rows) if key(r) < mark), len(rows))
    else:
        start = offset
    chosen = list(rows[start : start + limit])
    more = start + limit < len(rows)
    if not more or not chosen:
        return chosen, None
    last_key, last_id = key(chosen[-1])
    return chosen, encode_cursor(last_key, last_id)
