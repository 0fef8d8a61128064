"""The Claude API's memory tool kept in agentmemory (workers/claude_memory): the anthropic
SDK's tool runner, against a local stand-in of the Messages API that issues memory tool
calls, drives view, create, str_replace, insert, rename and delete; the files are
memories in the store (REST shows them), a secret planted in a file is scrubbed, and a
`../` path is refused."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from anthropic import Anthropic

from tests.fixtures import SECRET
from workers.claude_memory import AgentMemoryTool

SECRET_KEY = "AKIAIOSFODNN7EXAMPLQ"
"""An AWS access key id: the scrubber's rules know its shape."""
PLAN: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories"},
    {"command": "create", "path": "/memories/notes.md",
     "file_text": f"# Notes\nuser prefers tabs\ndeploy key {SECRET_KEY}\n"},
    {"command": "create", "path": "/memories/prefs.md", "file_text": "theme: dark\n"},
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "tabs",
     "new_str": "spaces"},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 1,
     "insert_text": "## Preferences"},
    {"command": "view", "path": "/memories/notes.md"},
    {"command": "create", "path": "/memories/../etc/passwd", "file_text": "root:x:0:0\n"},
    {"command": "view", "path": "/memories/../../home"},
    {"command": "rename", "old_path": "/memories/notes.md",
     "new_path": "/memories/archive/notes.md"},
    {"command": "view", "path": "/memories"},
    {"command": "delete", "path": "/memories/prefs.md"},
]  # fmt: skip


class StandIn:
    """A Messages API that answers each request with the next planned memory tool call
    (then `end_turn`), and keeps the tool results the runner sent back."""

    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.step = 0
        self.lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests.append(body)
            last = body["messages"][-1]
            if last["role"] == "user" and isinstance(last["content"], list):
                self.results += [b for b in last["content"] if b.get("type") == "tool_result"]
            step, self.step = self.step, self.step + 1
        if step >= len(PLAN):
            content: list[dict[str, Any]] = [{"type": "text", "text": "Done."}]
            stop = "end_turn"
        else:
            content = [{"type": "text", "text": f"step {step}"},
                       {"type": "tool_use", "id": f"toolu_{step:03d}", "name": "memory",
                        "input": PLAN[step]}]  # fmt: skip
            stop = "tool_use"
        return {"id": f"msg_{step:03d}", "type": "message", "role": "assistant",
                "model": body.get("model", "stand-in"), "content": content,
                "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip


@pytest.fixture
def messages_api() -> Iterator[tuple[str, StandIn]]:
    stand_in = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if not self.path.split("?")[0].endswith("/v1/messages"):
                self.send_error(404)
                return
            data = json.dumps(stand_in.answer(body)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", stand_in
    finally:
        server.shutdown()
        server.server_close()


def run_conversation(api: str, rest: str) -> None:
    tool = AgentMemoryTool(project="support-bot", agent_id="claude-app", url=rest, secret=SECRET)
    client = Anthropic(base_url=api, api_key="stand-in-key", max_retries=0)
    runner = client.beta.messages.tool_runner(
        model="claude-stand-in",
        max_tokens=1024,
        tools=[tool],
        messages=[{"role": "user", "content": "Keep notes of my preferences."}],
    )
    final = runner.until_done()
    assert final.stop_reason == "end_turn"


async def test_the_sdk_tool_runner_keeps_memory_files_in_agentmemory(
    rest: httpx.AsyncClient, messages_api: tuple[str, StandIn]
) -> None:
    api, stand_in = messages_api
    await asyncio.to_thread(run_conversation, api, str(rest.base_url))
    assert stand_in.requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = {r["tool_use_id"]: r for r in stand_in.results}
    assert len(results) == len(PLAN)

    def said(step: int) -> str:
        content = results[f"toolu_{step:03d}"]["content"]
        return content if isinstance(content, str) else json.dumps(content)

    def failed(step: int) -> bool:
        return bool(results[f"toolu_{step:03d}"].get("is_error"))

    assert not failed(0) and "/memories" in said(0)
    assert said(1) == "File created successfully at: /memories/notes.md"
    assert "has been edited" in said(3) and "spaces" in said(3)
    view = said(5)
    assert view.startswith("Here's the content of /memories/notes.md with line numbers:")
    assert "     2\t## Preferences" in view and "user prefers spaces" in view
    assert SECRET_KEY not in view and "[REDACTED:" in view  # scrubbed before it was stored
    assert failed(6) and "escape" in said(6)  # ../ out of /memories
    assert failed(7) and "escape" in said(7)
    assert "archive/notes.md" in said(9) and not failed(10)

    # the files are memories of the store, current versions with their history
    listed = (await rest.get("/agentmemory/memories",
                             params={"project": "support-bot", "type": "memory_file"})).json()  # fmt: skip
    by_title = {m["title"]: m for m in listed["memories"]}
    assert set(by_title) == {"/memories/archive/notes.md"}  # prefs.md deleted
    note = by_title["/memories/archive/notes.md"]
    assert note["agentId"] == "claude-app" and note["version"] == 4  # create, edit, insert, rename
    assert SECRET_KEY not in note["content"] and "## Preferences" in note["content"]
    chain = (await rest.get(f"/agentmemory/memories/{note['id']}")).json()["versions"]
    assert [v["title"] for v in chain] == ["/memories/notes.md"] * 3
    assert all(SECRET_KEY not in v["content"] for v in chain)
    audit = (await rest.get("/agentmemory/audit", params={"operation": "forget"})).json()
    assert any("memory tool delete" in e["reason"] for e in audit["entries"])
    # nothing escaped /memories: no file was stored for the refused paths
    every = (await rest.get("/agentmemory/memories", params={"latest": "false",
                                                              "type": "memory_file"})).json()  # fmt: skip
    assert all(m["title"].startswith("/memories/") for m in every["memories"])
