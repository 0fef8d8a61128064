"""A torn store: the machine crashed mid-write and the last block of a stream or a bucket
ends cut short or zero-filled.

nats-server keeps every message before the tear and drops the rest, silently; after a
crash the stream's sequence then goes back, and new messages reuse the numbers of the lost
ones. The engine starts, says what was repaired (its log and `engine status`), and the
product serves everything before the tear and every write after it (a read model whose
snapshot covered the lost numbers must not skip their new owners)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from engine import Client
from functions.kernel.observation_records import ObservationRecords
from functions.kernel.records import EVENTS_STREAM, OBSERVATION_INDEX_BUCKET
from functions.kernel.store import events_stream
from ops.procfs import process_tree
from tests.fixtures import EngineProcess, eventually

CONFIG = """
workers:
  - name: memory
    module: workers.memory
    env: {AGENTMEMORY_SEARCH: "on", SEARCH_SNAPSHOT_SECONDS: "1", ENGINE_TRACING: "off"}
"""
N = 240
INDEX = f"KV_{OBSERVATION_INDEX_BUCKET}"


def _word(i: int) -> str:
    return "tornq" + "".join(chr(ord("a") + (i // 26**k) % 26) for k in range(3))


def _body(i: int, run: str = "a") -> dict[str, Any]:
    return {
        "hookType": "post_tool_use",
        "sessionId": f"torn-{run}",
        "project": "torn",
        "cwd": "/work/torn",
        "timestamp": "2026-12-01T10:00:00.000Z",
        "eventId": f"toolu_torn_{run}_{i:05d}",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": f"grep -r {_word(i)} src"},
            "tool_output": f"src/{_word(i)}.py: found {_word(i)} " + "x" * 600,
        },
    }


def _last_block(store: Path, stream: str) -> Path:
    msgs = store / "jetstream" / "$G" / "streams" / stream / "msgs"
    return max(msgs.glob("*.blk"), key=lambda p: int(p.stem))


def _tear(block: Path, how: str) -> None:
    size = block.stat().st_size
    if how == "truncate":  # mid-record, as a write cut short
        os.truncate(block, size // 2 + 100)
    else:  # the tail zero-filled, as a crash between extending the file and writing it
        with block.open("r+b") as f:
            f.seek(size - size // 2)
            f.write(b"\0" * (size // 2))


async def _found(client: Client, word: str, oid: str) -> bool:
    out = await client.call("mem::search", {"query": word, "limit": 5}, timeout=10)
    return oid in {r.get("id") or r.get("obsId") for r in out.get("results", [])}


@pytest.mark.parametrize("how", ["truncate", "zero-fill"])
async def test_a_torn_store_starts_says_what_it_repaired_and_serves_before_and_after(
    tmp_path: Path, how: str
) -> None:
    (tmp_path / "e").mkdir()
    engine = EngineProcess(tmp_path / "e", CONFIG)
    try:
        engine.start()
        client = await engine.client()
        ids = []
        for i in range(N):
            out = await client.call("mem::observe", _body(i), timeout=10)
            ids.append(out["observationId"])
        await eventually(
            lambda: _found(client, _word(N - 1), ids[-1]), timeout=20, what="the last one indexed"
        )
        await asyncio.sleep(3)  # a snapshot and the engine's marks cover every event now
        await client.nc.close()

        assert engine.proc is not None
        pids = process_tree(engine.proc.pid)
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for p in pids:
                os.kill(p, sig)
        engine.proc.wait()
        store = engine.data_dir / "nats"
        for stream in (EVENTS_STREAM, INDEX):
            _tear(_last_block(store, stream), how)

        engine.start()
        log = "".join(engine.lines)
        assert "store repaired" in log and EVENTS_STREAM in log, log[-3000:]
        repairs = {r["stream"]: r for r in engine.status()["store"]["repairs"]}  # type: ignore[index]
        assert {EVENTS_STREAM, INDEX} <= set(repairs), repairs
        # The torn record was cut off, and the engine's marks tell how far the stream had got.
        assert all(r["cut_bytes"] > 0 for r in repairs.values()), repairs
        assert all(r["seen_last_seq"] > r["last_seq"] for r in repairs.values()), repairs
        assert repairs[EVENTS_STREAM]["seen_last_seq"] == N, repairs

        client = await engine.client()
        try:
            records = await ObservationRecords(client, events_stream(client)).open()
            got = await asyncio.gather(*(records.get(oid) for oid in ids))
            kept = [i for i, g in enumerate(got) if g is not None]
            assert 0 < len(kept) < N, len(kept)
            assert kept == list(range(len(kept))), "what survives is what came before the tear"
            # Everything before the tear is served: read, and found by search.
            for i in (*kept[:: max(1, len(kept) // 8)], kept[-1]):
                r = await client.call("mem::observation", {"id": ids[i]}, timeout=10)
                assert r, i
            events = await client.nc.jetstream().stream_info(EVENTS_STREAM)
            for i in kept[: events.state.messages][-3:]:
                assert await eventually(
                    lambda i=i: _found(client, _word(i), ids[i]), timeout=20, what=f"obs {i}"
                )
            # Writes after the repair reuse the lost sequence numbers: still indexed.
            fresh = [
                (await client.call("mem::observe", _body(i, "b"), timeout=10))["observationId"]
                for i in range(N, N + 5)
            ]
            for k, oid in enumerate(fresh):
                await eventually(
                    lambda k=k, oid=oid: _found(client, _word(N + k), oid),
                    timeout=20,
                    what=f"a new observation {k} found after the repair",
                )
            # A lost observation sent again (a hook's spool does) is stored, not "duplicate".
            lost = len(kept)
            again = await client.call("mem::observe", _body(lost), timeout=10)
            assert again["status"] == "accepted", again
        finally:
            await client.nc.close()
    finally:
        engine.stop(20)
        engine.kill_all()


async def test_a_clean_restart_reports_no_repair(tmp_path: Path) -> None:
    (tmp_path / "e").mkdir()
    engine = EngineProcess(tmp_path / "e", CONFIG)
    try:
        engine.start()
        client = await engine.client()
        for i in range(20):
            await client.call("mem::observe", _body(i), timeout=10)
        await client.nc.close()
        engine.stop(30)
        engine.start()
        assert engine.status()["store"]["repairs"] == []  # type: ignore[index]
        assert "store repaired" not in "".join(engine.lines)
    finally:
        engine.stop(20)
        engine.kill_all()
