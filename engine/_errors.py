"""Structured function errors: a code, a message a user can act on, and whether to retry."""

from __future__ import annotations

import re
from typing import Any, cast

import msgspec

# code -> (NATS micro numeric status, retryable by default)
_CODES: dict[str, tuple[int, bool]] = {
    "BAD_REQUEST": (400, False),
    "UNAUTHORIZED": (401, False),
    "FORBIDDEN": (403, False),
    "NOT_FOUND": (404, False),
    "CONFLICT": (409, True),
    "TOO_LARGE": (413, False),
    "UNPROCESSABLE": (422, False),
    "RATE_LIMITED": (429, True),
    "INTERNAL": (500, False),
    "NOT_IMPLEMENTED": (501, False),
    "UNAVAILABLE": (503, True),
    "DEADLINE_EXCEEDED": (504, True),
}
_BY_STATUS = {status: code for code, (status, _) in _CODES.items()}


class ErrorBody(msgspec.Struct, omit_defaults=True):
    code: str
    message: str
    retryable: bool
    field: str | None = None


class ErrorEnvelope(msgspec.Struct):
    error: ErrorBody


class FunctionError(Exception):
    """An error a function returns on purpose; it crosses the bus intact.

    `code` is one of the names in `_CODES` (unknown codes map to status 500), `field`
    names the request field at fault, `retryable` tells the caller whether the same call
    may succeed later.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool | None = None,
        field: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        default_status, default_retry = _CODES.get(code, (500, False))
        self.code = code
        self.message = message
        self.retryable = default_retry if retryable is None else retryable
        self.field = field
        self.status = status or default_status

    def __repr__(self) -> str:
        extra = f", field={self.field!r}" if self.field else ""
        return f"FunctionError({self.code!r}, {self.message!r}, retryable={self.retryable}{extra})"

    def to_body(self) -> ErrorBody:
        return ErrorBody(self.code, self.message, self.retryable, self.field)

    def encode(self) -> bytes:
        return msgspec.json.encode(ErrorEnvelope(self.to_body()))

    @classmethod
    def from_reply(cls, status: str | None, description: str | None, data: bytes) -> FunctionError:
        """Rebuild the error from a micro error reply (headers + JSON body)."""
        try:
            body = msgspec.json.decode(data, type=ErrorEnvelope).error
            return cls(
                body.code,
                body.message,
                retryable=body.retryable,
                field=body.field,
                status=_int(status),
            )
        except (msgspec.DecodeError, msgspec.ValidationError):
            st = _int(status) or 500
            return cls(_BY_STATUS.get(st, "INTERNAL"), description or "function failed", status=st)

    def to_dict(self) -> dict[str, Any]:
        # A Struct's builtins are a dict of its (non-default) fields.
        return cast("dict[str, Any]", msgspec.to_builtins(self.to_body()))


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


_AT_RE = re.compile(r"at `\$\.?([^`]*)`")
_MISSING_RE = re.compile(r"missing required field `([^`]+)`")


def invalid_request(exc: msgspec.ValidationError | msgspec.DecodeError) -> FunctionError:
    """A msgspec decoding failure as BAD_REQUEST naming the field at fault (dotted path)."""
    text = str(exc)
    if not isinstance(exc, msgspec.ValidationError):
        return FunctionError("BAD_REQUEST", f"request body is not valid JSON: {text}")
    missing = _MISSING_RE.search(text)
    at = _AT_RE.search(text)
    name = missing.group(1) if missing else None
    if at and at.group(1):
        name = f"{at.group(1)}.{name}" if name else at.group(1)
    return FunctionError("BAD_REQUEST", f"invalid request: {text}", field=name)
