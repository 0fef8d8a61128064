"""A new user on a clean machine: start, connect Claude Code with hooks, work a session,
find it again, see it counted, stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

from tests.agent.cli_stack import CLI, CliStack, run_hook, session_payloads
from tests.fixtures import wait_until

SESSION = "9f1c2e7a-4b3d-4e5f-8a9b-0c1d2e3f4a5b"


def _preexisting_claude_config(st: CliStack) -> None:
    (st.home / ".claude").mkdir()
    (st.home / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "model": "opus",
                "permissions": {"allow": ["Bash(npm test:*)"]},
                "hooks": {
                    "PostToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}
                    ]
                },
            }
        )
    )
    (st.home / ".claude.json").write_text(
        json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}, "theme": "dark"})
    )


def _installed_hooks(st: CliStack) -> dict[str, str]:
    settings = json.loads((st.home / ".claude" / "settings.json").read_text())
    out = {}
    for event, groups in settings["hooks"].items():
        for group in groups:
            for hook in group["hooks"]:
                if "claude_code.py" in hook["command"]:
                    out[event] = hook["command"]
    return out


def test_new_user_start_connect_work_search_status_stop(stack: CliStack) -> None:
    stack.start()
    assert os.stat(stack.data_dir).st_mode & 0o077 == 0

    _preexisting_claude_config(stack)
    stack.cli("connect", "claude-code", "--with-hooks")
    settings = json.loads((stack.home / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus" and settings["permissions"]["allow"] == ["Bash(npm test:*)"]
    kept = settings["hooks"]["PostToolUse"][0]
    assert kept == {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}
    mcp = json.loads((stack.home / ".claude.json").read_text())
    assert mcp["mcpServers"]["github"] == {"command": "gh-mcp"} and mcp["theme"] == "dark"
    assert mcp["mcpServers"]["agentmemory"]["args"] == ["mcp"]

    server = mcp["mcpServers"]["agentmemory"]
    assert server["env"]["AGENTMEMORY_DATA_DIR"] == str(stack.data_dir)

    # The hooks find this instance's port from their installed command alone.
    hooks = _installed_hooks(stack)
    assert all(f"AGENTMEMORY_URL={stack.url}" in cmd for cmd in hooks.values())
    for payload in session_payloads(stack.project_dir):
        code, _ = run_hook(hooks[payload["hook_event_name"]], payload, stack.env)
        assert code == 0, payload["hook_event_name"]

    # prompt, Read, Edit, failed pytest, subagent start/stop, passing pytest, pre-compact
    obs = wait_until(lambda: len(stack.observations(SESSION)) >= 8 and stack.observations(SESSION))
    assert len(obs) == 8
    assert {o.get("project") for o in obs} == {"payments-svc"}

    status = json.loads(stack.cli("status", "--json").stdout)
    assert status["running"] is True
    assert status["counts"]["observations"] == 8 and status["counts"]["sessions"] >= 1
    assert {w["name"] for w in status["workers"]} >= {"memory"}
    assert all(w["pid"] for w in status["workers"])
    assert status["ports"]["rest"] == stack.port and status["data_dir"] == str(stack.data_dir)

    found = json.loads(stack.cli("search", "stripe webhook idempotent", "--json").stdout)
    text = json.dumps(found)
    assert SESSION in text and "stripe" in text.lower()

    engine_pid = status["engine"]["pid"]
    stack.cli("stop")
    assert not (stack.data_dir / "engine.pid").exists()
    wait_until(lambda: not _alive(engine_pid), timeout=10, what="engine exited")
    assert json.loads(stack.cli("status", "--json", check=False).stdout)["running"] is False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    time.sleep(0)
    return True


def test_foreground_start_shows_the_four_ports_and_stops_on_ctrl_c(stack: CliStack) -> None:
    cmd = [*CLI, "start", "--data-dir", str(stack.data_dir), "--port", str(stack.port)]
    # Started with SIGINT ignored, as a background job of a non-interactive shell is (CI's
    # `make test &`): Ctrl-C must stop it all the same (it timed out here when inherited).
    proc = subprocess.Popen(
        [*cmd, "--config", str(stack.config)],
        env=stack.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert proc.stdout is not None
    panel = ""
    for line in proc.stdout:
        panel += line
        if "next" in line:
            break
    # a terminal keeps reading what it prints while it runs and stops: so does the test (a
    # full pipe would block the foreground process on a write and it could never exit)
    threading.Thread(target=lambda: [None for _ in proc.stdout or []], daemon=True).start()
    for offset, name in ((0, "REST"), (1, "streams"), (2, "viewer"), (3, "console")):
        assert name in panel and str(stack.port + offset) in panel
    wait_until(stack.serving, timeout=30, what="memory routes served")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 0
    assert not (stack.data_dir / "engine.pid").exists()
