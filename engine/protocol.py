"""The wire conventions of function calls (docs/PROTOCOL.md), for triggers and other
callers that build calls themselves: subjects, headers, deadline format."""

from engine._protocol import (
    ERROR_CODE_HEADER,
    ERROR_HEADER,
    HDR_COERCE,
    HDR_DEADLINE,
    HDR_IDEMPOTENCY,
    HDR_TRACEPARENT,
    HDR_TRIGGER,
    SUBJECT_PREFIX,
    parse_deadline,
    subject_for,
    validate_function_id,
)

__all__ = [
    "ERROR_CODE_HEADER",
    "ERROR_HEADER",
    "HDR_COERCE",
    "HDR_DEADLINE",
    "HDR_IDEMPOTENCY",
    "HDR_TRACEPARENT",
    "HDR_TRIGGER",
    "SUBJECT_PREFIX",
    "parse_deadline",
    "subject_for",
    "validate_function_id",
]
