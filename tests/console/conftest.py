"""One real engine for the console tests: the example worker, the http/cron/queue trigger
plug-ins, the memory worker (write path and search, for the traces of observe and search
and the memory buckets of the KV browser) and the console worker, with a known secret."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.fixtures import EngineProcess

SECRET = "console-test-" + secrets.token_hex(8)

CONFIG = f"""
env:
  AGENTMEMORY_SECRET: {SECRET}
workers:
  - name: example
    module: workers.example
  - name: triggers
    command: ["{{python}}", "-m", "workers.trigger_plugins", "http", "cron", "queue"]
    depends_on: [example]
  - name: memory
    module: workers.memory
    depends_on: [triggers]
  - name: console
    module: workers.console
    depends_on: [triggers]
triggers:
  - kind: cron
    function_id: example::count
    id: yearly-count
    config: {{schedule: "0 0 1 1 *", payload: {{key: cron-hits}}}}
  - kind: queue
    function_id: example::fail
    id: failing-queue
    config: {{queue: failing, max_attempts: 1, backoff: 0.1}}
  - kind: http
    function_id: example::echo
    id: echo-documented
    config:
      method: POST
      path: /example/echo-documented
      mode: body
      summary: Echo, with its schemas in the declaration
      body_schema: {{type: object, properties: {{text: {{type: string}}}}, required: [text]}}
      response_schema: {{type: object, properties: {{text: {{type: string}}}}}}
"""


@dataclass
class Console:
    engine: EngineProcess
    url: str
    secret: str

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"authorization": f"Bearer {self.secret}"}, timeout=20
        )


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    engine = EngineProcess(tmp_path_factory.mktemp("console"), CONFIG)
    try:
        engine.start()
        yield Console(engine, f"http://127.0.0.1:{engine.anchor + 3}", SECRET)
    finally:
        engine.stop(30)
        engine.kill_all()
