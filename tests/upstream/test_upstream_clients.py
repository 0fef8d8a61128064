"""The unmodified upstream clients (npm @agentmemory/agentmemory 0.9.29 hook scripts and
@agentmemory/mcp 0.9.29 MCP shim) against our server: see shared UPSTREAM-API.md."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.fixtures import eventually

HERE = Path(__file__).resolve().parent
PKG = HERE / "node_modules" / "@agentmemory"
SCRIPTS = PKG / "agentmemory" / "plugin" / "scripts"
SECRET = "upstream-test-secret"

CONFIG = f"""
env:
  AGENTMEMORY_SECRET: {SECRET}
workers:
  - name: triggers
    command: ["{{python}}", "-m", "workers.trigger_plugins", "http"]
    env:
      HTTP_OPENAPI_PATHS: /agentmemory/openapi.json
  - name: memory
    module: workers.memory
    depends_on: [triggers]
    ready_timeout: 120
  - name: mcp-rest
    module: workers.mcp.rest
    depends_on: [memory]
"""

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")


def ensure_packages() -> None:
    if (SCRIPTS / "post-tool-use.mjs").exists() and (PKG / "mcp" / "bin.mjs").exists():
        return
    subprocess.run(["bash", str(HERE / "install.sh")], check=True, timeout=300)


async def ready_service(engine_factory):  # type: ignore[no-untyped-def]
    ensure_packages()
    eng = engine_factory(CONFIG).start()
    url = f"http://127.0.0.1:{eng.anchor}"
    async with httpx.AsyncClient() as http:

        async def routes_live() -> bool:
            r = await http.get(
                f"{url}/agentmemory/sessions", headers={"authorization": f"Bearer {SECRET}"}
            )
            return r.status_code == 200

        await eventually(routes_live, timeout=20, what="memory routes")
    return eng, url


def run_hook(script: str, payload: dict[str, object], url: str, cwd: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "AGENTMEMORY_URL": url,
        "AGENTMEMORY_SECRET": SECRET,
        "AGENTMEMORY_PROJECT_NAME": "upstream-demo",
        "HOME": str(cwd),
    }
    out = subprocess.run(
        ["node", str(SCRIPTS / script)],
        input=json.dumps(payload).encode(),
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode()


async def test_upstream_hook_scripts_store_a_session(engine_factory, tmp_path: Path) -> None:
    _eng, url = await ready_service(engine_factory)
    sid = "upstream-session-1"
    base = {
        "session_id": sid,
        "cwd": str(tmp_path),
        "transcript_path": "",
        "permission_mode": "default",
    }
    run_hook(
        "session-start.mjs",
        {**base, "hook_event_name": "SessionStart", "source": "startup"},
        url,
        tmp_path,
    )
    run_hook(
        "prompt-submit.mjs",
        {
            **base,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "fix the flaky retry in the payment webhook",
        },
        url,
        tmp_path,
    )
    run_hook(
        "post-tool-use.mjs",
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest tests/test_webhook.py -k retry"},
            "tool_response": {
                "stdout": "FAILED test_webhook_retry - TimeoutError: backoff exhausted",
                "stderr": "",
                "interrupted": False,
            },
            "tool_use_id": "toolu_upstream_1",
        },
        url,
        tmp_path,
    )
    run_hook(
        "post-tool-failure.mjs",
        {
            **base,
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Edit",
            "tool_input": {"file_path": "src/webhook.py"},
            "error": "old_string not found",
            "tool_use_id": "toolu_upstream_2",
        },
        url,
        tmp_path,
    )
    run_hook(
        "stop.mjs", {**base, "hook_event_name": "Stop", "stop_hook_active": False}, url, tmp_path
    )
    headers = {"authorization": f"Bearer {SECRET}"}
    async with httpx.AsyncClient() as http:

        async def stored() -> list[dict[str, object]]:
            r = await http.get(
                f"{url}/agentmemory/observations", params={"sessionId": sid}, headers=headers
            )
            items = r.json().get("observations", [])
            return items if len(items) >= 3 else []

        obs = await eventually(stored, timeout=15, what="observations of the upstream hooks")
        hooks = {o.get("hookType") for o in obs}
        assert {"prompt_submit", "post_tool_use", "post_tool_failure"} <= hooks
        r = await http.post(
            f"{url}/agentmemory/smart-search",
            headers=headers,
            json={"query": "webhook retry backoff", "limit": 5},
        )
        assert r.status_code == 200
        assert any(h["sessionId"] == sid for h in r.json()["results"])


async def test_upstream_mcp_shim_proxies_our_tools(engine_factory, tmp_path: Path) -> None:
    _eng, url = await ready_service(engine_factory)
    params = StdioServerParameters(
        command="node",
        args=[str(PKG / "mcp" / "bin.mjs")],
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "AGENTMEMORY_URL": url,
            "AGENTMEMORY_SECRET": SECRET,
        },
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        names = {t.name for t in (await s.list_tools()).tools}
        # more than the shim's 7 local fallbacks: it proxies our registry
        assert {"memory_save", "memory_smart_search", "memory_sessions", "memory_audit"} <= names
        saved = await s.call_tool(
            "memory_save",
            {
                "content": "Payment webhooks retry with exponential backoff capped at 5 attempts",
                "type": "decision",
                "concepts": ["webhook", "retry"],
            },
        )
        assert not saved.is_error, saved.content
        found = await s.call_tool("memory_smart_search", {"query": "webhook backoff attempts"})
        assert not found.is_error
        text = json.dumps([c.model_dump() for c in found.content])
        assert "backoff" in text
    assert sys.executable  # the Python side only drove the protocol
