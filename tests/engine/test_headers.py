"""engine/_headers.py: the faster header code gives nats-py's own results for every input
(property tests against nats-py's functions), and connections from engine.connect use it."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nats.aio import client as nats_client
from nats.aio.client import Client as NATS

from engine import _natspy as _headers
from engine import connect
from engine.server import NatsServer
from tests.fixtures import eventually

# Bytes that matter to the parser: separators, every kind of whitespace (ASCII, the
# \x1c-\x1f str.isspace() also counts, non-ASCII spaces in UTF-8), non-ASCII and invalid UTF-8.
_PARTS = [
    b"\r\n",
    b"\r",
    b"\n",
    b":",
    b": ",
    b" ",
    b"\t",
    b"\x0b",
    b"\x0c",
    b"\x1c",
    b"\x1f",
    b"\x85",
    b"\xc2\xa0",
    b"\xe2\x80\x83",
    b"\xff",
    b"\xc3\xa9",
    b"Engine-Deadline",
    b"traceparent",
    b"NATS/1.0",
    b"NATS/1.0 503",
    b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    b"a",
    b"Z",
    b"9",
    b"-",
    b"",
]
chunks = st.lists(st.one_of(st.sampled_from(_PARTS), st.binary(max_size=6)), max_size=24).map(
    b"".join
)
# One header line as a sender might write it, then whole blocks of them.
names = st.one_of(
    st.sampled_from(["Engine-Deadline", "traceparent", "Nats-Msg-Id", "Status", "X"]),
    st.text(max_size=12),
).map(lambda s: s.encode("utf-8", "surrogatepass"))
lines = st.tuples(names, st.sampled_from([b":", b": ", b" : ", b":\t"]), chunks).map(b"".join)
blocks = st.lists(st.one_of(lines, chunks), max_size=8).map(lambda ls: b"\r\n".join(ls))


def _nats_parse(raw: Any) -> Any:
    try:
        return NATS._parse_header_lines(raw)
    except Exception as exc:
        return type(exc)


def _ours(raw: Any) -> Any:
    try:
        return _headers.parse_header_lines(raw)
    except Exception as exc:
        return type(exc)


@pytest.mark.unit
@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.binary(max_size=80), chunks, blocks, blocks.map(lambda b: b + b"\r\n\r\n")))
def test_parse_header_lines_is_nats_pys_for_any_bytes(raw: bytes) -> None:
    expected = _nats_parse(raw)
    # Twice: the first call may fill the name cache, the second reads it.
    assert _ours(raw) == expected
    assert _ours(raw) == expected
    assert _ours(bytearray(raw)) == _nats_parse(bytearray(raw))


@pytest.mark.unit
def test_parse_header_lines_on_the_edges_nats_py_defines() -> None:
    cases = [
        b"",
        b"\r\n\r\n",
        b"Engine-Deadline: 1764449999123\r\ntraceparent: 00-ab-cd-01\r\n\r\n",
        b": empty name is kept\r\n",
        b"  Padded  :  value  \r\n",
        b"Bad Name: x\r\n",
        b"Sep\x1cName: x\r\n",  # str.isspace(), not stripped by bytes.strip()
        b"\x1cLead: x\r\n",
        b"caf\xc3\xa9: non-ASCII name is dropped\r\n",
        b"Value: caf\xc3\xa9 \xff\r\n",
        b"no colon at all\r\nA: 1\r\n",
        b"A: 1\r\nA: 2\r\n",
        b"A:b:c\r\n",
        b"A: 1\nB: 2\r\n",
    ]
    for raw in cases:
        assert _headers.parse_header_lines(raw) == NATS._parse_header_lines(raw), raw
        assert _headers.parse_header_lines(raw) == NATS._parse_header_lines(raw), raw


async def _publish_cmd(
    send_publish: Any, nc: NATS, subject: str, headers: Any, payload: bytes = b"data"
) -> tuple[Any, dict[str, int]]:
    """What `send_publish` hands to `_send_command` (or the exception it raises)."""
    sent: list[bytes] = []

    async def send_command(cmd: bytes, priority: bool = False) -> None:
        sent.append(cmd)

    nc._send_command = send_command  # type: ignore[method-assign]
    nc._flush_queue = None
    try:
        await send_publish(subject, "_INBOX.r.1", payload, len(payload), headers)
    except Exception as exc:
        return (type(exc), str(exc)), dict(nc.stats)
    return sent, dict(nc.stats)


async def _both(subject: str, headers: Any) -> tuple[Any, Any]:
    theirs = NATS()
    ours = NATS()
    original = await _publish_cmd(
        lambda *a: NATS._send_publish(theirs, *a), theirs, subject, headers
    )
    faster = await _publish_cmd(_headers._send_publish(ours), ours, subject, headers)
    return original, faster


header_texts = st.one_of(
    st.sampled_from(
        ["Engine-Deadline", "traceparent", " padded ", "", " ", "bad name", "a:b", "ok-1"]
    ),
    st.text(max_size=10),
)
value_texts = st.one_of(
    st.sampled_from(["1764449999123", " v ", "a\r\nb", "\n", "\r", "é", "\x85x\u2003"]),
    st.text(max_size=20),
)


@pytest.mark.unit
@settings(max_examples=800, deadline=None)
@given(st.dictionaries(header_texts, value_texts, max_size=5), st.sampled_from(["s.x", ""]))
def test_send_publish_builds_the_bytes_nats_py_builds(
    headers: dict[str, str], subject: str
) -> None:
    original, faster = asyncio.run(_both(subject, headers))
    assert faster == original
    original, faster = asyncio.run(_both(subject, headers))  # with the key cache filled
    assert faster == original


@pytest.mark.unit
def test_send_publish_fails_as_nats_py_does() -> None:
    for subject, headers in [
        ("s", None),
        ("s", {}),
        ("s", {"good": "1", "bad key": "2"}),
        ("s", {"Good": "\ud800"}),  # a lone surrogate cannot be encoded
        ("s", {"Good": 1}),  # not a str
        ("", {"A": "1"}),
    ]:
        original, faster = asyncio.run(_both(subject, headers))
        assert faster == original, headers


async def _status_or_headers(process: Any, raw: Any) -> Any:
    try:
        return await process(raw)
    except Exception as exc:
        return type(exc)


@pytest.mark.unit
@settings(max_examples=800, deadline=None)
@given(
    st.one_of(
        st.none(),
        st.binary(max_size=40),
        chunks.map(lambda c: b"NATS/1.0" + c),
        blocks.map(lambda b: b"NATS/1.0\r\n" + b + b"\r\n\r\n"),
        st.tuples(st.sampled_from([b"100", b"404", b"503", b"abc", b"1"]), chunks).map(
            lambda t: b"NATS/1.0 " + t[0] + t[1]
        ),
    )
)
def test_process_headers_is_nats_pys(raw: bytes | None) -> None:
    async def run() -> None:
        theirs = NATS()
        errors: list[Exception] = []

        async def error_cb(e: Exception) -> None:
            errors.append(e)

        theirs._error_cb = error_cb
        expected = await _status_or_headers(theirs._process_headers, raw)
        ours = NATS()
        ours._error_cb = error_cb
        assert _headers.install(ours)
        assert await _status_or_headers(ours._process_headers, raw) == expected
        assert await _status_or_headers(ours._process_headers, raw) == expected

    asyncio.run(run())


@pytest.mark.unit
def test_install_leaves_an_unverified_nats_py_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    nc = NATS()
    monkeypatch.setattr(nats_client, "__version__", "2.99.0")
    assert not _headers.install(nc)
    assert "_parse_header_lines" not in vars(nc)
    assert "_send_publish" not in vars(nc)
    assert "_process_headers" not in vars(nc)


@pytest.mark.unit
def test_the_installed_nats_py_is_one_the_replacements_were_checked_against() -> None:
    # On an upgrade this fails: rerun this file's property tests against the new version,
    # then add it to VERIFIED_NATS_PY (else connections silently keep the slower code).
    assert nats_client.__version__ in _headers.VERIFIED_NATS_PY


async def _wire_order(nc: NATS) -> list[bytes]:
    """The protocol verbs `nc` writes to its socket for a subscribe and a flush, in order."""
    sent: list[bytes] = []
    transport: Any = nc._transport
    write, writelines = transport.write, transport.writelines

    def record_write(data: bytes) -> None:
        sent.append(bytes(data))
        write(data)

    def record_writelines(lines: list[bytes]) -> None:
        sent.extend(bytes(b) for b in lines)
        writelines(lines)

    transport.write, transport.writelines = record_write, record_writelines
    try:
        await nc.subscribe("order.test")
        await nc.flush()
    finally:
        transport.write, transport.writelines = write, writelines
    return [verb for chunk in sent for verb in _verbs(chunk)]


def _verbs(chunk: bytes) -> list[bytes]:
    return [line.split(b" ")[0] for line in chunk.split(b"\r\n") if line[:1].isalpha()]


async def test_flush_on_an_engine_connection_follows_what_was_queued_before_it(
    nats_server: NatsServer,
) -> None:
    # nats-py 2.16 writes flush()'s PING at once, ahead of a SUB still queued for its flusher
    # task: the PONG could come back before the server had the subscription, and a message
    # another connection published right after was lost (the two-connection test below
    # failed so, about one run in 25 under load). An engine connection queues the PING.
    engine_nc = await connect(nats_server.url)
    plain_nc = await nats.connect(nats_server.url)
    try:
        assert await _wire_order(plain_nc) == [b"PING", b"SUB"]  # the bug, in nats-py
        assert await _wire_order(engine_nc) == [b"SUB", b"PING"]
    finally:
        await engine_nc.close()
        await plain_nc.close()


async def test_engine_connections_use_it_and_agree_with_plain_nats_py(
    nats_server: NatsServer,
) -> None:
    # What each connection saw besides messages: if a message is missing, the failure says
    # whether a connection dropped (core NATS loses what is published across a reconnect).
    seen: list[str] = []

    def recorder(name: str) -> dict[str, Any]:
        async def on_error(e: Exception) -> None:
            seen.append(f"{name} error {e!r}")

        async def on_disconnect() -> None:
            seen.append(f"{name} disconnected")

        return {"error_cb": on_error, "disconnected_cb": on_disconnect}

    engine_nc = await connect(nats_server.url, **recorder("engine"))
    plain_nc = await nats.connect(nats_server.url, **recorder("plain"))
    try:
        assert engine_nc._parse_header_lines is _headers.parse_header_lines
        assert "_send_publish" in vars(engine_nc) and "_process_headers" in vars(engine_nc)
        headers = {
            "Engine-Deadline": "1764449999123",
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            " Padded ": " café \r\n next ",
        }
        got: dict[str, list[Any]] = {"engine": [], "plain": []}
        for name, nc in (("engine", engine_nc), ("plain", plain_nc)):

            async def on_msg(msg: Any, name: str = name) -> None:
                got[name].append(msg.headers)

            await nc.subscribe("hdr.test", cb=on_msg)
            await nc.flush()
        # plain nats-py's flush() may return before its SUB reached the server (the test
        # above): a message it publishes after the SUB, once seen, proves the server has it.
        seen_ready = asyncio.Event()

        async def on_ready(msg: Any) -> None:
            seen_ready.set()

        await engine_nc.subscribe("hdr.ready", cb=on_ready)
        await engine_nc.flush()
        await plain_nc.publish("hdr.ready", b"")
        await asyncio.wait_for(seen_ready.wait(), 10)
        # Each connection publishes once; each receives both messages.
        await engine_nc.publish("hdr.test", b"x", headers=headers)
        await plain_nc.publish("hdr.test", b"x", headers=headers)
        for nc in (engine_nc, plain_nc):
            await nc.flush()

        async def both_received() -> bool:
            return len(got["engine"]) == 2 and len(got["plain"]) == 2

        try:
            await eventually(both_received, timeout=10, what="both messages on both connections")
        except AssertionError as exc:
            stats = {n: dict(c.stats) for n, c in (("engine", engine_nc), ("plain", plain_nc))}
            raise AssertionError(f"{exc}; received {got}; stats {stats}; events {seen}") from None
        assert len(got["engine"]) == len(got["plain"]) == 2
        assert got["engine"] == got["plain"]
        assert got["engine"][0] == got["engine"][1]
        assert got["engine"][0]["traceparent"] == headers["traceparent"]
        assert got["engine"][0]["Padded"] == "café    next"
    finally:
        await engine_nc.close()
        await plain_nc.close()
