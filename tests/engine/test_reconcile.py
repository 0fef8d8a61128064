"""Declared JetStream assets against stored ones (engine/_reconcile.py), on a real
nats-server: a stream, KV bucket, object store or durable consumer declared with another
config than it was made with is updated in place where JetStream allows it and refused,
naming the field and the fix, where it does not; a reader that declares nothing changes
nothing. Every declaration goes through these entry points (the last test holds the code
to that), and the supervisor's own config streams and buckets too."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType

from engine import Client, ConfigDrift, connect
from engine._jetstream import consumer_config, raw_stream_info
from engine.server import NatsServer
from tests.fixtures import EXAMPLE_CONFIG, ROOT

NS = 1_000_000_000


async def fresh(server: NatsServer) -> Client:
    """A new process's client: nothing cached from an earlier declaration."""
    return Client(await connect(server.url))


async def config(client: Client, stream: str) -> dict[str, Any]:
    return (await raw_stream_info(client.connection, stream))[0]


async def test_a_stream_declared_anew_is_updated_in_place(
    nats_server: NatsServer, client: Client
) -> None:
    await client.stream("TEAMLIKE", subjects=["team.log.local.>"], max_msgs_per_subject=1).ensure()
    await client.stream("TEAMLIKE").publish("team.log.local.x", b"kept")
    later = await fresh(nats_server)
    try:
        await later.stream(
            "TEAMLIKE",
            subjects=["team.log.seven.>"],
            max_msgs_per_subject=5,
            max_age=3600,
            discard=DiscardPolicy.OLD,
            allow_msg_schedules=True,
        ).ensure()
        got = await config(later, "TEAMLIKE")
        assert got["subjects"] == ["team.log.seven.>"]
        assert got["max_msgs_per_subject"] == 5 and got["max_age"] == 3600 * NS
        assert got["allow_msg_schedules"] is True
        # what it held stays, and what the new subjects name is stored
        ack = await later.stream("TEAMLIKE").publish("team.log.seven.y", b"new")
        assert ack.seq == 2 and (await later.stream("TEAMLIKE").info()).messages == 2
        # the same declaration again changes nothing (and asks for no update)
        before = await config(later, "TEAMLIKE")
        await later.stream("TEAMLIKE", subjects=["team.log.seven.>"], max_age=3600).ensure()
        assert await config(later, "TEAMLIKE") == before
    finally:
        await later.nc.close()


async def test_a_handle_that_declares_nothing_changes_nothing(client: Client) -> None:
    await client.stream("QUIET", subjects=["quiet.>"], max_age=60).ensure()
    before = await config(client, "QUIET")
    await client.stream("QUIET").ensure()
    assert await config(client, "QUIET") == before


@pytest.mark.parametrize(
    ("made", "declared", "field"),
    [
        ({"storage": StorageType.FILE}, {"storage": StorageType.MEMORY}, "storage"),
        (
            {"retention": RetentionPolicy.LIMITS},
            {"retention": RetentionPolicy.WORK_QUEUE},
            "retention",
        ),
        ({"allow_msg_schedules": True}, {"allow_msg_schedules": False}, "allow_msg_schedules"),
        ({"deny_delete": True}, {"deny_delete": False}, "deny_delete"),
    ],
)
async def test_what_jetstream_cannot_change_is_refused_with_the_fix(
    nats_server: NatsServer,
    client: Client,
    made: dict[str, Any],
    declared: dict[str, Any],
    field: str,
) -> None:
    await client.stream("FIXED", subjects=["fixed.>"], **made).ensure()
    await client.stream("FIXED").publish("fixed.a", b"1")
    before = await config(client, "FIXED")
    later = await fresh(nats_server)
    try:
        with pytest.raises(ConfigDrift) as err:
            await later.stream("FIXED", subjects=["fixed.>"], **declared).ensure()
    finally:
        await later.nc.close()
    drift = err.value
    assert drift.field == field and not drift.retryable and drift.code == "CONFLICT"
    assert "stream FIXED" in drift.message and field in drift.message
    assert "python -m engine stream delete FIXED" in drift.message
    assert "1 messages" in drift.message  # what deleting it costs
    assert await config(client, "FIXED") == before  # nothing half-changed


async def test_a_bucket_is_brought_to_its_declaration_and_a_reader_leaves_it(
    nats_server: NatsServer, client: Client
) -> None:
    await client.bucket("mem_x", history=1)
    later = await fresh(nats_server)
    try:
        st = await later.bucket("mem_x", history=5, ttl=3600, max_bytes=1 << 20, marker_ttl=5)
        got = await config(later, "KV_mem_x")
        assert got["max_msgs_per_subject"] == 5 and got["max_age"] == 3600 * NS
        assert got["max_bytes"] == 1 << 20 and got["subject_delete_marker_ttl"] == 5 * NS
        for v in range(3):
            await st.put("k", v)
        assert len(await st.kv.history("k")) == 3
    finally:
        await later.nc.close()
    reader = await fresh(nats_server)
    try:
        before = await config(reader, "KV_mem_x")
        await reader.bucket("mem_x")  # opened without config: declares nothing
        assert await config(reader, "KV_mem_x") == before
        with pytest.raises(ConfigDrift) as err:
            await reader.bucket("mem_x", storage="memory")
        assert err.value.field == "storage" and "KV bucket mem_x" in err.value.message
    finally:
        await reader.nc.close()


async def test_one_process_checks_a_declaration_it_opened_without_config_first(
    nats_server: NatsServer, client: Client
) -> None:
    await client.bucket("mem_y")
    assert (await config(client, "KV_mem_y"))["max_msgs_per_subject"] == 1
    await client.bucket("mem_y", history=4)  # cached, but declared now: reconciled
    assert (await config(client, "KV_mem_y"))["max_msgs_per_subject"] == 4


async def test_an_object_store_is_brought_to_its_declaration(
    nats_server: NatsServer, client: Client
) -> None:
    await client.objects("snaps")
    later = await fresh(nats_server)
    try:
        await later.objects("snaps", ttl=7200, max_bytes=1 << 24)
        got = await config(later, "OBJ_snaps")
        assert got["max_age"] == 7200 * NS and got["max_bytes"] == 1 << 24
    finally:
        await later.nc.close()


async def test_a_consumer_is_updated_where_it_can_be_and_refused_where_not(
    client: Client,
) -> None:
    s = await client.stream("WORK", subjects=["work.>"]).ensure()
    await s.ensure_consumer("d", filter_subject="work.a", max_ack_pending=1, ack_wait=6)
    await s.ensure_consumer("d", filter_subject="work.b", max_ack_pending=8, ack_wait=30)
    got = await consumer_config(client.connection, "WORK", "d")
    assert got is not None
    assert got["filter_subject"] == "work.b" and got["max_ack_pending"] == 8
    assert got["ack_wait"] == 30 * NS
    with pytest.raises(ConfigDrift) as err:
        await s.ensure_consumer("d", filter_subject="work.b", max_ack_pending=8, ack_wait=30,
                                deliver_policy="new")  # fmt: skip
    assert err.value.field == "deliver_policy"
    assert "python -m engine consumer delete WORK d" in err.value.message
    assert (await consumer_config(client.connection, "WORK", "d") or {})["deliver_policy"] == "all"


CONFIGURED = (
    EXAMPLE_CONFIG
    + """
buckets:
  - {name: cfg_bucket, history: 1}
streams:
  - {name: CFGSTREAM, subjects: ["cfg.a.>"], retention: limits, max_age: 3600}
"""
)


async def test_the_engines_config_streams_and_buckets_follow_their_declaration(
    engine_factory: Any,
) -> None:
    eng = engine_factory(CONFIGURED).start()
    eng.stop(30)
    eng.config.write_text(eng.config.read_text().replace("history: 1", "history: 4")
                          .replace("cfg.a.>", "cfg.b.>").replace("max_age: 3600", "max_age: 60"))  # fmt: skip
    eng.start()
    c = await eng.client()
    try:
        bucket, stream = await config(c, "KV_cfg_bucket"), await config(c, "CFGSTREAM")
    finally:
        await c.nc.close()
    assert bucket["max_msgs_per_subject"] == 4
    assert stream["subjects"] == ["cfg.b.>"] and stream["max_age"] == 60 * NS
    # A change JetStream cannot make stops the start, saying what to do; doing it works.
    eng.stop(30)
    eng.config.write_text(
        eng.config.read_text().replace("retention: limits", "retention: workqueue")
    )
    with pytest.raises(RuntimeError) as err:
        eng.start(timeout=60)
    said = "".join(eng.lines)
    assert "retention" in said and "python -m engine stream delete CFGSTREAM" in said, said[-2000:]
    assert "engine did not start" in str(err.value)
    out = subprocess.run(
        [sys.executable, "-m", "engine", "stream", "delete", "CFGSTREAM",
         "--config", str(eng.config), *eng.args()],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0 and "deleted" in out.stdout, out.stderr
    eng.start()
    c = await eng.client()
    try:
        assert (await config(c, "CFGSTREAM"))["retention"] == "workqueue"
    finally:
        await c.nc.close()


CREATION = re.compile(r"\.(add_stream|create_key_value|create_object_store|add_consumer)\(")
ALLOWED = {"engine/_streams.py", "engine/_kv.py", "engine/_objects.py", "engine/_scan.py"}
"""engine/_scan.py makes the ephemeral consumer of one scan (deleted at its end): a read,
not a declaration there is anything to reconcile with."""


@pytest.mark.unit
def test_every_declaration_goes_through_the_reconciling_entry_points() -> None:
    """Streams, buckets, object stores and consumers are made in the three engine modules
    that reconcile them; anything else creating one directly would skip the check (the
    benches, which build raw peers on purpose, are not the product)."""
    found = []
    for folder in ("engine", "triggers", "functions", "workers"):
        for path in (ROOT / folder).rglob("*.py"):
            rel = str(path.relative_to(ROOT))
            if rel not in ALLOWED and CREATION.search(path.read_text()):
                found.append(rel)
    assert found == []


@pytest.mark.unit
def test_the_check_above_can_see_a_direct_creation(tmp_path: Path) -> None:
    assert CREATION.search("await js.add_stream(cfg)")
    assert CREATION.search("await js.add_consumer(stream, cfg)")
