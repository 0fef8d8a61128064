"""A JetStream stream as functions use it: ensure it exists, publish with an acknowledgement
(traced like a call), read it in pages, follow it from a sequence, purge subjects.

Tracing: a publish inside a recorded trace is a PRODUCER span, child of the current one,
and its `traceparent` travels in the message headers; a follower's handler runs under a
CONSUMER span that continues the trace of the message it got (messages without one run
untraced). Deadlines: a publish waits for its ack at most `timeout` seconds (default
`ACK_TIMEOUT`), never past `deadline` (epoch seconds, as a call's), and raises BusError
(DEADLINE_EXCEEDED) when none came.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import msgspec
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy, ExternalStream, StreamConfig, StreamSource

from engine import _codec, _jetstream, _reconcile, _scan, _tracing
from engine._bus_errors import BusError, translate
from engine._connection import Connection
from engine._errors import FunctionError
from engine._jetstream_api import PubAck, SourceInfo, StreamInfo
from engine._scan import StreamMessage

log = logging.getLogger("engine.streams")

ACK_TIMEOUT = 5.0
HEARTBEAT = 5.0
Handler = Callable[[StreamMessage], Awaitable[None]]
"""What a follower runs per message, in stream order, one at a time."""

HDR_EXPECTED_STREAM = "Nats-Expected-Stream"
HDR_MSG_ID = "Nats-Msg-Id"
HDR_EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
_CONSUMER = _tracing.SpanKind.CONSUMER
_PRODUCER = _tracing.SpanKind.PRODUCER


def _producer_span(stream: str, subject: str) -> _tracing.LeanSpan | None:
    # As KV writes: only inside a recorded trace, a child of the call that made it.
    if not _tracing.active or not _tracing.current_span().is_recording():
        return None
    return _tracing.start(
        f"publish {stream}",
        _PRODUCER,
        {
            "messaging.system": "nats",
            "messaging.operation.name": "publish",
            "messaging.destination.name": subject,
        },
    )


class Source(msgspec.Struct, frozen=True, omit_defaults=True):
    """A stream another stream copies messages from: `stream` on this server, or in the
    JetStream domain `domain` (a peer reached over a leaf link); only its subjects matching
    `filter`. The copying stream keeps its place: after an outage it resumes where it was."""

    stream: str
    domain: str | None = None
    filter: str = ""

    def wire(self) -> dict[str, Any]:
        # From the source's first message when nothing of it has been copied yet: left
        # unset, nats-server starts a new source at the time of the copying stream's last
        # message, and what the peer wrote before that (a record it announced while the
        # link was coming up) is never copied. Once some are, it resumes after the last.
        out: dict[str, Any] = {"name": self.stream, "opt_start_seq": 1}
        if self.filter:
            out["filter_subject"] = self.filter
        if self.domain:
            out["external"] = {"api": f"$JS.{self.domain}.API"}
        return out

    def nats(self) -> StreamSource:
        ext = ExternalStream(api=f"$JS.{self.domain}.API") if self.domain else None
        return StreamSource(name=self.stream, filter_subject=self.filter or None, external=ext)

    @classmethod
    def from_info(cls, info: SourceInfo) -> Source:
        api = info.external.api if info.external else ""
        domain = api.removeprefix("$JS.").removesuffix(".API") if api else None
        return cls(info.name, domain or None, info.filter_subject)


class SourceStatus(msgspec.Struct, frozen=True):
    """How a source is doing: messages it has that were not copied yet (`lag`), seconds
    since it was last heard from (`active`, None: not yet), the server's last error."""

    source: Source
    lag: int
    active: float | None
    error: str = ""


class Stream:
    """A handle on one stream (`Client.stream`); nothing is asked of the server until used."""

    def __init__(
        self, conn: Connection, name: str, subjects: list[str] | None, config: dict[str, Any]
    ) -> None:
        self.connection = conn
        self.name = name
        self.subjects = subjects
        self.config = config

    def declared(self) -> dict[str, Any]:
        """What this handle declares, in the API's form (only the fields it names)."""
        out = {k: _reconcile.declared_wire(k, v) for k, v in self.config.items()}
        if self.subjects is not None:
            out["subjects"] = list(self.subjects)
        return out

    async def ensure(self) -> Stream:
        """Create the stream with this handle's subjects and config, or bring an existing
        one to them: the fields named here are updated in place where JetStream allows it,
        and ConfigDrift says what to do where it does not (see engine/_reconcile.py). A
        peer creating it concurrently is fine. A JetStream without quorum is waited for
        (engine/_jetstream.py `patiently`)."""
        await _jetstream.patiently(self._ensure, f"ensuring stream {self.name}")
        return self

    async def _ensure(self) -> None:
        try:
            await _reconcile.stream(self.connection, self.name, self.declared())
            return
        except _jetstream.NotFound:
            pass
        config = {"num_replicas": self.connection.replicas, **self.config}
        if "sources" in config:
            config["sources"] = [
                s.nats() if isinstance(s, Source) else s for s in config["sources"]
            ]
        cfg = StreamConfig(name=self.name, subjects=self.subjects, **config)
        js = self.connection.js
        try:
            await js.add_stream(cfg)
        except Exception as exc:
            try:  # created by a peer meanwhile: then it must be as declared too
                await _reconcile.stream(self.connection, self.name, self.declared())
            except _jetstream.NotFound:
                raise translate(exc, f"creating stream {self.name}") from None
        if (cfg.num_replicas or 1) > 1:
            await _jetstream.wait_for_leader(self.connection, self.name)

    async def ensure_consumer(
        self,
        durable: str,
        *,
        filter_subject: str | None = None,
        deliver_policy: str = "all",
        max_ack_pending: int = 1,
        ack_wait: float = 6.0,
        max_deliver: int = -1,
    ) -> None:
        """A durable pull consumer with explicit acks, made as declared or brought to it
        (ConfigDrift for what JetStream cannot change in place, such as the deliver policy:
        the consumer's position is what makes a restart resume). NotFound when the stream
        does not exist (yet)."""
        declared: dict[str, Any] = {
            "ack_policy": "explicit",
            "deliver_policy": deliver_policy,
            "max_ack_pending": max_ack_pending,
            "ack_wait": _reconcile.declared_wire("ack_wait", ack_wait),
            "max_deliver": max_deliver,
            "filter_subject": filter_subject or "",
        }
        await _reconcile.consumer(self.connection, self.name, durable, declared)

    async def publish(
        self,
        subject: str,
        value: Any,
        *,
        msg_id: str | None = None,
        expect_last_subject_seq: int | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
        deadline: float | None = None,
    ) -> PubAck:
        """Store `value` (bytes as they are, anything else as msgspec JSON) on `subject` and
        wait for the ack. `msg_id` makes a retry within the duplicate window a no-op (the
        ack says `duplicate`); `expect_last_subject_seq` stores only if the subject's last
        message has that sequence (0: the subject is empty), else WrongLastSequence.
        Raises BusError when JetStream could not take it."""
        data = value if value.__class__ is bytes else _codec.encode(value)
        hdrs = {HDR_EXPECTED_STREAM: self.name}
        if msg_id:
            hdrs[HDR_MSG_ID] = msg_id
        if expect_last_subject_seq is not None:
            hdrs[HDR_EXPECTED_LAST_SUBJECT_SEQ] = str(expect_last_subject_seq)
        if headers:
            hdrs.update(headers)
        wait = ACK_TIMEOUT if timeout is None else timeout
        if deadline is not None:
            wait = min(wait, deadline - time.time())
            if wait <= 0:
                raise BusError(
                    f"deadline passed before publishing to {subject}", code="DEADLINE_EXCEEDED"
                )
        span = _producer_span(self.name, subject)
        if span is None:
            return await _jetstream.publish(self.connection, subject, data, hdrs, wait)
        if msg_id:
            span.set_attribute("messaging.message.id", msg_id)
        _tracing.inject(hdrs, span)
        try:
            return await _jetstream.publish(self.connection, subject, data, hdrs, wait)
        except FunctionError as err:
            _tracing.fail(span, err.code, err.message)
            raise
        finally:
            span.end()

    async def info(self, timeout: float | None = None) -> StreamInfo:
        """Messages, bytes, sequences and subject count now; NOT_FOUND if it does not exist.
        Waits at most `timeout` seconds (default the JetStream API's), then raises BusError
        (DEADLINE_EXCEEDED): on a cluster a stream electing its leader answers nothing."""
        if timeout is None:
            return await _jetstream.stream_info(self.connection, self.name)
        return await _jetstream.stream_info(self.connection, self.name, timeout)

    async def get(self, seq: int, *, timeout: float | None = None) -> StreamMessage | None:
        """The message at `seq`, None when there is none (deleted, or not written yet).
        Raises BusError when no answer came within `timeout` (default the API's)."""
        got = await _jetstream.message(
            self.connection, self.name, seq, _jetstream.API_TIMEOUT if timeout is None else timeout
        )
        return StreamMessage(seq, got[0], got[1]) if got is not None else None

    async def delete_message(
        self, seq: int, *, erase: bool = True, timeout: float | None = None
    ) -> bool:
        """Remove the message at `seq`; `erase` overwrites its bytes on disk too (what a
        forget owes its owner). False when there was none. Raises BusError when JetStream
        could not do it."""
        return await _jetstream.delete_message(
            self.connection,
            self.name,
            seq,
            erase=erase,
            timeout=_jetstream.API_TIMEOUT if timeout is None else timeout,
        )

    async def subject_counts(self, pattern: str) -> dict[str, int]:
        """The subjects matching `pattern` that hold messages, with how many each holds,
        from the stream's own per-subject state (no message is read)."""
        return await _jetstream.stream_subjects(self.connection, self.name, pattern)

    async def last_seq(self, subject: str, *, timeout: float | None = None) -> int:
        """The sequence of the last message on `subject` (an exact subject), 0 when there is
        none: how far a reader must have applied the stream to have seen that subject's
        writes. Raises BusError when no answer came within `timeout` (default the API's)."""
        return await _jetstream.last_seq(
            self.connection,
            self.name,
            subject,
            _jetstream.API_TIMEOUT if timeout is None else timeout,
        )

    async def stored_at(self, seq: int, *, timeout: float | None = None) -> float | None:
        """When the server stored the message at `seq` (epoch seconds); None if there is none."""
        return await _jetstream.stored_at(
            self.connection, self.name, seq, _jetstream.API_TIMEOUT if timeout is None else timeout
        )

    async def seq_at(self, when: float, *, timeout: float | None = None) -> int | None:
        """The first sequence the server stored at or after `when` (epoch seconds); None when
        nothing was stored since: where to start reading what was written from a time on."""
        return await _jetstream.seq_at(
            self.connection, self.name, when, _jetstream.API_TIMEOUT if timeout is None else timeout
        )

    def read(
        self,
        *,
        after: int = 0,
        subject: str = "",
        page: int = _scan.PAGE,
        timeout: float = _scan.FETCH_TIMEOUT,
        headers_only: bool = False,
    ) -> AsyncGenerator[StreamMessage, None]:
        """The messages after sequence `after` on `subject` ("" for all), in order, `page`
        at a time; ends at the last message stored when it started. Close it (`aclosing`)
        when leaving early. Raises BusError if a page does not come within `timeout`.
        `headers_only`: the messages without their data (subjects and sequences)."""
        return _scan.read_stream(
            self.connection, self.name, subject, after, page, timeout, headers_only
        )

    async def follow(
        self,
        handler: Handler,
        *,
        start_seq: int = 1,
        subject: str = "",
        heartbeat: float = HEARTBEAT,
        timeout: float | None = None,
    ) -> Follower:
        """Run `handler` on every message from `start_seq` on, then on each new one, in
        order (an ordered consumer: nothing kept on the server). Across reconnects and
        server restarts it resumes after the last message handled (found within two
        `heartbeat`s). A handler that raises is logged and the next message follows.
        `timeout`: how long creating its consumer may take (default the API's); on a
        cluster, creating one waits for a meta leader."""
        follower = Follower(self.name, handler)
        config = ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=max(start_seq, 1)
        )
        js = self.connection.jetstream(timeout)
        try:
            follower._sub = await js.subscribe(
                subject,
                stream=self.name,
                cb=follower._on_msg,
                ordered_consumer=True,
                config=config,
                idle_heartbeat=heartbeat,
            )
        except Exception as exc:
            raise translate(exc, f"following {self.name}") from None
        return follower

    async def settle(self, **config: Any) -> list[str]:
        """Give an existing stream these settings (in the API's units: durations in
        nanoseconds) where it holds others, the rest of its config left as it is: what a
        layout change does to a stream an older version made. The names changed."""
        raw, _ = await _jetstream.raw_stream_info(self.connection, self.name)
        changed = [k for k, v in config.items() if raw.get(k) != v]
        if changed:
            raw.update({k: config[k] for k in changed})
            await _jetstream.update_stream(self.connection, raw)
        return changed

    async def stored_subjects(self) -> list[str]:
        """The subjects the stream is configured with now (NotFound if it does not exist):
        what `ensure` would change when this handle declares others."""
        config, _ = await _jetstream.raw_stream_info(self.connection, self.name)
        got = config.get("subjects")
        return [str(s) for s in got] if isinstance(got, list) else []

    async def set_sources(self, sources: list[Source]) -> None:
        """Copy from exactly these sources from now on (each keeps its place if it was one
        before); the rest of the stream's config is left as it is."""
        config, _ = await _jetstream.raw_stream_info(self.connection, self.name)
        config["sources"] = [s.wire() for s in sources]
        await _jetstream.update_stream(self.connection, config)

    async def sources(self) -> list[SourceStatus]:
        """The stream's sources and how far each has been copied."""
        _, states = await _jetstream.raw_stream_info(self.connection, self.name)
        return [
            SourceStatus(
                Source.from_info(st),
                st.lag,
                None if st.active is None or st.active < 0 else st.active / 1e9,
                st.error_text(),
            )
            for st in states
        ]

    async def remove(self) -> None:
        """Delete the stream and every message in it (NotFound if there is none)."""
        await _jetstream.delete(self.connection, f"STREAM.DELETE.{self.name}")

    async def purge(self, subject: str = "") -> int:
        """Remove the messages on `subject` (wildcards allowed; "" for all) with no
        tombstone; how many went (0 for a stream that does not exist)."""
        return await _jetstream.purge(self.connection, self.name, subject)


class Follower:
    """A running `Stream.follow`; `stop()` ends it."""

    def __init__(self, stream: str, handler: Handler) -> None:
        self.stream = stream
        self.handler = handler
        self.last_seq = 0
        """The last message handed to the handler."""
        self._sub: Any = None
        self._span_name = f"process {stream}"

    async def _on_msg(self, msg: Msg) -> None:
        md = msg.metadata
        seq = md.sequence.stream
        sm = StreamMessage(seq, msg.subject, msg.data, md.num_pending, md.timestamp.timestamp())
        self.last_seq = seq
        span = None
        if _tracing.active and msg.headers:
            parent = _tracing.extract(msg.headers)
            if parent is not None:
                span = _tracing.start(
                    self._span_name,
                    _CONSUMER,
                    {
                        "messaging.system": "nats",
                        "messaging.operation.name": "process",
                        "messaging.destination.name": msg.subject,
                    },
                    parent,
                )
        # The subscription's task keeps the context it was made in: the handler sees only
        # the message's own trace.
        token = _tracing.current_parent.set(span)
        try:
            await self.handler(sm)
        except Exception as exc:
            log.exception("%s: the handler failed on message %d", self.stream, seq)
            if span is not None:
                _tracing.fail(span, "INTERNAL", f"{type(exc).__name__}: {exc}")
        finally:
            _tracing.current_parent.reset(token)
            if span is not None:
                span.end()

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):  # a closed connection: nothing to undo
                await self._sub.unsubscribe()
            self._sub = None
