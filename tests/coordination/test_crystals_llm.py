"""Crystals written by an LLM (`AGENTMEMORY_CRYSTALS_LLM=true` and a provider), against a
local HTTP server speaking the OpenAI chat-completions wire format: the digest is the
model's, scrubbed; a failing model leaves the synthetic digest."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.coordination.test_actions import make
from tests.fixtures import rest_client

A = "/agentmemory/"
LEAK = "sk-ant-" + "Z9y8X7w6V5u4T3s2R1q0P"


class FakeModel:
    def __init__(self) -> None:
        self.fail = False
        self.prompts: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.prompts.append(body["messages"][1]["content"])
                if owner.fail:
                    self.send_response(500)
                    self.end_headers()
                    return
                digest = {
                    "narrative": f"Sped up the importer by batching inserts (key {LEAK}).",
                    "keyOutcomes": ["import 4x faster"],
                    "filesAffected": ["src/db/bulk.py"],
                    "lessons": ["profile first"],
                }
                text = "Here it is:\n" + json.dumps(digest)
                data = json.dumps({"choices": [{"message": {"content": text}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def model() -> Iterator[FakeModel]:
    m = FakeModel()
    yield m
    m.server.shutdown()


async def test_an_llm_writes_the_crystal_and_a_failing_one_falls_back(
    memory_worker: Any, http_trigger: Any, model: FakeModel
) -> None:
    memory_worker(
        AGENTMEMORY_CRYSTALS_LLM="true",
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=model.url,
        OPENAI_MODEL="fake",
    )
    rest = await rest_client(http_trigger())
    try:
        a = await make(rest, "batch the inserts")
        await rest.post(A + "actions/update", json={"actionId": a["id"], "status": "done"})
        r = await rest.post(A + "crystals/create", json={"actionIds": a["id"]})
        assert r.status_code == 201, r.text
        crystal = r.json()["crystal"]
        assert crystal["method"] == "llm"
        assert crystal["keyOutcomes"] == ["import 4x faster"]
        assert crystal["narrative"].startswith("Sped up the importer")
        assert LEAK not in json.dumps(crystal)  # the model's text is scrubbed too
        assert "batch the inserts" in model.prompts[0]

        model.fail = True
        b = await make(rest, "write the docs")
        await rest.post(A + "actions/update", json={"actionId": b["id"], "status": "done"})
        r = await rest.post(A + "crystals/create", json={"actionIds": b["id"]})
        assert r.status_code == 201
        assert r.json()["crystal"]["method"] == "synthetic"
        assert "write the docs" in r.json()["crystal"]["narrative"]
    finally:
        await rest.aclose()
