"""A data dir written by the code before records on MEM_EVENTS (an observation per KV key,
data/kv_layout_datadir.tar.gz) opens with today's code: upgraded in place at start
(functions/kernel/store_upgrade.py), it serves the same records and the same search results,
and replays of what it stored stay duplicates. test_store_upgrade.py takes each case of the
old layout apart, and a killed upgrade."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import Client, FunctionError
from engine.server import NatsServer
from functions.kernel.records import (
    OBSERVATIONS_BUCKET,
)
from tests.fixtures import eventually
from tests.memory.test_store_upgrade import gone, messages

FIXTURE = Path(__file__).parent / "data" / "kv_layout_datadir.tar.gz"
"""Written by the code before the change: data/make_kv_layout_datadir.py says how."""


@pytest.fixture
def old_dir(tmp_path: Path) -> Path:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path / "old", filter="data")
    return tmp_path / "old"


@pytest.fixture
def nats_server(old_dir: Path) -> Iterator[NatsServer]:
    """The tests' server, on the old data dir."""
    srv = NatsServer(store_dir=old_dir / "js").start()
    yield srv
    srv.kill()


async def test_a_data_dir_written_before_serves_the_same_records_and_search_results(
    client: Client, spawn: Any, old_dir: Path, tmp_path: Path
) -> None:
    expected = json.loads((old_dir / "expected.json").read_text())
    spawn("workers.memory", env={
        "AGENTMEMORY_SEARCH": "on", "EMBEDDING_PROVIDER": "none", "ENGINE_TRACING": "off",
        "SEARCH_INDEX_DIR": str(tmp_path / "search"), "HOME": str(tmp_path / "home"),
        "AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"),
    })  # fmt: skip
    assert await gone(client, f"KV_{OBSERVATIONS_BUCKET}")
    assert await gone(client, "KV_mem_dedup")
    for oid, record in expected["observations"].items():
        got = await client.call("mem::observation", {"id": oid}, timeout=10)
        assert got["observation"] == record, oid
    with pytest.raises(FunctionError) as err:
        await client.call("mem::observation", {"id": expected["forgotten"]}, timeout=10)
    assert err.value.code == "NOT_FOUND"
    stored = await messages(client)
    assert sorted(o.id for o in stored) == sorted(expected["observations"])  # one each
    for sid, ids in expected["sessions"].items():
        got = await client.call("mem::observations", {"sessionId": sid}, timeout=10)
        assert [o["id"] for o in got["observations"]] == ids, sid

    async def same_results() -> bool:
        for key, want in expected["search"].items():
            project, query = key.split("|")
            got = await client.call(
                "mem::smart-search", {"query": query, "project": project, "limit": 10}
            )
            if [[r["obsId"], r["score"]] for r in got["results"]] != want:
                return False
        return True

    await eventually(same_results, timeout=20, what="the same search results")
    # Replays of what the old layout stored are duplicates; a new event is stored.
    from tests.memory.data.make_kv_layout_datadir import payload

    for i in (0, 5, 59):  # 5 was forgotten
        assert (await client.call("mem::observe", payload(i), timeout=10))["status"] == "duplicate"
    assert (await client.call("mem::observe", payload(60), timeout=10))["status"] == "accepted"
    assert len(await messages(client)) == len(stored) + 1
