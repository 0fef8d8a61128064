"""The console on a bare bus (no supervisor, no trace stream): discovery alone, and no
trace link for a call whose trace is not sampled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from tests.fixtures import free_port_block

SECRET = "bare-bus-secret"


def test_console_without_supervisor_lists_workers_found_on_the_bus(
    spawn: Callable[..., Any],
) -> None:
    port = free_port_block(1)
    env = {
        "AGENTMEMORY_CONSOLE_PORT": str(port),
        "AGENTMEMORY_SECRET": SECRET,
        "ENGINE_TRACE_SAMPLING": "0",
    }
    spawn("workers.example", env=env)
    spawn("workers.console", env=env)
    with httpx.Client(
        base_url=f"http://127.0.0.1:{port}",
        headers={"authorization": f"Bearer {SECRET}"},
        timeout=20,
    ) as c:
        workers = {w["name"]: w for w in c.get("/api/workers").json()["workers"]}
        assert workers["example"]["supervised"] is False
        assert workers["example"]["instances"] == 1
        assert "example::echo" in workers["example"]["functions"]
        out = c.post(
            "/api/invoke", json={"function_id": "example::echo", "payload": {"text": "s"}}
        ).json()
        assert out["ok"] and out["result"] == {"text": "s"}
        assert out["trace_id"] == ""  # sampled out: nothing to link to
        missing = c.post("/api/invoke", json={"function_id": "nobody::home"}).json()
        assert missing["ok"] is False and missing["error"]["code"] == "UNAVAILABLE"
