"""One product stack for the viewer tests (config/engine.yaml as `make run` starts it, on its
own port block, HOME and secret), shared by every module of this folder."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import ROOT, EngineProcess
from workers.viewer import tokens

SECRET = "viewer-test-" + secrets.token_hex(8)


@dataclass
class Stack:
    engine: EngineProcess
    home: Path

    @property
    def viewer(self) -> str:
        return f"http://127.0.0.1:{self.engine.ports['viewer']}"

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.engine.ports['rest']}"

    def login_url(self, ttl: float = tokens.LOGIN_TTL) -> str:
        """What `agentmemory viewer` opens: a one-time link that signs a browser in."""
        return tokens.login_url(self.engine.ports["viewer"], SECRET, ttl)

    def viewed(self) -> httpx.Client:
        """A client signed in to the viewer as a browser is: the link, then its cookie."""
        c = httpx.Client(base_url=self.viewer, timeout=30)
        r = c.get(self.login_url().removeprefix(self.viewer), follow_redirects=False)
        assert r.status_code == 303 and self.cookie_name in r.headers["set-cookie"], r.text
        return c

    @property
    def cookie_name(self) -> str:
        return tokens.cookie_name(self.engine.ports["viewer"])

    def cookie(self, c: httpx.Client) -> dict[str, str]:
        """The Cookie header of a signed-in client (for the live socket)."""
        return {"Cookie": f"{self.cookie_name}={c.cookies[self.cookie_name]}"}

    def rest(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.rest_url, headers={"authorization": f"Bearer {SECRET}"}, timeout=30
        )

    def observe(self, session: str, n: int, project: str = "viewer-demo", start: int = 0) -> None:
        """`n` tool observations in `session` (each a call and its result on replay)."""
        with self.rest() as c:
            for i in range(start, start + n):
                r = c.post(
                    "/agentmemory/observe",
                    json={
                        "hookType": "post_tool_use",
                        "sessionId": session,
                        "project": project,
                        "timestamp": f"2026-11-20T10:{i // 60:02d}:{i % 60:02d}.000Z",
                        "data": {
                            "tool_name": "Bash",
                            "tool_input": {"command": f"pytest tests/test_step_{i}.py -q"},
                            "tool_output": f"{i + 1} passed",
                        },
                        "eventId": f"{session}-{i}",
                    },
                )
                assert r.status_code in (200, 201), r.text


def digest(stack: Stack) -> None:
    """The lifecycle's event digest now, instead of at its next minute (it builds the graph)."""

    async def run() -> None:
        c = await stack.engine.client()
        try:
            await c.call("mem::digest-events", None, timeout=120)
        finally:
            await c.nc.close()

    with ThreadPoolExecutor(1) as pool:  # the sync Playwright API holds this thread's loop
        pool.submit(asyncio.run, run()).result()


def transcript(sid: str, cwd: str, turns: int = 3) -> str:
    """A Claude Code transcript: a prompt, then per turn an assistant text with a tool use
    and its result; the texts state rules (lessons) a session import should learn."""
    base = {"sessionId": sid, "cwd": cwd, "version": "2.0.14", "gitBranch": "main"}
    recs: list[dict[str, Any]] = [
        {**base, "type": "summary", "summary": "export fix"},
        {**base, "type": "user", "uuid": f"{sid}-u0", "timestamp": "2026-11-20T09:00:00.000Z",
         "message": {"role": "user", "content": "The orders CSV export is missing the VAT column. "
                     "Always keep the column order stable for the accounting import."}},
    ]  # fmt: skip
    for i in range(turns):
        tid = f"toolu_{sid[-4:]}_{i}"
        recs.append(
            {**base, "type": "assistant", "uuid": f"{sid}-a{i}",
             "timestamp": f"2026-11-20T09:0{i + 1}:00.000Z",
             "message": {"role": "assistant", "content": [
                 {"type": "text", "text": f"Step {i}: checking the exporter. Never reorder the "
                  "existing columns, the accounting import reads them by position."},
                 {"type": "tool_use", "id": tid, "name": "Bash",
                  "input": {"command": f"pytest tests/export -k step{i}"}}]}}
        )  # fmt: skip
        recs.append(
            {**base, "type": "user", "uuid": f"{sid}-r{i}",
             "timestamp": f"2026-11-20T09:0{i + 1}:30.000Z",
             "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": tid, "content": f"{i + 2} passed",
                  "is_error": False}]}}
        )  # fmt: skip
    return "\n".join(json.dumps(r) for r in recs) + "\n{torn"


@pytest.fixture
def viewer(stack: Stack) -> Iterator[httpx.Client]:
    c = stack.viewed()
    yield c
    c.close()


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("viewer")
    home = tmp / "home"
    home.mkdir()
    cfg = yaml.safe_load((ROOT / "config" / "engine.yaml").read_text())
    cfg.setdefault("env", {}).update({"AGENTMEMORY_SECRET": SECRET, "HOME": str(home)})
    engine = EngineProcess(tmp, yaml.safe_dump(cfg))
    try:
        engine.start(timeout=120)
        yield Stack(engine, home)
    finally:
        engine.stop(30)
        engine.kill_all()
