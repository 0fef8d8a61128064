"""JSON and TCP for the hook's fast path, on CPython's C accelerators.

`import json` pulls in `re` (and `enum`); `import socket` pulls in `enum` and `selectors`.
Measured here each costs about as much as starting the interpreter itself, while the C
modules underneath (`_json`, `_socket`) are built in and load in microseconds. We drive
those directly, falling back to the public `json` where `_json` is missing (other Pythons;
`socket` itself needs `_socket`).
"""

from __future__ import annotations

import _socket as _sock  # no fallback: the public `socket` module is built on it

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class _ScanContext:
    """The attributes `_json.make_scanner` reads from a JSONDecoder."""

    def __init__(self) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = {
            "NaN": float("nan"),
            "Infinity": float("inf"),
            "-Infinity": float("-inf"),
        }.__getitem__
        self.memo: dict[str, str] = {}


def _reject(obj: Any) -> Any:
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


try:
    import _json

    if TYPE_CHECKING:
        # make_scanner reads its context's attributes (a JSONDecoder's, duck-typed); the
        # stubs declare it to take a make_scanner. What it accepts and returns, for mypy:
        def _make_scanner(context: _ScanContext) -> Callable[[str, int], tuple[Any, int]]: ...
    else:
        _make_scanner = _json.make_scanner

    _scan = _make_scanner(_ScanContext())

    def _encoder(sort_keys: bool, default: Callable[[Any], Any]) -> Callable[[Any, int], Any]:
        enc: Callable[[Any, int], Any] = _json.make_encoder(
            {}, default, _json.encode_basestring, None, ": ", ", ", sort_keys, False, True
        )
        return enc

    def loads(data: str | bytes) -> Any:
        text = (data.decode("utf-8") if isinstance(data, bytes) else data).strip()
        try:
            obj, end = _scan(text, 0)
        except StopIteration as exc:
            raise ValueError(f"invalid JSON at character {exc.value}") from None
        if end != len(text):
            raise ValueError(f"extra data after JSON at character {end}")
        return obj

    def dumps(obj: Any, *, sort_keys: bool = False) -> str:
        # A fresh marker dict per call: the encoder keeps ids in it to catch cycles.
        enc = _encoder(sort_keys, str if sort_keys else _reject)
        return "".join(enc(obj, 0))

except (ImportError, AttributeError, TypeError):  # not CPython: the public module
    import json as _pyjson

    def loads(data: str | bytes) -> Any:
        return _pyjson.loads(data)

    def dumps(obj: Any, *, sort_keys: bool = False) -> str:
        return _pyjson.dumps(
            obj, ensure_ascii=False, sort_keys=sort_keys, default=str if sort_keys else None
        )


def connect(host: str, port: int, timeout: float) -> Any:
    """A connected TCP socket. Bytes for the host keep getaddrinfo off the idna codec."""
    family, kind, proto, _name, addr = _sock.getaddrinfo(host.encode(), port, 0, _sock.SOCK_STREAM)[
        0
    ]
    sock = _sock.socket(family, kind, proto)
    try:
        sock.settimeout(timeout)
        sock.connect(addr)
    except BaseException:
        sock.close()
        raise
    return sock
