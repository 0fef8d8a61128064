"""The project profile follows what a project does now: after Python/pytest sessions, two
TypeScript/npm sessions put their files and conventions on top at the next digest, not only
after consolidation; a long-lived project keeps its stable core through a side quest.

Replayed through the real processes: hook-shaped events go through `mem::observe` (memory
worker, search on), the lifecycle worker folds MEM_EVENTS (`mem::digest-events`, what its
cron runs), and the profile is read as agents read it (`mem::profile`, `mem::context`).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engine import Client
from functions.kernel.clock import iso
from tests.lifecycle._data import T0

PY_FILES = ["tests/test_ws.py", "src/ws/server.py", "src/ws/protocol.py"]
TS_FILES = ["src/refresh.ts", "test/refresh.test.ts", "src/types/session.d.ts"]


class Session:
    def __init__(self, project: str, sid: str, day: float) -> None:
        self.project, self.sid, self.base = project, sid, T0 + timedelta(days=day)
        self.events: list[dict[str, Any]] = []

    def add(self, hook: str, data: dict[str, Any]) -> None:
        self.events.append(
            {
                "hookType": hook,
                "sessionId": self.sid,
                "project": self.project,
                "cwd": f"/repo/{self.project}",
                "timestamp": iso(self.base + timedelta(minutes=len(self.events))),
                "data": data,
            }
        )

    def edit(self, path: str) -> None:
        self.add(
            "post_tool_use",
            {
                "tool_name": "Edit",
                "tool_input": {"file_path": path, "old_string": "a", "new_string": "b"},
                "tool_output": json.dumps({"filePath": path, "userModified": False}),
            },
        )

    def bash(self, command: str, stdout: str) -> None:
        self.add(
            "post_tool_use",
            {
                "tool_name": "Bash",
                "tool_input": {"command": command},
                # as the hook sends Claude Code's response: JSON text
                "tool_output": json.dumps(
                    {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}
                ),
            },
        )


def python_session(project: str, n: int, day: float) -> Session:
    s = Session(project, f"py-{n}", day)
    s.add("prompt_submit", {"prompt": f"fix the websocket reconnect bug #{n}"})
    for _ in range(4):
        for f in PY_FILES:
            s.edit(f)
        s.bash("pytest -q tests/test_ws.py", "tests/test_ws.py ....  [100%]\n4 passed")
    s.bash("uv pip install websockets", "Installed 1 package")
    return s


def ts_session(project: str, n: int, day: float) -> Session:
    s = Session(project, f"ts-{n}", day)
    s.add("prompt_submit", {"prompt": f"token refresh in the TypeScript client, step {n}"})
    for _ in range(3):
        for f in TS_FILES:
            s.edit(f)
        s.bash("npm test", "PASS test/refresh.test.ts\n  refresh rotates the token")
    s.bash("npm install jose", "added 1 package")
    return s


@pytest.fixture
def workers(spawn: Any, tmp_path: Path) -> None:
    env = {"AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"), "HOME": str(tmp_path / "home")}
    spawn("workers.memory", env=env)
    spawn("workers.lifecycle", env=env)


async def replay(client: Client, sessions: list[Session]) -> None:
    for s in sessions:
        await client.call("mem::session-start", {"sessionId": s.sid, "project": s.project})
        for ev in s.events:
            await client.call("mem::observe", ev)
        await client.call("mem::session-end", {"sessionId": s.sid})
    await client.call("mem::digest-events", {}, timeout=60)


async def test_two_typescript_sessions_after_python_ones_lead_the_profile(
    client: Client, workers: None
) -> None:
    project = "chat"
    await replay(client, [python_session(project, n, day=n) for n in range(4)])
    before = await client.call("mem::profile", {"project": project})
    assert before["topFiles"][0] == "tests/test_ws.py"
    assert "Python project" in before["conventions"]
    assert "Tests run with `pytest`" in before["conventions"]

    await replay(client, [ts_session(project, n, day=4 + n / 4) for n in range(2)])
    after = await client.call("mem::profile", {"project": project})
    assert set(after["topFiles"][:3]) == set(TS_FILES), after["topFiles"]
    assert "TypeScript project" in after["conventions"], after["conventions"]
    assert "Python project" not in after["conventions"]
    assert "Tests run with `npm test`" in after["conventions"], after["conventions"]
    assert after["topCommands"][0] == "npm test"
    assert "typescript" in after["topConcepts"][:3]
    # the envelope of the tool responses is no concept
    assert not {"stdout", "stderr", "interrupted", "isimage", "file_path"} & set(
        after["topConcepts"]
    )

    ctx = await client.call("mem::context", {"project": project, "budget": 2000})
    profile_line = next(b["content"] for b in ctx["blocks"] if b["type"] == "profile")
    assert profile_line.split("files: ", 1)[1].startswith(tuple(TS_FILES)), profile_line


async def test_a_long_lived_project_keeps_its_core_through_a_side_quest(
    client: Client, workers: None
) -> None:
    project = "shop"
    sessions = []
    for n in range(12):
        s = Session(project, f"s-{n}", day=n)
        s.edit("src/app/api.py")
        s.edit("src/app/models.py")
        for _ in range(5):  # each session also works a lot on a file of its own
            s.edit(f"src/app/feature_{n}.py")
        s.bash("pytest -q", "12 passed")
        sessions.append(s)
    side = Session(project, "side", day=12)
    for _ in range(6):
        side.edit("scripts/migrate.ts")
    sessions.append(side)
    await replay(client, sessions)

    prof = await client.call("mem::profile", {"project": project})
    top = prof["topFiles"]
    assert {"src/app/api.py", "src/app/models.py"} <= set(top[:3]), top
    assert "scripts/migrate.ts" in top[:3], top  # the latest work shows too
    assert "src/app/feature_0.py" not in top[:5], top  # one session long ago fades
    assert "Python project" in prof["conventions"]
