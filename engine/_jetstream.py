"""JetStream requests on a connection's shared reply inbox, their replies decoded by msgspec:
publish-and-ack, stream info (with its subject listing paged), one message by sequence and
subject purges. The requests and replies themselves are declared in engine/_jetstream_api.py.

Why not nats-py's JetStream wrappers here: they decode every reply with `json` into
dataclasses and wait through `asyncio.wait_for`. The observe hot path acknowledges two
writes per call (ops/bench/ingest.py) and a graph query reads the stream's last sequence
each time; a plain request (engine/_requests.py) with a msgspec-decoded reply costs about
half. The wire is JetStream's documented API ($JS.API.*, publish acks), so nothing here
depends on nats-py's internals.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec
import nats.errors
import nats.js.errors

from engine._bus_errors import WRONG_LAST_SEQUENCE, BusError, WrongLastSequence, translate
from engine._connection import Connection
from engine._errors import FunctionError
from engine._jetstream_api import (
    API,
    CONSUMER_NOT_FOUND,
    MESSAGE_NOT_FOUND,
    NO_MESSAGE_FOUND,
    SEQUENCE_NOT_FOUND,
    STREAM_NOT_FOUND,
    UNAVAILABLE,
    AckReply,
    ApiError,
    ByTimeRequest,
    ConsumerCreateRequest,
    ConsumerInfoReply,
    DeleteReply,
    LastBySubjectRequest,
    LastMessage,
    MsgDeleteRequest,
    MsgGetReply,
    MsgGetRequest,
    MultiLastRequest,
    PubAck,
    PurgeReply,
    PurgeRequest,
    RawStreamInfoReply,
    SourceInfo,
    StreamInfo,
    StreamInfoReply,
    StreamInfoRequest,
    StreamState,
    UpdateReply,
)

T = TypeVar("T")
API_TIMEOUT = 5.0
OPEN_PATIENCE = 60.0
"""How long opening a stream or bucket waits for a JetStream that does not answer."""
log = logging.getLogger("engine.jetstream")
PUBLISH_RETRIES = 2
PUBLISH_RETRY_WAIT = 0.25
DIRECT_BATCH = 256
"""Subjects asked for in one batched direct get (the server caps a batch's answers)."""
_NO_BODY = b""

_ack = msgspec.json.Decoder(AckReply)
_info = msgspec.json.Decoder(StreamInfoReply)
_raw_info = msgspec.json.Decoder(RawStreamInfoReply)
_updated = msgspec.json.Decoder(UpdateReply)
_purge = msgspec.json.Decoder(PurgeReply)
_deleted = msgspec.json.Decoder(DeleteReply)
_msg_get = msgspec.json.Decoder(MsgGetReply)
_consumer_info = msgspec.json.Decoder(ConsumerInfoReply)
_encode = msgspec.json.Encoder().encode


class NotFound(FunctionError):
    def __init__(self, what: str) -> None:
        super().__init__("NOT_FOUND", f"{what} does not exist")


def _refused(what: str, err: ApiError) -> FunctionError:
    if err.code == 404 or err.err_code == STREAM_NOT_FOUND:
        return NotFound(what)
    return BusError(
        f"{what}: JetStream refused: {err.description} (err_code {err.err_code})",
        err_code=err.err_code,
    )


async def publish(
    conn: Connection, subject: str, data: bytes, headers: dict[str, str], timeout: float
) -> PubAck:
    """Store `data` on `subject` and wait for JetStream's ack. Raises WrongLastSequence when
    an expected-last-sequence header did not hold, BusError otherwise.

    "No responders" is asked again PUBLISH_RETRIES times, PUBLISH_RETRY_WAIT apart (as
    nats.go's publish does): nothing stored the message, and on a cluster a stream just
    created or whose leader just moved is not yet known to every server."""
    deadline = time.monotonic() + timeout
    retries = PUBLISH_RETRIES
    while True:
        try:
            msg = await conn.requester.request(subject, data, timeout, headers)
            break
        except nats.errors.NoRespondersError:
            left = deadline - time.monotonic() - PUBLISH_RETRY_WAIT
            if retries <= 0 or left <= 0:
                raise translate(nats.errors.NoRespondersError(), f"publish to {subject}") from None
            retries -= 1
            timeout = left
            await asyncio.sleep(PUBLISH_RETRY_WAIT)
        except Exception as exc:
            raise translate(exc, f"publish to {subject}") from None
    try:
        ack = _ack.decode(msg.data)
    except msgspec.DecodeError:
        raise BusError(f"publish to {subject}: not a JetStream ack: {msg.data[:80]!r}") from None
    if ack.error is not None:
        if ack.error.err_code == WRONG_LAST_SEQUENCE:
            raise WrongLastSequence(subject, ack.error.description)
        raise _refused(f"publish to {subject}", ack.error)
    return PubAck(ack.stream, ack.seq, ack.duplicate)


async def _api(
    conn: Connection, subject: str, body: bytes, reply: msgspec.json.Decoder[T], timeout: float
) -> T:
    try:
        msg = await conn.requester.request(f"{API}.{subject}", body, timeout)
    except Exception as exc:
        raise translate(exc, subject) from None
    try:
        return reply.decode(msg.data)
    except msgspec.DecodeError:
        raise BusError(f"{subject}: not a JetStream API reply: {msg.data[:80]!r}") from None


def _unanswered(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError):  # nats-py's TimeoutError is one too
        return True
    if isinstance(exc, nats.js.errors.ServiceUnavailableError):
        return True
    if isinstance(exc, BusError):
        return exc.code == "DEADLINE_EXCEEDED" or exc.err_code == UNAVAILABLE
    return False


async def patiently(
    call: Callable[[], Awaitable[T]], what: str, patience: float = OPEN_PATIENCE
) -> T:
    """`call()`, made again while JetStream does not answer it: a cluster without a meta
    leader (an election after a partition heals, nodes restarting) leaves API requests
    unanswered for seconds. Opening a stream or bucket then waits for the quorum instead
    of failing its worker; any other error, or `patience` seconds of silence, is raised."""
    deadline = time.monotonic() + patience
    pause = 0.25
    while True:
        try:
            return await call()
        except Exception as exc:
            if not _unanswered(exc) or time.monotonic() + pause > deadline:
                raise
            log.warning(
                "%s: JetStream did not answer (%s); asking again",
                what,
                str(exc) or type(exc).__name__,
            )
        await asyncio.sleep(pause)
        pause = min(pause * 2, 2.0)


async def stream_info(conn: Connection, name: str, timeout: float = API_TIMEOUT) -> StreamInfo:
    """Raises NotFound for a stream that does not exist."""
    got = await _api(conn, f"STREAM.INFO.{name}", _NO_BODY, _info, timeout)
    if got.error is not None:
        raise _refused(f"stream {name}", got.error)
    st = got.state or StreamState()
    return StreamInfo(
        name,
        st.messages,
        st.bytes,
        st.first_seq,
        st.last_seq,
        st.num_subjects,
        got.config.max_msgs_per_subject if got.config else -1,
        got.cluster.leader if got.cluster is not None else None,
    )


async def wait_for_leader(conn: Connection, name: str, timeout: float = API_TIMEOUT) -> None:
    """Return once stream `name` has a leader. On a cluster a stream just created with
    replicas elects one first, and a write sent before that finds no responder; a single
    server answers at once. Raises BusError (DEADLINE_EXCEEDED) after `timeout`.

    A stream a racing peer has just created can answer "not found" for a moment on a
    cluster (its assignment has not reached the server that answers us yet): that is
    waited out like a missing leader, and only raised once `timeout` has passed."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BusError(
                f"stream {name} has no leader after {timeout:.0f}s", code="DEADLINE_EXCEEDED"
            )
        got = await _api(conn, f"STREAM.INFO.{name}", _NO_BODY, _info, left)
        if got.error is not None:
            refused = _refused(f"stream {name}", got.error)
            if isinstance(refused, NotFound) and time.monotonic() + 0.05 < deadline:
                await asyncio.sleep(0.05)
                continue
            raise refused
        if got.cluster is None or got.cluster.leader:
            return
        await asyncio.sleep(0.02)


async def stream_subjects(
    conn: Connection, name: str, pattern: str, timeout: float = API_TIMEOUT
) -> dict[str, int]:
    """Subjects matching `pattern` that hold messages, with their message counts; the
    server lists a bounded number per reply, so the listing is read in pages."""
    out: dict[str, int] = {}
    while True:
        body = _encode(StreamInfoRequest(subjects_filter=pattern, offset=len(out)))
        got = await _api(conn, f"STREAM.INFO.{name}", body, _info, timeout)
        if got.error is not None:
            raise _refused(f"stream {name}", got.error)
        page = (got.state.subjects if got.state else None) or {}
        out.update(page)
        if not page or len(out) >= got.total:
            return out


async def message(
    conn: Connection, name: str, seq: int, timeout: float = API_TIMEOUT
) -> tuple[str, bytes] | None:
    """(subject, data) of the message at `seq`, None when there is none (deleted, or past
    the end). Answered by the stream's leader: no consumer, so it works while a cluster's
    meta leader is being elected."""
    body = _encode(MsgGetRequest(seq))
    got = await _api(conn, f"STREAM.MSG.GET.{name}", body, _msg_get, timeout)
    if got.error is not None:
        if got.error.err_code == NO_MESSAGE_FOUND:
            return None
        raise _refused(f"stream {name}", got.error)
    if got.message is None:
        return None
    return got.message.subject, base64.b64decode(got.message.data)


async def last_seq(conn: Connection, name: str, subject: str, timeout: float = API_TIMEOUT) -> int:
    """The sequence of the last message on `subject` (no wildcards), 0 when it has none.
    Answered by the stream's leader from its per-subject index: one request, whatever the
    stream's size."""
    body = _encode(LastBySubjectRequest(subject))
    got = await _api(conn, f"STREAM.MSG.GET.{name}", body, _msg_get, timeout)
    if got.error is not None:
        if got.error.err_code == NO_MESSAGE_FOUND:
            return 0
        raise _refused(f"stream {name}", got.error)
    return got.message.seq if got.message is not None else 0


async def last_messages(
    conn: Connection, stream: str, subjects: list[str], timeout: float = API_TIMEOUT
) -> dict[str, LastMessage]:
    """The last message of each subject that has one (at most DIRECT_BATCH subjects), in one
    request: JetStream's batched direct get (`multi_last`), which the stream answers with
    one message per subject and an end-of-batch status. Only on a stream that allows
    direct gets; BusError when the server refuses or does not finish in `timeout`."""
    if not subjects:
        return {}
    nc = conn.nc
    loop = asyncio.get_running_loop()
    done: asyncio.Future[str] = loop.create_future()
    got: dict[str, LastMessage] = {}

    async def on_msg(msg: Any) -> None:
        headers = msg.headers or {}
        status = headers.get("Status")
        if status:
            if not done.done():  # 204: end of batch; 404: none of the subjects has one
                done.set_result("" if status in ("204", "404") else f"{status} {headers}")
            return
        subject = headers.get("Nats-Subject", "")
        got[subject] = LastMessage(int(headers.get("Nats-Sequence", 0)), msg.data, headers)

    inbox = nc.new_inbox()
    try:
        sub = await nc.subscribe(inbox, cb=on_msg)
    except Exception as exc:
        raise translate(exc, f"direct get from {stream}") from None
    try:
        body = _encode(MultiLastRequest(subjects))
        await nc.publish(f"{API}.DIRECT.GET.{stream}", body, reply=inbox)
        try:
            refused = await asyncio.wait_for(done, timeout)
        except TimeoutError:
            raise BusError(
                f"direct get from {stream}: no end of batch in {timeout:g}s",
                code="DEADLINE_EXCEEDED",
            ) from None
        if refused:
            raise BusError(f"direct get from {stream}: refused ({refused})")
        return got
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


def epoch_of(rfc3339: str) -> float:
    """Epoch seconds of the API's `2026-12-01T22:31:13.320592557Z` (nanoseconds cut to the
    microseconds Python keeps)."""
    head, _, frac = rfc3339.rstrip("Z").partition(".")
    base = datetime.fromisoformat(head).replace(tzinfo=UTC).timestamp()
    return base + (int(frac[:6].ljust(6, "0")) / 1e6 if frac else 0.0)


async def stored_at(
    conn: Connection, name: str, seq: int, timeout: float = API_TIMEOUT
) -> float | None:
    """When the message at `seq` was stored (epoch seconds), None when there is none."""
    body = _encode(MsgGetRequest(seq))
    got = await _api(conn, f"STREAM.MSG.GET.{name}", body, _msg_get, timeout)
    if got.error is not None:
        if got.error.err_code == NO_MESSAGE_FOUND:
            return None
        raise _refused(f"stream {name}", got.error)
    return epoch_of(got.message.time) if got.message is not None and got.message.time else None


async def seq_at(
    conn: Connection, name: str, when: float, timeout: float = API_TIMEOUT
) -> int | None:
    """The first sequence stored at or after `when` (epoch seconds), None when none was."""
    at = datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z")
    body = _encode(ByTimeRequest(at))
    got = await _api(conn, f"STREAM.MSG.GET.{name}", body, _msg_get, timeout)
    if got.error is not None:
        if got.error.err_code == NO_MESSAGE_FOUND:
            return None
        raise _refused(f"stream {name}", got.error)
    return got.message.seq if got.message is not None else None


async def purge(
    conn: Connection, name: str, subject: str = "", timeout: float = API_TIMEOUT
) -> int:
    """Remove every message on `subject` (wildcards allowed; "" for all); how many went. A
    stream that does not exist holds nothing to purge: 0."""
    body = _encode(PurgeRequest(subject))
    got = await _api(conn, f"STREAM.PURGE.{name}", body, _purge, timeout)
    if got.error is not None:
        err = _refused(f"stream {name}", got.error)
        if isinstance(err, NotFound):
            return 0
        raise err
    return got.purged


async def delete_message(
    conn: Connection, name: str, seq: int, *, erase: bool = True, timeout: float = API_TIMEOUT
) -> bool:
    """Remove the message at `seq` (`erase`: its bytes overwritten on disk, not only marked
    deleted); False when there was none (deleted already, or never written)."""
    body = _encode(MsgDeleteRequest(seq, no_erase=not erase))
    got = await _api(conn, f"STREAM.MSG.DELETE.{name}", body, _deleted, timeout)
    if got.error is not None:
        if got.error.err_code in (NO_MESSAGE_FOUND, SEQUENCE_NOT_FOUND, MESSAGE_NOT_FOUND):
            return False
        raise _refused(f"stream {name}", got.error)
    return got.success


async def raw_stream_info(
    conn: Connection, name: str, timeout: float = API_TIMEOUT
) -> tuple[dict[str, object], list[SourceInfo]]:
    """A stream's config as the server sends it, and its sources' states (nats-py's
    dataclasses drop a source's domain and filter, which tell two sources of one name apart)."""
    got = await _api(conn, f"STREAM.INFO.{name}", _NO_BODY, _raw_info, timeout)
    if got.error is not None:
        raise _refused(f"stream {name}", got.error)
    return dict(got.config or {}), list(got.sources or [])


async def update_stream(
    conn: Connection, config: dict[str, object], timeout: float = API_TIMEOUT
) -> None:
    name = str(config["name"])
    got = await _api(conn, f"STREAM.UPDATE.{name}", _encode(config), _updated, timeout)
    if got.error is not None:
        raise _refused(f"stream {name}", got.error)


async def consumer_config(
    conn: Connection, stream: str, durable: str, timeout: float = API_TIMEOUT
) -> dict[str, object] | None:
    """A durable consumer's config as the server sends it; None when there is none.
    Raises NotFound when the stream does not exist."""
    got = await _api(conn, f"CONSUMER.INFO.{stream}.{durable}", _NO_BODY, _consumer_info, timeout)
    if got.error is not None:
        if got.error.err_code == CONSUMER_NOT_FOUND:
            return None
        raise _refused(f"stream {stream}", got.error)
    return dict(got.config or {})


async def create_consumer(
    conn: Connection,
    stream: str,
    durable: str,
    config: dict[str, object],
    action: str,
    timeout: float = API_TIMEOUT,
) -> None:
    """`action`: create (refused if it exists with another config) or update."""
    body = _encode(ConsumerCreateRequest(stream, {**config, "durable_name": durable}, action))
    got = await _api(conn, f"CONSUMER.CREATE.{stream}.{durable}", body, _consumer_info, timeout)
    if got.error is not None:
        raise _refused(f"consumer {durable} of stream {stream}", got.error)


async def delete(conn: Connection, what: str, timeout: float = API_TIMEOUT) -> None:
    """`STREAM.DELETE.<name>` or `CONSUMER.DELETE.<stream>.<durable>`."""
    got = await _api(conn, what, _NO_BODY, _deleted, timeout)
    if got.error is not None:
        raise _refused(what.split(".", 1)[1], got.error)
