"""Payload encoding: msgspec JSON both ways, one encoder per process."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

_encoder = msgspec.json.Encoder()
_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def encode(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return _encoder.encode(value)


def decoder(type_: Any) -> msgspec.json.Decoder[Any]:
    dec = _decoders.get(type_)
    if dec is None:
        dec = _decoders[type_] = msgspec.json.Decoder(type_)
    return dec


def decode(data: bytes, type_: type[T] | Any = Any) -> T:
    if type_ is bytes:
        return data  # type: ignore[return-value]
    if not data:
        data = b"null" if type_ in (Any, None, type(None)) else b"{}"
    return decoder(type_).decode(data)  # type: ignore[no-any-return]


_lax: dict[Any, msgspec.json.Decoder[Any]] = {}


def decode_lax(data: bytes, type_: type[T] | Any = Any) -> T:
    """Like `decode`, with msgspec's lax rules: strings stand for numbers and booleans (what
    a query string or path parameter holds)."""
    dec = _lax.get(type_)
    if dec is None:
        dec = _lax[type_] = msgspec.json.Decoder(type_, strict=False)
    return dec.decode(data or b"{}")  # type: ignore[no-any-return]
