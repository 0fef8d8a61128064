"""Streams through the engine's API against a real JetStream: publish and its acks and
refusals, paged reads, following across a server restart, purges, errors and deadlines."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import msgspec
import pytest

from engine import (
    BUS_ERRORS,
    BusError,
    Client,
    FunctionError,
    StreamMessage,
    WrongLastSequence,
    connect,
)
from engine.server import NatsServer
from tests.fixtures import eventually


class Ev(msgspec.Struct):
    n: int


async def test_expected_last_subject_seq_zero_refuses_a_second_write(client: Client) -> None:
    ev = client.stream("EV", subjects=["ev.>"])
    await ev.ensure()
    first = await ev.publish("ev.one", Ev(1), expect_last_subject_seq=0)
    assert first.seq == 1 and first.stream == "EV" and not first.duplicate
    with pytest.raises(WrongLastSequence) as ei:
        await ev.publish("ev.one", Ev(2), expect_last_subject_seq=0)
    assert ei.value.code == "CONFLICT" and not ei.value.retryable
    # Another subject is empty still; the right last sequence is taken.
    assert (await ev.publish("ev.two", b"raw", expect_last_subject_seq=0)).seq == 2
    assert (await ev.publish("ev.one", Ev(3), expect_last_subject_seq=1)).seq == 3
    assert (await ev.info()).messages == 3


async def test_a_msg_id_makes_a_retry_a_duplicate(client: Client) -> None:
    ev = await client.stream("EV", subjects=["ev.>"], duplicate_window=60).ensure()
    a = await ev.publish("ev.x", Ev(1), msg_id="once")
    b = await ev.publish("ev.x", Ev(1), msg_id="once")
    assert (a.seq, a.duplicate) == (1, False)
    assert (b.seq, b.duplicate) == (1, True)
    assert (await ev.info()).messages == 1


async def test_a_publish_no_stream_answers_yet_is_asked_again(client: Client) -> None:
    # On a cluster a stream just made (or whose leader moved) is not yet known to every
    # server: its first publish finds no responders. Nothing stored it, so it is asked
    # again, as nats.go does; a stream that stays missing is an error within a second.
    async def make_later() -> None:
        await asyncio.sleep(0.15)
        await client.stream("LATE", subjects=["late.>"]).ensure()

    maker = asyncio.create_task(make_later())
    s = client.stream("LATE", subjects=["late.>"])
    ack = await s.publish("late.x", b"x")
    await maker
    assert ack.seq == 1 and (await s.info()).messages == 1
    t0 = time.monotonic()
    with pytest.raises(BusError, match="did not answer"):
        await client.stream("NEVER", subjects=["never.>"]).publish("never.x", b"x")
    assert 0.4 < time.monotonic() - t0 < 2.0


async def test_peers_creating_a_stream_at_once_is_fine_and_a_new_declaration_applies(
    client: Client,
) -> None:
    handles = [client.stream("EV", subjects=["ev.>"]) for _ in range(5)]
    await asyncio.gather(*(h.ensure() for h in handles))
    await handles[0].publish("ev.a", 1)
    assert (await handles[0].publish("ev.b", 2)).seq == 2
    # Declared with other subjects (an instance that got a domain): updated in place, its
    # messages kept (tests/engine/test_reconcile.py covers the rest).
    await client.stream("EV", subjects=["other.>"]).ensure()
    assert (await handles[0].publish("other.c", 3)).seq == 3
    assert (await handles[0].info()).messages == 3


async def test_info_counts_messages_sequences_and_subjects(client: Client) -> None:
    ev = await client.stream("EV", subjects=["ev.>"]).ensure()
    for i in range(5):
        await ev.publish(f"ev.s{i % 2}", Ev(i))
    info = await ev.info()
    assert (info.messages, info.first_seq, info.last_seq, info.subjects) == (5, 1, 5, 2)
    assert info.bytes > 0
    with pytest.raises(FunctionError) as ei:
        await client.stream("MISSING").info()
    assert ei.value.code == "NOT_FOUND"


async def test_read_pages_from_a_sequence_in_order_and_filters_by_subject(
    client: Client,
) -> None:
    ev = await client.stream("EV", subjects=["ev.>"]).ensure()
    for i in range(1, 21):
        await ev.publish(f"ev.{'odd' if i % 2 else 'even'}", Ev(i))
    got = [m async for m in ev.read(after=4, page=3)]  # seven pages of three
    assert [m.seq for m in got] == list(range(5, 21))
    assert all(isinstance(m, StreamMessage) for m in got)
    assert msgspec.json.decode(got[0].data, type=Ev) == Ev(5)
    assert got[-1].pending == 0
    odd = [m.seq async for m in ev.read(subject="ev.odd", page=4)]
    assert odd == list(range(1, 21, 2))
    assert [m async for m in ev.read(after=20)] == []
    assert [m async for m in client.stream("MISSING").read()] == []


async def test_purge_removes_one_subject_and_counts_what_went(client: Client) -> None:
    ev = await client.stream("EV", subjects=["ev.>"]).ensure()
    for i in range(6):
        await ev.publish(f"ev.{'a' if i < 4 else 'b'}.{i}", Ev(i))
    assert await ev.purge("ev.a.>") == 4
    assert [m.subject async for m in ev.read()] == ["ev.b.4", "ev.b.5"]
    assert await ev.purge() == 2
    assert (await ev.info()).messages == 0
    assert await client.stream("MISSING").purge("x") == 0


async def test_follow_resumes_after_a_server_restart_on_the_same_store(tmp_path: Path) -> None:
    store = tmp_path / "js"
    srv = NatsServer(store_dir=store).start()
    port = srv.client_port
    nc = await connect(srv.url)
    client = Client(nc)
    try:
        ev = await client.stream("EV", subjects=["ev.>"]).ensure()
        for i in range(1, 4):
            await ev.publish("ev.x", Ev(i))
        seen: list[int] = []

        async def handler(m: StreamMessage) -> None:
            seen.append(msgspec.json.decode(m.data, type=Ev).n)

        follower = await ev.follow(handler, start_seq=2, heartbeat=0.5)

        async def got(n: int) -> bool:
            return len(seen) >= n

        await eventually(lambda: got(2), what="the first messages")
        assert seen == [2, 3]
        srv.kill()  # SIGKILL: the ordered consumer dies with the server
        srv = NatsServer(store_dir=store, port=port or -1).start()

        async def publish(i: int) -> bool:
            await ev.publish("ev.x", Ev(i), timeout=1)
            return True

        for i in range(4, 7):
            await eventually(lambda i=i: publish(i), timeout=20, what=f"publish {i}")
        await eventually(lambda: got(5), timeout=20, what="delivery after the restart")
        await asyncio.sleep(1.5)  # a repeat would show up within a heartbeat or two
        assert seen == [2, 3, 4, 5, 6]
        assert follower.last_seq == 6
        await follower.stop()
    finally:
        await nc.close()
        srv.kill()


async def test_a_failing_handler_is_logged_and_the_next_message_follows(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    ev = await client.stream("EV", subjects=["ev.>"]).ensure()
    seen: list[int] = []

    async def handler(m: StreamMessage) -> None:
        if m.seq == 1:
            raise ValueError("boom")
        seen.append(m.seq)

    follower = await ev.follow(handler)
    await ev.publish("ev.x", 1)
    await ev.publish("ev.x", 2)

    async def second() -> bool:
        return seen == [2]

    await eventually(second, what="the message after the failure")
    assert "the handler failed on message 1" in caplog.text
    await follower.stop()


async def test_bus_failures_are_engine_errors_that_bus_errors_catch(client: Client) -> None:
    nowhere = client.stream("NOWHERE")  # no stream takes this subject
    with pytest.raises(BusError) as ei:
        await nowhere.publish("no.stream.here", b"x", timeout=1)
    assert ei.value.code == "UNAVAILABLE" and ei.value.retryable
    try:
        await nowhere.publish("no.stream.here", b"x", timeout=1)
    except BUS_ERRORS:
        pass
    # A deadline already gone: refused before anything is sent.
    ev = await client.stream("EV", subjects=["ev.>"]).ensure()
    with pytest.raises(BusError) as ei:
        await ev.publish("ev.x", b"x", deadline=time.time() - 1)
    assert ei.value.code == "DEADLINE_EXCEEDED"
    assert (await ev.info()).messages == 0


async def test_a_publish_without_an_ack_in_time_is_a_deadline_error(client: Client) -> None:
    # A responder that never answers stands in for a JetStream that does not ack.
    async def ignore(msg: object) -> None:
        pass

    await client.nc.subscribe("slow.x", cb=ignore)
    await client.nc.flush()
    started = time.monotonic()
    with pytest.raises(BusError) as ei:
        await client.stream("SLOW").publish("slow.x", b"x", timeout=0.3)
    assert ei.value.code == "DEADLINE_EXCEEDED"
    assert time.monotonic() - started < 2


async def test_a_stream_copies_its_sources_and_they_can_be_changed(client: Client) -> None:
    from engine import Source

    a = await client.stream("SRC_A", subjects=["a.>"]).ensure()
    b = await client.stream("SRC_B", subjects=["b.>"]).ensure()
    copy = await client.stream(
        "COPY", subjects=["copy.>"], sources=[Source("SRC_A", filter="a.keep.>")]
    ).ensure()
    await a.publish("a.keep.1", b"1")
    await a.publish("a.drop.1", b"x")
    await b.publish("b.1", b"b")

    async def holds(n: int) -> bool:
        return (await copy.info()).messages == n

    await eventually(lambda: holds(1), what="the filtered copy")
    [state] = await copy.sources()
    assert state.source == Source("SRC_A", filter="a.keep.>") and state.lag == 0
    await copy.set_sources([Source("SRC_A", filter="a.keep.>"), Source("SRC_B")])
    await eventually(lambda: holds(2), what="the added source")
    await a.publish("a.keep.2", b"2")
    await eventually(lambda: holds(3), what="the first source, still copying")
    assert {s.source.stream for s in await copy.sources()} == {"SRC_A", "SRC_B"}


async def test_a_message_is_read_by_its_sequence_and_a_missing_one_is_none(client: Client) -> None:
    ev = await client.stream("EV", subjects=["ev.>"]).ensure()
    await ev.publish("ev.a", Ev(1))
    await ev.publish("ev.b", b"\x00raw bytes\xff")
    await ev.publish("ev.a", Ev(3))
    await ev.purge("ev.a")  # seq 1 and 3 gone
    got = await ev.get(2)
    assert got == StreamMessage(2, "ev.b", b"\x00raw bytes\xff")
    assert await ev.get(1) is None  # deleted
    assert await ev.get(99) is None  # not written yet
    with pytest.raises(FunctionError) as ei:
        await client.stream("NOPE").get(1)
    assert ei.value.code == "NOT_FOUND"


async def test_last_seq_names_the_last_message_of_one_subject(client: Client) -> None:
    ev = client.stream("EVL", subjects=["evl.>"])
    await ev.ensure()
    assert await ev.last_seq("evl.a") == 0  # no message yet
    a1 = await ev.publish("evl.a", Ev(1))
    b1 = await ev.publish("evl.b", Ev(2))
    assert await ev.last_seq("evl.a") == a1.seq
    assert await ev.last_seq("evl.b") == b1.seq
    a2 = await ev.publish("evl.a", Ev(3))
    assert await ev.last_seq("evl.a") == a2.seq > b1.seq
    assert await ev.last_seq("evl.none") == 0


async def test_stored_at_and_seq_at_find_messages_by_the_time_they_were_stored(
    client: Client,
) -> None:
    ev = client.stream("EVT", subjects=["evt.>"])
    await ev.ensure()
    before = time.time()
    first = await ev.publish("evt.a", Ev(1))
    at = await ev.stored_at(first.seq)
    assert at is not None and before - 1 <= at <= time.time() + 1
    assert await ev.stored_at(first.seq + 10) is None
    await asyncio.sleep(0.05)
    mid = time.time()
    await asyncio.sleep(0.05)
    later = await ev.publish("evt.b", Ev(2))
    assert await ev.seq_at(before - 5) == first.seq
    assert await ev.seq_at(mid) == later.seq
    assert await ev.seq_at(time.time() + 5) is None


async def test_settle_changes_only_the_settings_that_differ(client: Client) -> None:
    ev = client.stream("EVS", subjects=["evs.>"], duplicate_window=600.0)
    await ev.ensure()
    await ev.publish("evs.a", Ev(1))
    assert await ev.settle(duplicate_window=int(120e9)) == ["duplicate_window"]
    assert await ev.settle(duplicate_window=int(120e9)) == []
    raw = await client.nc.jetstream().stream_info("EVS")
    assert raw.config.duplicate_window == 120.0 and raw.config.subjects == ["evs.>"]
    assert raw.state.messages == 1
