"""Structured function errors: a code, a message a user can act on, and whether to retry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, cast, get_args

import msgspec

ErrorCode = Literal[
    "BAD_REQUEST",
    "UNAUTHORIZED",
    "FORBIDDEN",
    "NOT_FOUND",
    "METHOD_NOT_ALLOWED",
    "CONFLICT",
    "TOO_LARGE",
    "UNSUPPORTED_MEDIA_TYPE",
    "UNPROCESSABLE",
    "RATE_LIMITED",
    "INTERNAL",
    "NOT_IMPLEMENTED",
    "UNAVAILABLE",
    "DEADLINE_EXCEEDED",
]
"""Every code a FunctionError may carry: a typo is a type error, and refused when raised."""

STATUS_TABLE: dict[ErrorCode, tuple[int, bool]] = {
    "BAD_REQUEST": (400, False),
    "UNAUTHORIZED": (401, False),
    "FORBIDDEN": (403, False),
    "NOT_FOUND": (404, False),
    "METHOD_NOT_ALLOWED": (405, False),
    "CONFLICT": (409, True),
    "TOO_LARGE": (413, False),
    "UNSUPPORTED_MEDIA_TYPE": (415, False),
    "UNPROCESSABLE": (422, False),
    "RATE_LIMITED": (429, True),
    "INTERNAL": (500, False),
    "NOT_IMPLEMENTED": (501, False),
    "UNAVAILABLE": (503, True),
    "DEADLINE_EXCEEDED": (504, True),
}
"""code -> (NATS micro numeric status, retryable by default)."""
_BY_STATUS: dict[int, ErrorCode] = {status: code for code, (status, _) in STATUS_TABLE.items()}
_KNOWN = frozenset(get_args(ErrorCode))


class ErrorBody(msgspec.Struct, omit_defaults=True):
    code: str
    message: str
    retryable: bool
    field: str | None = None


class ErrorEnvelope(msgspec.Struct):
    error: ErrorBody


class FunctionError(Exception):
    """An error a function returns on purpose; it crosses the bus intact.

    `code` is one of ErrorCode (another is refused with ValueError), `field` names the
    request field at fault, `retryable` tells the caller whether the same call may
    succeed later.
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        retryable: bool | None = None,
        field: str | None = None,
        status: int | None = None,
    ) -> None:
        try:
            default_status, default_retry = STATUS_TABLE[code]
        except KeyError:
            raise ValueError(
                f"unknown error code {code!r}; use one of {', '.join(STATUS_TABLE)}"
            ) from None
        super().__init__(message)
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
        """Rebuild the error from a micro error reply (headers + JSON body). A code this
        version does not know (a newer or foreign worker's) arrives as INTERNAL, its status
        kept."""
        try:
            body = msgspec.json.decode(data, type=ErrorEnvelope).error
            return cls(
                known_code(body.code),
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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FunctionError:
        """The error `to_dict` gave; a code this version does not know is INTERNAL."""
        retryable = data.get("retryable")
        field = data.get("field")
        return cls(
            known_code(str(data.get("code", "INTERNAL"))),
            str(data.get("message", "")),
            retryable=retryable if isinstance(retryable, bool) else None,
            field=field if isinstance(field, str) else None,
        )


def known_code(code: str) -> ErrorCode:
    """`code` as an ErrorCode, INTERNAL when it is none of them (a code read off the wire)."""
    return cast("ErrorCode", code) if code in _KNOWN else "INTERNAL"


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
