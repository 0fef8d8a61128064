"""The one module that uses nats-py's private attributes: two measured hot-path gains and
one ordering fix, only on the nats-py versions they were verified against (VERIFIED_NATS_PY),
with nats-py's public behaviour everywhere else. Nothing else in the engine (or outside it)
reaches into nats-py.

1. Faster header parsing and encoding, installed per connection (engine/_connect.py).
   Measured: encode 2 headers 2.97 -> 1.02 us, parse 2.83 -> 1.22 us; in the in-process
   call path the caller saves 1.8 us untraced / 3.1 us traced per call, the worker 1.3 /
   2.5 us (commit a51e57c).
2. Micro endpoints that hand raw messages to our dispatcher (`fast_endpoints`), skipping
   nats-py micro's per-message Request wrapper and timing (our own stats redo both), and
   that keep micro's STATS counters true although our calls finish in their own tasks.
   The measured gain is stated on `fast_endpoints`. Without it the endpoints take micro's
   public handler path, and STATS report micro's own counts (the accurate figures of our
   calls are in each endpoint's `data` either way).
3. A `flush()` that keeps its promise (`_send_ping`): nats-py writes flush's PING to the
   socket at once, ahead of a SUB or PUB still queued for its flusher task, so the PONG
   could come back before the server had them: a subscription "flushed" could miss a
   message another connection published right after (a worker said ready before its
   endpoints were subscribed). Here the PING is queued behind them.

Every engine call carries headers (Engine-Deadline; `traceparent` when traced), so nats-py's
header code runs on every request: its parser walks each header name character by character
in a generator (`any(c.isspace() for c in key)`) and its encoder runs a regex, a `translate`
and six buffer appends per header. Here the same results come from a cache of header names
(the few names a process sees recur on every message) and one join.

Each function is equivalent to the nats-py code it replaces for every input: the property
tests in tests/engine/test_headers.py compare them with nats-py's own on arbitrary bytes and
strings. They are installed as instance attributes of a connection (nats-py calls them as
`self._parse_header_lines(...)`, `self._process_headers(...)`, `self._send_publish(...)`),
never in site-packages, and only on the nats-py versions they were checked against.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, Protocol, TypeVar

from nats import errors
from nats.aio import client as _nats_client
from nats.aio.client import Client as NATS
from nats.protocol.command import hpub_cmd

from engine.settings import engine_settings

VERIFIED_NATS_PY = frozenset({"2.16.0"})
"""nats-py versions whose `_parse_header_lines`, `_process_headers`, `_send_publish` and
`_send_ping` these replacements were proven against; on any other the connection keeps
nats-py's own."""

_CACHE_LIMIT = 512
# Header name as received (unstripped bytes) -> the dict key, or None when nats-py drops it.
_NAMES: dict[bytes, str | None] = {}
# Header name as given (str) -> b"<stripped name>: ", for names nats-py accepts.
_KEYS: dict[str, bytes] = {}
_MISS: Any = object()
_KEY_RE = _nats_client._HEADER_KEY_RE
_NEWLINES = _nats_client._HEADER_VALUE_NEWLINES
_HDR_LINE = bytes(_nats_client.NATS_HDR_LINE) + b"\r\n"
_ORIG_PARSE = NATS._parse_header_lines
P = ParamSpec("P")
R = TypeVar("R")


def _name_key(name: bytes) -> str | None:
    """nats-py's rule for one header name: stripped, ASCII, no whitespace inside."""
    try:
        key = name.strip().decode("ascii")
    except UnicodeDecodeError:
        return None
    if any(c.isspace() for c in key):
        return None
    return key


def parse_header_lines(raw: bytes) -> dict[str, str]:
    """`nats.aio.client.Client._parse_header_lines`, with header names looked up in a cache."""
    if raw.__class__ is not bytes:
        return _ORIG_PARSE(raw)
    out: dict[str, str] = {}
    names = _NAMES
    for line in raw.split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if not sep:  # also an empty line
            continue
        key = names.get(name, _MISS)
        if key is _MISS:
            key = _name_key(name)
            if len(names) < _CACHE_LIMIT:
                names[name] = key
        if key is not None:
            out[key] = value.strip().decode("utf-8", "replace")
    return out


def encode_headers(headers: dict[str, str]) -> bytes:
    """The header block nats-py's `_send_publish` builds (NATS/1.0 line, `Key: value` lines,
    blank line), raising the same BadHeaderError for an invalid name."""
    keys = _KEYS
    parts = [_HDR_LINE]
    for k, v in headers.items():
        prefix = keys.get(k)
        if prefix is None:
            key = k.strip()
            if not key:
                continue
            if not _KEY_RE.fullmatch(key):
                raise errors.BadHeaderError(key)
            prefix = key.encode() + b": "
            if len(keys) < _CACHE_LIMIT:
                keys[k] = prefix
        value = v.strip()
        if "\r" in value or "\n" in value:
            value = value.translate(_NEWLINES)
        parts.append(prefix + value.encode() + b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


class _ProcessHeaders(Protocol):
    """The shape of nats-py's `Client._process_headers`, bound."""

    def __call__(self, headers: bytes | None) -> Coroutine[Any, Any, dict[str, str] | None]: ...


class _SendPublish(Protocol):
    """The shape of nats-py's `Client._send_publish`, bound."""

    def __call__(
        self,
        subject: str,
        reply: str,
        payload: bytes,
        payload_size: int,
        headers: dict[str, Any] | None,
    ) -> Coroutine[Any, Any, None]: ...


def _process_headers(nc: NATS) -> _ProcessHeaders:
    """nats-py's `_process_headers` for this connection, the common case (no inline status
    line: the header block right after `NATS/1.0\\r\\n`) parsed without its detours."""
    original = nc._process_headers

    async def process_headers(headers: bytes | None) -> dict[str, str] | None:
        if headers and len(headers) > 10 and headers[8] != 32:
            return parse_header_lines(headers[10:]) or None
        return await original(headers)

    return process_headers


def _send_publish(nc: NATS) -> _SendPublish:
    """nats-py's `_send_publish` for this connection, with `encode_headers`."""
    original = nc._send_publish

    async def send_publish(
        subject: str, reply: str, payload: bytes, payload_size: int, headers: dict[str, Any] | None
    ) -> None:
        if headers is None or subject == "":
            return await original(subject, reply, payload, payload_size, headers)
        cmd = hpub_cmd(subject, reply, encode_headers(headers), payload)
        stats = nc.stats
        stats["out_msgs"] += 1
        stats["out_bytes"] += payload_size
        await nc._send_command(cmd)
        if nc._flush_queue is not None and nc._flush_queue.empty():
            await nc._flush_pending()

    return send_publish


_PING = _nats_client.PING_PROTO


class _SendPing(Protocol):
    """The shape of nats-py's `Client._send_ping`, bound."""

    def __call__(self, future: asyncio.Future[Any] | None = None) -> Coroutine[Any, Any, None]: ...


def _send_ping(nc: NATS) -> _SendPing:
    """nats-py's `_send_ping` with the PING queued behind the commands already pending, so
    its PONG means the server has them all (nats-py writes it ahead of them)."""

    async def send_ping(future: asyncio.Future[Any] | None = None) -> None:
        nc._pongs.append(future if future is not None else asyncio.Future())
        await nc._send_command(_PING)
        await nc._flush_pending()

    return send_ping


def _verified() -> bool:
    return _nats_client.__version__ in VERIFIED_NATS_PY and engine_settings().natspy_fast


def install(nc: NATS) -> bool:
    """Use the faster header code on `nc` (a connection made by nats-py's Client); False,
    and the header code unchanged, on a nats-py version it was not checked against or with
    ENGINE_NATSPY_FAST off. The flush fix is no speed-up: a checked version gets it always."""
    if _nats_client.__version__ not in VERIFIED_NATS_PY:
        return False
    _shadow(nc, nc._send_ping)(_send_ping(nc))
    if not _verified():
        return False
    _shadow(nc, nc._parse_header_lines)(parse_header_lines)
    if getattr(_nats_client, "parse_email", None) is None:  # else nats-py uses fast_mail_parser
        _shadow(nc, nc._process_headers)(_process_headers(nc))
    _shadow(nc, nc._send_publish)(_send_publish(nc))
    return True


def _shadow(nc: NATS, method: Callable[P, R]) -> Callable[[Callable[P, R]], None]:
    """`_shadow(nc, nc.<name>)(replacement)` sets `replacement` as an attribute of the
    connection itself (its `__dict__`): nats-py calls `self.<name>(...)`, so this connection,
    and no other, runs it. In two steps so that mypy checks that the replacement takes and
    returns what the method does (an attribute assignment would be a `method-assign` error)."""

    def put(replacement: Callable[P, R]) -> None:
        vars(nc)[method.__name__] = replacement

    return put


# ---- micro endpoints ---------------------------------------------------------------------
class EndpointCounters:
    """What micro's `$SRV.STATS` reports of one endpoint, kept true for calls that finish
    after the endpoint callback returned (ours run in their own tasks). On an unverified
    nats-py version, or through the public handler path, these are no-ops."""

    __slots__ = ("_ep",)

    def __init__(self, ep: Any) -> None:
        self._ep = ep

    def request(self) -> None:
        if self._ep is not None:
            self._ep._num_requests += 1

    def error(self, text: str) -> None:
        if self._ep is not None:
            self._ep._num_errors += 1
            self._ep._last_error = text

    def busy(self, ns: int) -> None:
        ep = self._ep
        if ep is not None:
            ep._processing_time += ns
            ep._average_processing_time = ep._processing_time // max(ep._num_requests, 1)

    @property
    def name(self) -> str:
        return str(self._ep._name) if self._ep is not None else ""


NO_COUNTERS = EndpointCounters(None)


def fast_endpoints(
    service: Any, dispatchers: list[Callable[[Any], Awaitable[Any]]]
) -> list[EndpointCounters] | None:
    """Point each endpoint's subscription (in the order they were added) straight at its
    dispatcher, counting requests as micro would; None when not verified (the endpoints
    keep micro's handler, given by the caller through the public `add_endpoint`).

    Measured with ops/bench/invoke.py --quick, ENGINE_NATSPY_FAST=off vs on, two
    alternating pairs, /proc CPU per call (2026-12-01): the worker spends 13.3-14.5 us per
    untraced call without this and the header code, 11.6-12.1 us with them; traced 18.9-20.0
    vs 16.4-16.6 us. The micro wrapper costs a Request object, two perf_counter_ns calls
    and an extra await per message."""
    if not _verified():
        return None
    endpoints = list(service._endpoints)
    if len(endpoints) != len(dispatchers):
        return None
    out = []
    for ep, dispatch in zip(endpoints, dispatchers, strict=True):
        ep._subscription._cb = _counting(ep, dispatch)
        out.append(EndpointCounters(ep))
    return out


def subscriptions(service: Any) -> list[Any]:
    """The endpoints' subscriptions (to drain them before the service stops)."""
    if not _verified():
        return []
    return [ep._subscription for ep in service._endpoints if ep._subscription is not None]


def _counting(
    ep: Any, dispatch: Callable[[Any], Awaitable[Any]]
) -> Callable[[Any], Awaitable[None]]:
    async def on_msg(msg: Any) -> None:
        ep._num_requests += 1
        await dispatch(msg)

    return on_msg
