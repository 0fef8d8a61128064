"""A memory stack for the quarantine tests: the http trigger, the memory worker (with
retrieval in-process) and upstream's MCP shim routes, each a real process on a real
nats-server; records the write path would hold are written through the store."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from engine import Client
from functions.kernel.clock import now_iso
from functions.kernel.ids import new_id
from functions.kernel.records import Observation, Trust
from functions.kernel.store import MemoryStore
from tests.fixtures import eventually

SECRET = "quarantine-test-secret"
AUTH = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def rest_stack(spawn: Any, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    port = free_port()
    home = str(tmp_path / "home")
    spawn("workers.trigger_plugins", "http", env={
        "AGENTMEMORY_REST_PORT": str(port), "AGENTMEMORY_SECRET": SECRET, "HOME": home,
    })  # fmt: skip
    spawn("workers.memory", env={"AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"), "HOME": home})
    spawn("workers.mcp.rest", env={"HOME": home})
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers=AUTH, timeout=30
    ) as rest:

        async def served() -> bool:
            ok = (await rest.get("/agentmemory/quarantine")).status_code == 200
            tools = await rest.get("/agentmemory/mcp/tools")
            return ok and tools.status_code == 200

        await eventually(served, timeout=30, what="quarantine and MCP routes served")
        yield rest


async def write_held(
    client: Client,
    text: str,
    *,
    project: str = "trust",
    session: str = "s-held",
    reasons: list[str] | None = None,
    source: str = "web",
) -> Observation:
    """An observation as the write path stores one it holds: stored, its event published,
    its verdict on the record."""
    store = await MemoryStore(client).open()
    o = Observation(
        id=new_id("obs"), session_id=session, project=project, hook_type="post_tool_use",
        timestamp=now_iso(), type="web_fetch", title=text[:80], narrative=text, raw=text,
        tool_name="WebFetch",
        trust=Trust(held=True, reasons=reasons or ["instruction-to-ai"], source=source),
    )  # fmt: skip
    assert await store.add_observation(o)
    return o


async def observe(rest: httpx.AsyncClient, text: str, *, project: str = "trust",
                  session: str = "s-clean", tool: str = "Bash") -> str:  # fmt: skip
    r = await rest.post("/agentmemory/observe", json={
        "hookType": "post_tool_use", "sessionId": session, "project": project, "cwd": "/w",
        "timestamp": now_iso(),
        "data": {"tool_name": tool, "tool_input": {"command": "cat notes.md"}, "tool_output": text},
    })  # fmt: skip
    assert r.status_code == 201, r.text
    return str(r.json()["observationId"])
