"""The hook scripts never block the agent, keep what the server could not take, and
store every event exactly once however often it is delivered."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agent.cli_stack import CliStack, run_hook, session_payloads
from tests.fixtures import free_port_block, wait_until
from workers.hooks import SCRIPTS, _delivery
from workers.hooks._hookcore import Settings, truncate
from workers.hooks._scrub import scrub_text

SESSION = "9f1c2e7a-4b3d-4e5f-8a9b-0c1d2e3f4a5b"
HOOK = f"{os.path.realpath(sys.executable)} -S {SCRIPTS['claude-code']}"


def _post_tool(i: int, session: str = "spool-session") -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": "/tmp/spool-project",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"make step-{i}"},
        "tool_response": {
            "stdout": f"step {i} done, api_key=sk-live-{i:04d}abcdefghijklmnopqrstuv"
        },
        "tool_use_id": f"toolu_spool_{i}",
    }


def _spooled(st: CliStack) -> list[dict[str, Any]]:
    return _delivery.read(Settings(st.hook_env()))


@pytest.mark.unit
def test_hook_with_server_down_exits_zero_fast_and_spools_the_event(stack: CliStack) -> None:
    env = stack.hook_env()  # nothing listens on this port yet
    times = []
    for i in range(3):
        code, seconds = run_hook(HOOK, _post_tool(i), env)
        assert code == 0
        times.append(seconds)
    assert statistics.median(times) < 0.3, times
    spooled = _spooled(stack)
    assert [e["body"]["eventId"] for e in spooled] == [
        "toolu_spool_0",
        "toolu_spool_1",
        "toolu_spool_2",
    ]
    spool_file = stack.home / "spool" / "hooks.jsonl"
    assert os.stat(spool_file).st_mode & 0o777 == 0o600
    assert "sk-live-" not in spool_file.read_text() and "[REDACTED]" in spool_file.read_text()


def test_spool_drains_when_server_is_back_and_nothing_is_stored_twice(stack: CliStack) -> None:
    env = stack.hook_env()
    for i in range(3):
        assert run_hook(HOOK, _post_tool(i), env)[0] == 0
    assert len(_spooled(stack)) == 3
    stack.start()
    # `start` and the next hook both drain the spool in the background; either may win.
    assert run_hook(HOOK, _post_tool(3), env)[0] == 0
    wait_until(lambda: not _spooled(stack), timeout=15, what="spool drained")
    obs = wait_until(
        lambda: (
            len(stack.observations("spool-session")) >= 4 and stack.observations("spool-session")
        )
    )
    assert len(obs) == 4
    # Replaying the same events (a second drain, a retried hook) stores nothing new.
    for i in range(4):
        _delivery.append(Settings(env), "POST", "/agentmemory/observe", _observe_body(i))
    drained = _delivery.drain(Settings(env))
    assert drained == (4, 0)
    assert run_hook(HOOK, _post_tool(2), env)[0] == 0
    assert len(stack.observations("spool-session")) == 4


def _observe_body(i: int) -> dict[str, Any]:
    return {
        "sessionId": "spool-session",
        "project": "spool-project",
        "cwd": "/tmp/spool-project",
        "hookType": "post_tool_use",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": f"make step-{i}"},
            "tool_output": "done",
        },
        "eventId": f"toolu_spool_{i}",
    }


def test_replayed_tool_use_id_is_stored_once(stack: CliStack) -> None:
    stack.start()
    payload = next(
        p for p in session_payloads(stack.project_dir) if p["hook_event_name"] == "PostToolUse"
    )
    for _ in range(3):
        assert run_hook(HOOK, payload, stack.hook_env())[0] == 0
    obs = wait_until(lambda: stack.observations(SESSION))
    assert len(obs) == 1


def test_session_start_prints_context_only_when_enabled(stack: CliStack) -> None:
    stack.start()
    payloads = session_payloads(stack.project_dir)
    for p in payloads:
        run_hook(HOOK, p, stack.hook_env())
    start = payloads[0] | {"session_id": "next-session"}

    def run(env: dict[str, str]) -> str:
        res = subprocess.run(
            HOOK, shell=True, input=json.dumps(start), env=env, capture_output=True, text=True
        )
        assert res.returncode == 0
        return res.stdout

    assert run(stack.hook_env()) == ""
    out = run(
        {
            **stack.hook_env(),
            "AGENTMEMORY_INJECT_CONTEXT": "true",
            "AGENTMEMORY_CONTEXT_MAX_CHARS": "50000",
        }
    )
    assert 0 < len(out) <= 9000 and "stripe" in out.lower(), out


@pytest.mark.unit
def test_spool_is_bounded_in_bytes_and_age(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "AGENTMEMORY_SPOOL_DIR": str(tmp_path / "spool"),
        "AGENTMEMORY_SPOOL_MAX_BYTES": "4000",
    }
    settings = Settings(env)
    old = time.time() - 8 * 24 * 3600
    _delivery.append(
        settings, "POST", "/agentmemory/observe", {"eventId": "expired", "pad": "x" * 100}, at=old
    )
    for i in range(40):
        _delivery.append(
            settings, "POST", "/agentmemory/observe", {"eventId": f"e{i}", "pad": "x" * 100}
        )
    kept = _delivery.read(settings)
    assert os.path.getsize(tmp_path / "spool" / "hooks.jsonl") <= 4000
    ids = [e["body"]["eventId"] for e in kept]
    assert "expired" not in ids and ids[-1] == "e39" and "e0" not in ids


@pytest.mark.unit
def test_capture_rules_and_output_truncation(tmp_path: Path) -> None:
    port = free_port_block()
    env = {
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", ""),
        "AGENTMEMORY_URL": f"http://127.0.0.1:{port}",
        "AGENTMEMORY_SPOOL_DIR": str(tmp_path / "spool"),
        "AGENTMEMORY_CAPTURE_DENY": "*.env,Glob",
        "AGENTMEMORY_CAPTURE_OUTPUT_MAX": "100",
    }
    read_env = _post_tool(1) | {
        "tool_name": "Read",
        "tool_input": {"file_path": "/app/.env"},
        "tool_use_id": "t-env",
    }
    glob = _post_tool(2) | {"tool_name": "Glob", "tool_use_id": "t-glob"}
    big = _post_tool(3) | {"tool_response": "y" * 5000, "tool_use_id": "t-big"}
    write = _post_tool(4) | {
        "tool_name": "Write",
        "tool_input": {"file_path": "/app/big.sql", "content": "z" * 300_000},
        "tool_use_id": "t-write",
    }
    for payload in (read_env, glob, big, write):
        assert run_hook(HOOK, payload, env)[0] == 0
    spooled = _delivery.read(Settings(env))
    assert [e["body"]["eventId"] for e in spooled] == ["t-big", "t-write"]
    assert len(spooled[0]["body"]["data"]["tool_output"]) < 150
    written = spooled[1]["body"]["data"]["tool_input"]
    assert written["file_path"] == "/app/big.sql" and len(written["content"]) < 150
    assert (
        truncate("z" * 10, 5).startswith("zzzzz")
        and scrub_text("password=hunter22") == "password=[REDACTED]"
    )


def test_codex_post_tool_use_is_stored_with_its_tool_use_id(stack: CliStack) -> None:
    stack.start()
    codex = f"{os.path.realpath(sys.executable)} -S {SCRIPTS['codex']}"
    payload = {
        "session_id": "codex-session-1",
        "turn_id": "turn-3",
        "transcript_path": None,
        "cwd": str(stack.project_dir),
        "hook_event_name": "PostToolUse",
        "model": "gpt-5-codex",
        "permission_mode": "on-request",
        "tool_name": "shell",
        "tool_input": {"command": ["cargo", "test", "--package", "ledger"]},
        "tool_response": "test result: ok. 42 passed; 0 failed",
        "tool_use_id": "call_codex_42",
    }
    for _ in range(2):
        assert run_hook(codex, payload, stack.hook_env())[0] == 0
    (obs,) = stack.observations("codex-session-1")
    assert obs["project"] == "payments-svc"
    assert "42 passed" in json.dumps(obs)
    # Claude-only events are ignored by the Codex script.
    subagent = payload | {"hook_event_name": "SubagentStart", "agent_id": "a"}
    assert run_hook(codex, subagent, stack.hook_env())[0] == 0
    assert len(stack.observations("codex-session-1")) == 1


@pytest.mark.unit
def test_drain_with_the_server_still_down_keeps_every_event(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "AGENTMEMORY_URL": f"http://127.0.0.1:{free_port_block()}",
        "AGENTMEMORY_SPOOL_DIR": str(tmp_path / "spool"),
    }
    settings = Settings(env)
    for i in range(3):
        _delivery.append(settings, "POST", "/agentmemory/observe", {"eventId": f"live-{i}"})
    # What a drain that died half-way leaves behind is picked up too.
    leftover = tmp_path / "spool" / "hooks.jsonl.draining"
    leftover.write_text(
        json.dumps({"at": time.time(), "method": "POST", "path": "/x", "body": {"eventId": "old"}})
        + "\n"
    )
    assert _delivery.drain(settings) == (0, 1)
    ids = sorted(e["body"]["eventId"] for e in _delivery.read(settings))
    assert ids == ["live-0", "live-1", "live-2", "old"]
    assert not leftover.exists()


PLANTED = [
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-1234567890-abcdefghij",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
]


@pytest.mark.unit
def test_spool_scrubs_every_kind_of_planted_secret(tmp_path: Path) -> None:
    settings = Settings({"HOME": str(tmp_path), "AGENTMEMORY_SPOOL_DIR": str(tmp_path / "s")})
    for i, secret in enumerate(PLANTED):
        body = {"eventId": f"p{i}", "data": {"tool_output": f"found {secret} in config", "n": i}}
        _delivery.append(settings, "POST", "/agentmemory/observe", body)
    _delivery.append(
        settings,
        "POST",
        "/x",
        {"data": {"cmd": "curl -H 'Authorization: Bearer abcdef0123456789xyz'"}},
    )
    _delivery.append(settings, "POST", "/x", {"data": {"env": "DB_PASSWORD=hunter2hunter2"}})
    text = (tmp_path / "s" / "hooks.jsonl").read_text()
    for secret in [*PLANTED, "abcdef0123456789xyz", "hunter2hunter2"]:
        assert secret.splitlines()[-1] not in text, secret
    assert text.count("[REDACTED]") == len(PLANTED) + 2
    assert '"n": 7' in text  # the rest of the body is intact


@pytest.mark.unit
def test_hook_gives_up_on_a_server_that_never_answers_and_spools(tmp_path: Path) -> None:
    import socket

    with socket.socket() as hole:  # accepts connections (backlog) and never replies
        hole.bind(("127.0.0.1", 0))
        hole.listen(8)
        env = {
            "HOME": str(tmp_path),
            "PATH": os.environ.get("PATH", ""),
            "AGENTMEMORY_URL": f"http://127.0.0.1:{hole.getsockname()[1]}",
            "AGENTMEMORY_SPOOL_DIR": str(tmp_path / "spool"),
            "AGENTMEMORY_HOOK_TIMEOUT_MS": "200",
        }
        code, seconds = run_hook(HOOK, _post_tool(7), env)
    assert code == 0 and seconds < 2.0
    assert [e["body"]["eventId"] for e in _delivery.read(Settings(env))] == ["toolu_spool_7"]


def test_event_sent_before_the_routes_exist_is_spooled_then_stored_once(
    spawn: Any, tmp_path: Path
) -> None:
    import httpx

    port, secret = free_port_block(), "route-race-secret"
    common = {"HOME": str(tmp_path), "AGENTMEMORY_SECRET": secret}
    spawn("workers.trigger_plugins", "http", env={**common, "AGENTMEMORY_REST_PORT": str(port)})
    env = {
        **common,
        "PATH": os.environ.get("PATH", ""),
        "AGENTMEMORY_URL": f"http://127.0.0.1:{port}",
        "AGENTMEMORY_SPOOL_DIR": str(tmp_path / "spool"),
    }
    headers = {"Authorization": f"Bearer {secret}"}
    wait_until(lambda: _answers(port), what="http trigger listening")
    assert run_hook(HOOK, _post_tool(1), env)[0] == 0  # 404: no memory worker yet
    assert [e["body"]["eventId"] for e in _delivery.read(Settings(env))] == ["toolu_spool_1"]

    spawn("workers.memory", env={**common, "AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox")})
    url = f"http://127.0.0.1:{port}/agentmemory/observations"
    query = {"sessionId": "spool-session"}
    wait_until(lambda: httpx.get(url, params=query, headers=headers).status_code == 200)
    assert _delivery.drain(Settings(env)) == (1, 0)
    assert run_hook(HOOK, _post_tool(1), env)[0] == 0  # the same tool_use_id again
    stored = httpx.get(url, params=query, headers=headers).json()["observations"]
    assert [o["eventId"] for o in stored] == ["toolu_spool_1"]


def _answers(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
