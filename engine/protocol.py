"""The wire conventions of function calls (docs/PROTOCOL.md), shared by the engine's
callers and workers and by triggers and other callers that build calls themselves:
subjects, headers, deadline format."""

from __future__ import annotations

import re
from collections.abc import Iterable

from nats.micro.request import ERROR_CODE_HEADER, ERROR_HEADER

__all__ = [
    "ERROR_CODE_HEADER",
    "ERROR_HEADER",
    "HDR_COERCE",
    "HDR_DEADLINE",
    "HDR_IDEMPOTENCY",
    "HDR_TRACEPARENT",
    "HDR_TRIGGER",
    "MAX_JSON_DEPTH",
    "SUBJECT_PREFIX",
    "maybe_too_deep",
    "parse_deadline",
    "subject_for",
    "too_deep",
    "validate_function_id",
]

SUBJECT_PREFIX = "fn."
# Absolute deadline, Unix epoch milliseconds: survives queueing, unlike a relative timeout.
HDR_DEADLINE = "Engine-Deadline"
HDR_TRACEPARENT = "traceparent"
HDR_IDEMPOTENCY = "Idempotency-Key"
# What fired the call (http, timer, queue, pubsub, stream, state): the span's faas.trigger.
HDR_TRIGGER = "Engine-Trigger"
# Present when the request object holds strings that stand for other types (built by the
# http trigger from a query string or path parameters): the worker decodes it laxly.
HDR_COERCE = "Engine-Coerce"

_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*(::[a-z0-9][a-z0-9_-]*)+$")


# Deepest nesting of arrays and objects a request body may have. A deeper one is refused
# with BAD_REQUEST naming the limit: msgspec's decoder raises RecursionError near Python's
# stack limit (~1000 levels), and code walking a value recursively fails earlier still.
MAX_JSON_DEPTH = 64


def maybe_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `body` could nest deeper than `limit`: fewer brackets than that cannot (a
    count at C speed clears nearly every body; the rest are checked with `too_deep`)."""
    return body.count(b"[") + body.count(b"{") > limit


def too_deep(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a decoded JSON value nests arrays and objects deeper than `limit` (walked
    without recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            children: Iterable[object] = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children)
    return False


def validate_function_id(function_id: str) -> str:
    if not _ID_RE.match(function_id):
        raise ValueError(
            f"function id {function_id!r} must look like 'domain::verb' "
            "(lowercase letters, digits, '_' or '-', parts joined by '::')"
        )
    return function_id


def subject_for(function_id: str) -> str:
    return SUBJECT_PREFIX + function_id.replace("::", ".")


def parse_deadline(value: str | None) -> float | None:
    """Epoch seconds, or None when absent or unreadable."""
    if not value:
        return None
    try:
        return int(value) / 1000.0
    except ValueError:
        return None
