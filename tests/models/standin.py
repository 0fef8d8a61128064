"""A small local HTTP server speaking the providers' wire formats (OpenAI chat completions
and Anthropic messages): the only stand-in the project allows for a paid API. It records
every request (path, query, headers, JSON body) and answers by route:

- a path in `routes` answers `(status, body, headers)` from its callable (called with the
  request), so a test says what each provider does: answer, fail (5xx), hang, rate-limit;
- otherwise a path ending `/chat/completions` or `/messages` answers `reply(request)`'s text
  in that format, with usage figures.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from engine import Client
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.settings import LifecycleConfig, LlmConfig


@dataclass
class Seen:
    path: str
    query: str
    headers: dict[str, str]
    body: Any

    @property
    def text(self) -> str:
        """Every prompt the request carries, as one string."""
        return json.dumps(self.body, ensure_ascii=False)


Answer = tuple[int, Any, dict[str, str]]


def openai(text: str) -> dict[str, Any]:
    return {
        "choices": [{"message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5},
    }


def anthropic(text: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 13, "output_tokens": 7},
    }


def user_prompt(seen: Seen) -> str:
    msgs = seen.body.get("messages") or []
    return str(msgs[-1]["content"]) if msgs else ""


@dataclass
class StandIn:
    reply: Callable[[Seen], str] = lambda seen: '{"ok": true}'
    routes: dict[str, Callable[[Seen], Answer]] = field(default_factory=dict)
    requests: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = urlsplit(self.path)
                seen = Seen(
                    path=parts.path,
                    query=parts.query,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(raw or b"null"),
                )
                owner.requests.append(seen)
                route = owner.routes.get(parts.path)
                if route is not None:
                    status, body, headers = route(seen)
                elif parts.path.endswith("/chat/completions"):
                    status, body, headers = 200, openai(owner.reply(seen)), {}
                elif parts.path.endswith("/messages"):
                    status, body, headers = 200, anthropic(owner.reply(seen)), {}
                else:
                    status, body, headers = 404, {"error": "no such route"}, {}
                if status == 0:  # hang: never answer (until the test ends)
                    owner.release.wait(30)
                    return
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def on(self, path: str) -> list[Seen]:
        return [r for r in self.requests if r.path == path]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def hang(_: Seen) -> Answer:
    return 0, None, {}


def fail(status: int) -> Callable[[Seen], Answer]:
    return lambda _: (status, {"error": {"message": "boom"}}, {})


def answer(fmt: Callable[[str], Any], text: str) -> Callable[[Seen], Answer]:
    return lambda _: (200, fmt(text), {})


def wait_for(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


@contextlib.asynccontextmanager
async def lifecycle_at(client: Client, url: str) -> AsyncIterator[LifecycleService]:
    """The lifecycle service in-process, its model an OpenAI-compatible provider at `url`."""
    cfg = LifecycleConfig(
        llm=LlmConfig(provider="openai", api_key="k", base_url=url, model="m", timeout=5)
    )
    svc = LifecycleService(cfg)
    await svc.start(client)
    try:
        yield svc
    finally:
        await svc.stop(client)
