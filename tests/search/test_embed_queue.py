"""Embeddings through the queue trigger, from an OpenAI-compatible provider.

The provider is a small local HTTP server speaking the `/embeddings` wire format (the one
stand-in the house rules allow: a paid remote API). Its vectors put synonyms on one axis,
so a query that shares no word with a record can still find it through the vector stream.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from engine import Client, FunctionError
from functions.search.embed_queue import EMBEDDINGS_BUCKET

DIM = 32
SAME = {"puppy": "dog", "canine": "dog", "hound": "dog", "adopted": "home", "house": "home"}


def _vector(text: str) -> list[float]:
    v = [0.0] * DIM
    for w in text.lower().split():
        w = SAME.get(w.strip(".,"), w.strip(".,"))
        v[int(hashlib.md5(w.encode()).hexdigest(), 16) % DIM] += 1.0
    return v


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"]
        out = {"object": "list", "model": body["model"],
               "data": [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(inputs)]}  # fmt: skip
        raw = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


async def _poll(fn: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            out = await fn()
            if out:
                return out
        except FunctionError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError("condition not met in time")


async def test_embeddings_go_through_the_queue_and_reach_the_vector_stream(
    client: Client, spawn: Any, provider: str
) -> None:
    spawn("workers.trigger_plugins", "queue")
    spawn("workers.memory", env={
        "EMBEDDING_PROVIDER": "openai", "EMBEDDING_BASE_URL": provider, "EMBEDDING_MODEL": "stub",
        "SEARCH_EMBED_QUEUE": "1", "SEARCH_SNAPSHOT_SECONDS": "60",
    })  # fmt: skip
    for sid, text in (
        ("s1", "The puppy was adopted by a family"),
        ("s2", "Quarterly revenue grew"),
    ):
        await client.call("mem::observe", {
            "hookType": "prompt_submit", "sessionId": sid, "project": "v",
            "timestamp": "2026-02-03T10:00:00Z", "data": {"prompt": text},
        })  # fmt: skip

    async def embedded() -> bool:
        st = await client.call("mem::search-status", {})
        return bool(st["vectors"] >= 2 and st["pendingEmbeddings"] == 0)

    await _poll(embedded)
    keys = await (await client.bucket(EMBEDDINGS_BUCKET)).keys()
    assert len(keys) == 2  # computed once, stored for every replica

    out = await client.call("mem::smart-search", {"query": "dog found a home", "project": "v"})
    assert out["results"] and "puppy" in out["results"][0]["title"].lower()
