"""The agents' own CLIs (tests/agents_cli) run the hooks `connect --with-hooks` wrote: each
starts a real session in a folder of the repository with a prompt, against a model provider
on this machine that refuses every request (so the run ends at once, offline, with no
account), and what the CLI's hooks sent is stored: the session, its prompt under the
repository's project, its end. Gemini CLI and Copilot CLI run our hook script; OpenCode
loads our plugin."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.agent import agent_clis
from tests.agent.cli_stack import CliStack, new_stack, teardown
from tests.fixtures import wait_until

IDLE_MS = 2000


class _Refuse(BaseHTTPRequestHandler):
    """A model provider that refuses every request, in the shape the SDKs read as final."""

    def log_message(self, *args: Any) -> None:
        pass

    def _refuse(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps(
            {
                "error": {
                    "code": 400,
                    "message": "refused by the test's provider",
                    "status": "INVALID_ARGUMENT",
                    "type": "invalid_request_error",
                }
            }
        ).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _refuse


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def hooked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliStack]:
    st = new_stack(tmp_path_factory.mktemp("clis"))
    st.env["AGENTMEMORY_FINALIZE_IDLE_MS"] = str(IDLE_MS)
    st.start()
    yield st
    teardown(st)


def _work(st: CliStack) -> Path:
    sub = st.project_dir / "services" / "billing"
    sub.mkdir(parents=True, exist_ok=True)
    return sub


def _session_of(st: CliStack, agent: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        with st.rest() as c:
            sessions = c.get("/agentmemory/sessions", params={"limit": 500}).json()["sessions"]
        return next((s for s in sessions if s.get("agentId") == agent), None)

    s: dict[str, Any] = wait_until(found, timeout=30, what=f"a session of {agent}")
    return s


def _captured(st: CliStack, agent: str, prompt: str) -> dict[str, Any]:
    """The agent's session, once its prompt is stored and it has ended."""
    sid = _session_of(st, agent)["id"]
    obs = wait_until(
        lambda: [o for o in st.observations(sid) if o["type"] == "prompt"],
        timeout=30,
        what=f"{agent}'s prompt",
    )
    assert prompt in obs[0]["title"] and obs[0]["project"] == "payments-svc", obs
    ended: dict[str, Any] = wait_until(
        lambda: (s := _session_of(st, agent))["status"] == "ended" and s,
        timeout=IDLE_MS / 1000 + 30,
        what=f"{agent}'s session ended",
    )
    assert ended["project"] == "payments-svc"
    return ended


def test_gemini_cli_runs_the_hooks_connect_wrote(hooked: CliStack, provider: str) -> None:
    agent_clis.binary("gemini")
    gemini = hooked.home / ".gemini"
    gemini.mkdir(exist_ok=True)
    # the user's own settings: an API key login (the key is the provider's business)
    (gemini / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    work = _work(hooked)
    (gemini / "trustedFolders.json").write_text(json.dumps({str(work): "TRUST_FOLDER"}))
    hooked.cli("connect", "gemini-cli", "--with-hooks")
    settings = json.loads((gemini / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"  # kept
    agent_clis.run(
        "gemini",
        "-p",
        "why is the invoice total off by a cent",
        home=hooked.home,
        cwd=work,
        env={"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": provider},
        timeout=180,
    )
    _captured(hooked, "gemini-cli", "why is the invoice total off by a cent")


def test_copilot_cli_runs_the_hooks_connect_wrote(hooked: CliStack, provider: str) -> None:
    agent_clis.binary("copilot")
    hooked.cli("connect", "copilot-cli", "--with-hooks")
    work = _work(hooked)
    agent_clis.run(
        "copilot",
        "-p",
        "round invoice totals half to even",
        "--allow-all-tools",
        home=hooked.home,
        cwd=work,
        env={"COPILOT_PROVIDER_BASE_URL": f"{provider}/v1", "COPILOT_MODEL": "gpt-4o"},
        timeout=180,
    )
    _captured(hooked, "copilot-cli", "round invoice totals half to even")


def test_opencode_loads_the_plugin_connect_wrote(hooked: CliStack, provider: str) -> None:
    agent_clis.binary("opencode")
    hooked.cli("connect", "opencode", "--with-hooks")
    config = hooked.home / ".config" / "opencode" / "opencode.json"
    doc = json.loads(config.read_text())
    doc["provider"] = {"openai": {"options": {"baseURL": f"{provider}/v1", "apiKey": "test"}}}
    config.write_text(json.dumps(doc))
    work = _work(hooked)
    res = agent_clis.run("opencode", "debug", "config", home=hooked.home, cwd=work)
    plugins = json.loads(res.stdout)["plugin"]
    assert any(p.endswith("/plugins/agentmemory.js") for p in plugins), res.stdout
    agent_clis.run(
        "opencode",
        "run",
        "-m",
        "openai/gpt-4o",
        "list the webhook retries",
        home=hooked.home,
        cwd=work,
        timeout=180,
    )
    # session.idle ends the turn; the session ends after the idle period
    _captured(hooked, "opencode", "list the webhook retries")
