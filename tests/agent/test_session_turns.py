"""A Claude Code session of many turns, a Stop hook after each: one session, active from
turn to turn, ended once by the idle finaliser after the last turn's silence; summarized
after every turn, each pass reading only the records stored since the last."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine import Client, connect
from functions.kernel.ids import kv_key
from functions.kernel.records import SESSIONS_BUCKET
from tests.agent.cli_stack import CliStack, new_stack, run_hook, teardown
from tests.fixtures import wait_until
from workers.hooks import SCRIPTS

IDLE_MS = 8000
"""Long enough that no turn of the test, on a loaded machine, looks like silence."""
TURNS = 20
HOOK = f"{os.path.realpath(sys.executable)} -S {SCRIPTS['claude-code']}"
SID = "c0ffee00-1111-4222-8333-444455556666"


@pytest.fixture
def turns_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliStack]:
    st = new_stack(tmp_path_factory.mktemp("turns"))
    st.env["AGENTMEMORY_FINALIZE_IDLE_MS"] = str(IDLE_MS)
    st.start()
    yield st
    teardown(st)


def _event(st: CliStack, name: str, **extra: Any) -> dict[str, Any]:
    return {
        "session_id": SID,
        "transcript_path": f"/tmp/{SID}.jsonl",
        "cwd": str(st.project_dir),
        "permission_mode": "default",
        "hook_event_name": name,
        **extra,
    }


def _session(st: CliStack) -> dict[str, Any]:
    with st.rest() as c:
        sessions = c.get("/agentmemory/sessions", params={"limit": 50}).json()["sessions"]
    [mine] = [s for s in sessions if s["id"] == SID]
    found: dict[str, Any] = mine
    return found


async def _count_ends(st: CliStack, nats_url: str, ends: list[str], stop: asyncio.Event) -> None:
    """Every write of the session that turned it to `ended`, as the bucket stores it."""
    nc = await connect(nats_url, str(st.data_dir / "nats" / "credentials.json"))
    try:
        bucket = await Client(nc).bucket(SESSIONS_BUCKET)
        watch = await bucket.changes(kv_key(SID))
        async with watch:
            status = ""
            async for ch in watch:
                if stop.is_set():
                    break
                value = getattr(ch, "value", None)
                if not isinstance(value, (bytes, bytearray)):
                    continue
                now = json.loads(value).get("status", "active")
                if now == "ended" and status != "ended":
                    ends.append(json.loads(value)["ended_at"])
                status = now
    finally:
        await nc.close()


async def test_twenty_turns_are_one_session_ended_once_and_summarized_linearly(
    turns_stack: CliStack,
) -> None:
    st = turns_stack
    nats_url = json.loads(st.cli("status", "--json").stdout)["nats"]["url"]
    ends: list[str] = []
    stop = asyncio.Event()
    watcher = asyncio.create_task(_count_ends(st, nats_url, ends, stop))
    env = st.hook_env()
    assert run_hook(HOOK, _event(st, "SessionStart", source="startup"), env)[0] == 0
    reads: list[int] = []
    for turn in range(1, TURNS + 1):
        payloads = [
            _event(st, "UserPromptSubmit", prompt=f"step {turn}: tighten the refund rounding"),
            _event(
                st, "PostToolUse", tool_name="Bash", tool_use_id=f"toolu_{turn:03d}",
                tool_input={"command": f"pytest -q tests/test_refunds.py -k case_{turn}"},
                tool_response={"stdout": f"{turn} passed", "exit_code": 0},
            ),
            _event(st, "Stop", stop_hook_active=False, last_assistant_message=f"Turn {turn} done."),
        ]  # fmt: skip
        for p in payloads:
            assert (await asyncio.to_thread(run_hook, HOOK, p, env))[0] == 0
        assert _session(st)["status"] == "active", f"turn {turn} ended the session"
        with st.rest() as c:
            out = c.post("/agentmemory/summarize", json={"sessionId": SID}).json()
        reads.append(out["read"])
    total = len(st.observations(SID))
    assert total == 3 * TURNS  # a prompt, a tool call and the turn's answer
    # each pass read what its turn stored, once: the summaries cost O(N), not O(N^2)
    assert sum(reads) == total, reads
    assert max(reads) <= 6, reads
    with st.rest() as c:
        again = c.post("/agentmemory/summarize", json={"sessionId": SID}).json()
        full = c.post("/agentmemory/summarize", json={"sessionId": SID, "force": True}).json()
    assert again["read"] == 0 and again["written"] is False
    assert full["read"] == total  # from the start: what a pass without a watermark reads
    assert full["summary"]["observationCount"] == total
    assert full["summary"]["coveredThrough"]

    last_stop = time.monotonic()
    ended = await asyncio.to_thread(
        wait_until,
        lambda: (s := _session(st))["status"] == "ended" and s,
        timeout=IDLE_MS / 1000 + 60,
        what="the session ended by the idle finaliser",
    )
    assert time.monotonic() - last_stop >= IDLE_MS / 1000 * 0.8  # not before the silence
    await asyncio.sleep(IDLE_MS / 1000 + 2)  # a second period: nothing ends it again
    stop.set()
    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    assert ends == [ended["endedAt"]], ends
    with st.rest() as c:
        sessions = c.get("/agentmemory/sessions", params={"limit": 50}).json()["sessions"]
    assert [s["id"] for s in sessions] == [SID]  # one session for all twenty turns
