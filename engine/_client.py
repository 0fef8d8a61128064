"""Calling functions by id: request/reply with a deadline, or fire-and-forget."""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, overload

import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from engine import _codec, _tracing
from engine._clock import CONFIG as CLOCK_CONFIG
from engine._clock import STREAM as CLOCK_STREAM
from engine._clock import SUBJECT as CLOCK_SUBJECT
from engine._clock import BusClock
from engine._connect import default_replicas
from engine._connection import Connection
from engine._errors import FunctionError
from engine._kv import Bucket
from engine._objects import Objects
from engine._streams import Stream
from engine._tracing import SpanKind
from engine.protocol import (
    ERROR_CODE_HEADER,
    ERROR_HEADER,
    HDR_DEADLINE,
    subject_for,
)
from engine.settings import engine_settings

T = TypeVar("T")
HDR_TRACE_DEST = "Nats-Trace-Dest"
TRACE_DEST_DISABLED = "trace disabled"


@functools.cache
def _skip_server_trace() -> bool:
    return not engine_settings().server_trace


LocalCall = Callable[[bytes, dict[str, str]], Awaitable[tuple[bytes, dict[str, str]]]]
"""A function served in this process: (request bytes, headers) -> (reply bytes, headers)."""

DEFAULT_TIMEOUT = 30.0
_SUBJECTS: dict[str, str] = {}


def _subject(function_id: str) -> str:
    subject = subject_for(function_id)
    if len(_SUBJECTS) < 10_000:
        _SUBJECTS[function_id] = subject
    return subject


class Client:
    """What any process on the bus uses to reach functions and state."""

    def __init__(self, nc: NATS, *, replicas: int | None = None) -> None:
        self.nc = nc
        self.connection = Connection(nc, default_replicas() if replicas is None else replicas)
        """What the bus modules share: the connection, its JetStream context, the reply
        inbox."""
        self._requester = self.connection.requester
        self._clock = BusClock(
            nc, lambda: self.stream(CLOCK_STREAM, [f"{CLOCK_SUBJECT}.>"], **CLOCK_CONFIG).ensure()
        )
        self._buckets: dict[str, Bucket] = {}
        self._objects: dict[str, Objects] = {}
        self._declared: set[tuple[str, str]] = set()
        """(bucket, config) already made or reconciled by this client: a declaration is
        checked once per process, however often the bucket is opened."""
        self._local: dict[str, LocalCall] = {}

    @property
    def replicas(self) -> int:
        """JetStream replicas of the buckets, streams and object stores this client creates
        when their caller names none: the instance's `nats.replicas` (ENGINE_REPLICAS)."""
        return self.connection.replicas

    def serve_locally(self, function_id: str, call: LocalCall) -> None:
        """Calls to `function_id` made through this client run in-process (set by the worker
        that serves it): same encoding, headers, deadline, tracing and errors as the bus,
        without the two hops through nats-server."""
        self._local[function_id] = call

    def stop_serving_locally(self) -> None:
        self._local.clear()

    @overload
    async def call(
        self,
        function_id: str,
        payload: Any = None,
        *,
        response: type[T],
        timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> T: ...

    @overload
    async def call(
        self,
        function_id: str,
        payload: Any = None,
        *,
        response: None = None,
        timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> Any: ...

    async def call(
        self,
        function_id: str,
        payload: Any = None,
        *,
        response: Any = None,
        timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> Any:
        """Call a function and wait for its reply.

        `deadline` (epoch seconds) is the caller's own, inherited by nested calls; the
        effective one is the earlier of it and now + `timeout`. Raises FunctionError: the
        callee's own error, UNAVAILABLE when nothing serves the id, DEADLINE_EXCEEDED when
        no reply came in time (both retryable).
        """
        now = time.time()
        limit = now + (timeout if timeout is not None else DEFAULT_TIMEOUT)
        if deadline is not None and deadline < limit:
            limit = deadline
        remaining = limit - now
        if remaining <= 0:
            raise FunctionError(
                "DEADLINE_EXCEEDED", f"deadline passed before calling {function_id}"
            )
        hdrs = dict(headers) if headers else {}
        hdrs[HDR_DEADLINE] = str(int(limit * 1000))  # docs/PROTOCOL.md: epoch milliseconds
        span = None
        if _tracing.active:
            span = _tracing.start(
                f"call {function_id}",
                SpanKind.CLIENT,
                {
                    "faas.invoked_name": function_id,
                    "faas.invoked_provider": "engine",
                },
            )
            if span.sampled and _skip_server_trace():
                # A sampled traceparent makes nats-server (2.11+) parse every header into a
                # map and check the account for its own message tracing, then drop it when
                # none is configured: a few µs per request. Its documented "disabled" value,
                # seen first, ends that check at once. ENGINE_NATS_MSG_TRACE=on keeps it.
                hdrs[HDR_TRACE_DEST] = TRACE_DEST_DISABLED
            _tracing.inject(hdrs, span)
        if span is None:
            return await self._request(function_id, payload, response, remaining, hdrs)
        try:
            return await self._request(function_id, payload, response, remaining, hdrs)
        except FunctionError as err:
            _tracing.fail(span, err.code, err.message)
            raise
        finally:
            span.end()

    async def _request(
        self,
        function_id: str,
        payload: Any,
        response: Any,
        remaining: float,
        hdrs: dict[str, str],
    ) -> Any:
        rh: Mapping[str, str] | None
        try:
            local = self._local.get(function_id)
            if local is not None:
                data, rh = await local(_codec.encode(payload), hdrs)
            else:
                subject = _SUBJECTS.get(function_id) or _subject(function_id)
                msg = await self._requester.request(
                    subject, _codec.encode(payload), remaining, hdrs
                )
                data, rh = msg.data, msg.headers
        except nats.errors.NoRespondersError:
            raise FunctionError(
                "UNAVAILABLE", f"no worker serves {function_id} right now", retryable=True
            ) from None
        except nats.errors.MaxPayloadError:
            # Bigger than the bus carries (nats-server max_payload): the caller's to shrink.
            raise FunctionError(
                "TOO_LARGE",
                f"the request to {function_id} exceeds the bus's largest message "
                f"({self.nc.max_payload} bytes)",
            ) from None
        except nats.errors.TimeoutError:
            raise FunctionError(
                "DEADLINE_EXCEEDED", f"{function_id} did not answer within {remaining:.3f}s"
            ) from None
        except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError) as exc:
            raise FunctionError(
                "UNAVAILABLE",
                f"bus connection closed while calling {function_id}: {exc}",
                retryable=True,
            ) from None
        if rh and ERROR_CODE_HEADER in rh:
            raise FunctionError.from_reply(rh.get(ERROR_CODE_HEADER), rh.get(ERROR_HEADER), data)
        if response is None:
            return _codec.decode(data, Any) if data else None
        try:
            return _codec.decode(data, response)
        except Exception as exc:  # a reply that breaks the declared contract
            raise FunctionError(
                "INTERNAL", f"{function_id} replied with an invalid body: {exc}"
            ) from None

    async def request(
        self, subject: str, data: bytes, timeout: float, headers: dict[str, str] | None = None
    ) -> Msg:
        """A plain NATS request on this connection's shared reply inbox (JetStream publishes
        that need their ack, for instance). Raises nats-py's errors as they are."""
        return await self._requester.request(subject, data, timeout, headers)

    @property
    def requests_in_flight(self) -> int:
        """Requests on the shared reply inbox still waiting for their reply."""
        return self._requester.in_flight

    async def fire(
        self, function_id: str, payload: Any = None, *, headers: Mapping[str, str] | None = None
    ) -> None:
        """Fire and forget: at-most-once, no reply. Use a queue trigger for durable work."""
        await self.nc.publish(
            subject_for(function_id),
            _codec.encode(payload),
            headers=dict(headers) if headers else None,
        )

    def _first(self, bucket: str, config: dict[str, Any]) -> bool:
        key = (bucket, repr(sorted(config.items())))
        if key in self._declared:
            return False
        self._declared.add(key)
        return True

    async def bucket(self, bucket: str, **config: Any) -> Bucket:
        """A KV bucket, created on first use with `config` (history, ttl, replicas...;
        `replicas` defaults to the client's), or brought to `config` where it exists with
        other settings (only what is passed is declared: see Bucket.open)."""
        st = self._buckets.get(bucket)
        if st is None or (config and self._first(bucket, config)):
            opened = await Bucket.open(self.connection, bucket, **config)
            self._first(bucket, config)
            st = self._buckets.setdefault(bucket, opened)
        return st

    async def bus_time(self) -> float:
        """Now, in seconds since the epoch, by the clock JetStream stamps messages and runs
        TTLs and schedules with (measured every minute; this host's own clock may be off)."""
        return await self._clock.now()

    def stream(self, name: str, subjects: list[str] | None = None, **config: Any) -> Stream:
        """A JetStream stream: `await .ensure()` creates it with `subjects` and `config`
        (nats-py StreamConfig fields: duplicate_window, max_age, storage...) if missing, or
        brings it to them (`num_replicas` defaults to the client's at creation)."""
        return Stream(self.connection, name, subjects, config)

    async def objects(self, bucket: str, **config: Any) -> Objects:
        """An object store bucket, created on first use with `config` (nats-py's
        create_object_store arguments; `replicas` defaults to the client's), or brought to
        `config` where it exists with other settings."""
        got = self._objects.get(bucket)
        if got is None or (config and self._first("OBJ_" + bucket, config)):
            opened = await Objects.open(self.connection, bucket, **config)
            self._first("OBJ_" + bucket, config)
            got = self._objects.setdefault(bucket, opened)
        return got
