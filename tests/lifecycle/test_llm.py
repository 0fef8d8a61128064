"""Optional LLM wording of consolidated memories, against a local HTTP server speaking the
OpenAI chat-completions and Anthropic messages wire formats (the only stand-in allowed):
same ids, idempotent, scrubbed, and the deterministic text on failure or timeout."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from engine import Client
from functions.kernel.models.settings import BreakerSettings, ModelSettings
from functions.kernel.records import Memory
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.settings import LifecycleConfig, LlmConfig
from functions.lifecycle.wire import ConsolidateIn
from tests.fixtures import wire
from tests.lifecycle._data import at
from tests.lifecycle.test_consolidate import seed

LEAK = "sk-ant-" + "A1b2C3d4E5f6G7h8I9j0K"


class FakeLLM:
    """A real HTTP server on loopback; `mode` is ok, error (500) or hang (never answers)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not body["messages"][-1]["content"].startswith("{"):
                    self.send_response(500)  # consolidation's extraction: not this test's
                    self.end_headers()
                    return
                owner.requests.append((self.path, dict(self.headers), body))
                if owner.mode == "hang":
                    owner.release.wait(10)
                    return
                if owner.mode == "error":
                    self.send_response(500)
                    self.end_headers()
                    return
                if self.path.endswith("/chat/completions"):
                    record = json.loads(body["messages"][1]["content"])
                    reply = {"choices": [{"message": {"role": "assistant",
                                                      "content": owner.answer(record)}}]}  # fmt: skip
                elif self.path.endswith("/v1/messages"):
                    record = json.loads(body["messages"][0]["content"])
                    reply = {"content": [{"type": "text", "text": owner.answer(record)}]}
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def answer(record: dict[str, Any]) -> str:
        reply = {
            "title": "Reworded: " + record["title"],
            "content": f"Key {LEAK}. " + record["content"],
        }
        return "Here you go:\n" + json.dumps(reply)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM()
    yield server
    server.close()


def config(llm: FakeLLM, provider: str, timeout: float = 5.0) -> LifecycleConfig:
    base = f"http://127.0.0.1:{llm.port}" + ("/v1" if provider == "openai" else "")
    return LifecycleConfig(
        consolidation_llm=True,
        # no breaker here (tests/models has its own): "the provider is back" means the next run
        llm=LlmConfig(provider=provider, api_key="test-key", base_url=base, model="m1",
                      timeout=timeout, max_calls=100,
                      settings=ModelSettings(breaker=BreakerSettings(failures=10_000))),
    )  # fmt: skip


@pytest.fixture
async def running(client: Client) -> AsyncIterator[list[LifecycleService]]:
    started: list[LifecycleService] = []
    yield started
    for svc in started:
        await svc.stop(client)


async def start(
    client: Client, cfg: LifecycleConfig, running: list[LifecycleService]
) -> LifecycleService:
    svc = LifecycleService(cfg)
    await svc.start(client)
    running.append(svc)
    return wire(svc)  # type: ignore[no-any-return]


async def consolidated(store: MemoryStore) -> dict[str, Memory]:
    return {
        m.id: m
        for m in await store.load_all(store.memories, Memory)
        if m.type in ("semantic", "procedural")
    }


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_llm_rewrites_wording_through_the_same_pipeline_and_stays_idempotent(
    store: MemoryStore, client: Client, llm: FakeLLM, running: list[LifecycleService],
    provider: str,
) -> None:  # fmt: skip
    await seed(store)
    plain = await start(client, LifecycleConfig(), running)
    await plain.consolidate(ConsolidateIn(now=at(days=10).isoformat()))
    deterministic = await consolidated(store)

    svc = await start(client, config(llm, provider), running)
    out = await svc.consolidate(ConsolidateIn(now=at(days=11).isoformat()))
    assert out["llmCalls"] == len(deterministic) and out["llmFailed"] == 0
    assert out["semantic"]["updated"] + out["procedural"]["updated"] == len(deterministic)
    worded = await consolidated(store)
    assert set(worded) == set(deterministic)  # same ids
    for mid, m in worded.items():
        before = deterministic[mid]
        assert m.title == ("Reworded: " + before.title)[:120]
        assert LEAK not in m.content and "[REDACTED" in m.content  # scrubbed
        assert (m.source_ids, m.confidence, m.steps) == (
            before.source_ids, before.confidence, before.steps,
        )  # fmt: skip
    path, headers, body = llm.requests[0]
    if provider == "openai":
        assert path == "/v1/chat/completions"
        assert headers["Authorization"] == "Bearer test-key" and body["model"] == "m1"
    else:
        assert path == "/v1/messages" and headers["x-api-key"] == "test-key"
        assert headers["anthropic-version"] and body["system"]

    calls = len(llm.requests)
    again = await svc.consolidate(ConsolidateIn(now=at(days=12).isoformat()))
    assert again["llmCalls"] == 0 and len(llm.requests) == calls  # cached wording
    assert again["semantic"]["updated"] == again["procedural"]["updated"] == 0
    assert await consolidated(store) == worded


@pytest.mark.parametrize("mode", ["error", "hang"])
async def test_llm_failure_or_timeout_keeps_the_deterministic_text(
    store: MemoryStore, client: Client, llm: FakeLLM, running: list[LifecycleService],
    mode: str,
) -> None:  # fmt: skip
    await seed(store)
    llm.mode = mode
    svc = await start(client, config(llm, "openai", timeout=0.5), running)
    out = await svc.consolidate(ConsolidateIn(now=at(days=10).isoformat()))
    assert out["llmCalls"] > 0 and out["llmFailed"] == out["llmCalls"]
    facts = {m.title for m in (await consolidated(store)).values()}
    assert "src/api.py is a hot spot" in facts
    assert not any(t.startswith("Reworded") for t in facts)
    # the provider is back: the next run words them (nothing was cached on failure)
    llm.mode = "ok"
    later = await svc.consolidate(ConsolidateIn(now=at(days=11).isoformat()))
    assert later["llmCalls"] == out["llmCalls"] and later["llmFailed"] == 0
