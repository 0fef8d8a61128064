"""Payload encoding: msgspec JSON both ways, one encoder per process."""

from __future__ import annotations

from typing import Any, TypeVar, overload

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


# `type_` is a class or generic alias (-> a value of it) or any other type form msgspec
# decodes (a union, a Literal, `Any`...), which mypy cannot take as `type[T]`: those give Any.
@overload
def decode(data: bytes, type_: type[T]) -> T: ...
@overload
def decode(data: bytes, type_: Any = ...) -> Any: ...
def decode(data: bytes, type_: Any = Any) -> Any:
    if type_ is bytes:
        return data
    if not data:
        data = b"null" if type_ in (Any, None, type(None)) else b"{}"
    return decoder(type_).decode(data)


_lax: dict[Any, msgspec.json.Decoder[Any]] = {}


@overload
def decode_lax(data: bytes, type_: type[T]) -> T: ...
@overload
def decode_lax(data: bytes, type_: Any = ...) -> Any: ...
def decode_lax(data: bytes, type_: Any = Any) -> Any:
    """Like `decode`, with msgspec's lax rules: strings stand for numbers and booleans (what
    a query string or path parameter holds)."""
    dec = _lax.get(type_)
    if dec is None:
        dec = _lax[type_] = msgspec.json.Decoder(type_, strict=False)
    return dec.decode(data or b"{}")
