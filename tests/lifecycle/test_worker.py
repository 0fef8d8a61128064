"""The real processes: the memory worker takes 20 synthetic coding sessions through
mem::observe, the lifecycle worker consolidates them over the bus."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engine import Client, FunctionError
from functions.kernel.clock import iso
from functions.kernel.records import Memory
from functions.kernel.store import MemoryStore
from tests.lifecycle._data import T0

SHARED = ["src/app/auth.py", "src/app/models.py", "src/app/api.py", "tests/test_auth.py"]


def events(session: int, rng: random.Random) -> list[dict[str, Any]]:
    sid = f"coding-{session:02d}"
    base = T0 + timedelta(days=session)
    out: list[dict[str, Any]] = []

    def add(minute: int, hook: str, data: dict[str, Any]) -> None:
        out.append(
            {
                "hookType": hook,
                "sessionId": sid,
                "project": "shop",
                "cwd": "/repo/shop",
                "timestamp": iso(base + timedelta(minutes=minute)),
                "data": data,
            }
        )

    add(0, "prompt_submit", {"prompt": f"fix ticket {session} in the auth flow"})
    add(
        1,
        "post_tool_use",
        {
            "tool_name": "Read",
            "tool_input": {"file_path": rng.choice(SHARED)},
            "tool_output": "...",
        },
    )
    # the recurring workflow: edit auth, run the tests, commit
    add(
        2,
        "post_tool_use",
        {
            "tool_name": "Edit",
            "tool_input": {"file_path": "src/app/auth.py", "old_string": "a", "new_string": "b"},
            "tool_output": "ok",
        },
    )
    add(
        3,
        "post_tool_use",
        {
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q tests/test_auth.py"},
            "tool_output": "3 passed",
        },
    )
    add(
        4,
        "post_tool_use",
        {
            "tool_name": "Bash",
            "tool_input": {"command": f"git commit -am 'ticket {session}'"},
            "tool_output": "1 file changed",
        },
    )
    add(
        5,
        "post_tool_use",
        {
            "tool_name": "Edit",
            "tool_input": {
                "file_path": rng.choice(SHARED[1:]),
                "old_string": "c",
                "new_string": "d",
            },
            "tool_output": "ok",
        },
    )
    return out


@pytest.fixture
def workers(spawn: Any, tmp_path: Path) -> None:
    env = {
        "AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"),
        "HOME": str(tmp_path / "home"),
        "AGENTMEMORY_SEARCH": "off",
    }
    spawn("workers.memory", env=env)
    spawn("workers.lifecycle", env=env)


async def test_twenty_sessions_consolidate_into_facts_and_a_workflow_with_sources(
    client: Client, workers: None
) -> None:
    rng = random.Random(7)
    for s in range(20):
        for ev in events(s, rng):
            await client.call("mem::observe", ev)
        await client.call("mem::session-end", {"sessionId": f"coding-{s:02d}"})

    out = await client.call("mem::consolidate", {"now": iso(T0 + timedelta(days=30))}, timeout=60)
    assert out["summarized"] == 20
    assert out["semantic"]["created"] >= 3
    assert out["procedural"]["created"] >= 1

    store = await MemoryStore(client).open()
    observations = {o.id: o for o in await store.load_observations()}
    memories = await store.load_all(store.memories, Memory)
    facts = {m.title: m for m in memories if m.type == "semantic"}
    auth = facts["src/app/auth.py is a hot spot"]
    assert auth.source_ids and all(
        "src/app/auth.py" in observations[i].files for i in auth.source_ids
    )
    naming = sorted(
        (o for o in observations.values() if "src/app/auth.py" in o.files),
        key=lambda o: o.timestamp,
    )
    assert set(auth.source_ids) == {o.id for o in naming}  # every supporting observation
    tests = facts["tests/test_auth.py is a hot spot"]
    assert len(tests.source_ids) == len({i for i in tests.source_ids})
    assert "Runs `pytest`" in facts and "Runs `git commit`" in facts

    workflows = [m for m in memories if m.type == "procedural"]
    flow = next(
        m for m in workflows if m.steps == ["edit src/app/auth.py", "run pytest", "run git commit"]
    )
    assert flow.confidence is not None and flow.confidence > 0.8
    supporting = [observations[i] for i in flow.source_ids]
    assert {o.session_id for o in supporting} and len(flow.source_ids) == 32
    for o in supporting:
        assert o.files == ["src/app/auth.py"] or o.title.startswith(
            ("Ran: pytest", "Ran: git commit")
        )

    again = await client.call("mem::consolidate", {"now": iso(T0 + timedelta(days=31))}, timeout=60)
    assert again["semantic"]["created"] == again["semantic"]["updated"] == 0
    assert again["procedural"]["created"] == again["procedural"]["updated"] == 0


async def test_bad_lifecycle_requests_name_the_field(client: Client, workers: None) -> None:
    with pytest.raises(FunctionError) as bad_now:
        await client.call("mem::consolidate", {"now": "yesterday"})
    assert bad_now.value.code == "BAD_REQUEST" and bad_now.value.field == "now"
    with pytest.raises(FunctionError) as no_ids:
        await client.call("mem::reinforce", {"ids": []})
    assert no_ids.value.code == "BAD_REQUEST" and no_ids.value.field == "ids"
    with pytest.raises(FunctionError) as blank:
        await client.call("mem::lesson::save", {"content": "   "})
    assert blank.value.code == "BAD_REQUEST" and blank.value.field == "content"
