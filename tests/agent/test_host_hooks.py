"""Capture from every agent with hooks: `agentmemory connect <agent> --with-hooks` installs
the agent's hooks, and the commands it installed, fed the payloads the agent's docs describe
(a prompt, tool calls, the end), store observations of the right types under the agent's
session, the repository's project and the agent's id, against the real service. Our own
MCP tools are never recorded. OpenCode's plugin is run by Node, as OpenCode runs it.

Payload sources: Cursor's hooks docs (and upstream's cursor delegate), Gemini CLI's
docs/hooks/reference.md, GitHub's hooks-configuration reference (and what Copilot CLI 1.0
sends, seen in tests/agent/test_host_clis.py), Antigravity's hooks docs (upstream's
antigravity bridge), OpenCode's packages/plugin/src/index.ts."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.cli_stack import CliStack, new_stack, run_hook, teardown
from tests.fixtures import wait_until
from workers.cli.agents import BY_NAME
from workers.cli.formats import our_commands

IDLE_MS = 2000
"""The stack's idle period: a session whose turn ended (Stop) ends this long after."""


@pytest.fixture(scope="module")
def hooked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliStack]:
    st = new_stack(tmp_path_factory.mktemp("hooked"))
    st.env["AGENTMEMORY_FINALIZE_IDLE_MS"] = str(IDLE_MS)
    st.start()
    yield st
    teardown(st)


def _work_dir(st: CliStack) -> Path:
    """A subfolder of the repository: its events belong to the repository's project."""
    sub = st.project_dir / "src" / "api"
    sub.mkdir(parents=True, exist_ok=True)
    return sub


def _installed(st: CliStack, agent: str) -> dict[str, str]:
    """Event → the command `connect --with-hooks` installed for it."""
    st.cli("connect", agent, "--with-hooks")
    h = BY_NAME[agent].hooks
    assert h is not None
    doc = json.loads(h.file(st.home).read_text())
    return {
        event: our_commands({event: entries}, h.script)[0] for event, entries in doc[h.key].items()
    }


def _feed(st: CliStack, commands: dict[str, str], *events: tuple[str, dict[str, Any]]) -> list[str]:
    """Run each event's installed command with its payload; returns what each printed."""
    printed = []
    for event, payload in events:
        res = subprocess.run(
            commands[event],
            shell=True,
            input=json.dumps(payload),
            env=st.hook_env(),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert res.returncode == 0, res.stderr
        printed.append(res.stdout)
    return printed


def _session(st: CliStack, sid: str) -> dict[str, Any] | None:
    with st.rest() as c:
        sessions = c.get("/agentmemory/sessions", params={"limit": 500}).json()["sessions"]
    return next((s for s in sessions if s["id"] == sid), None)


def _stored(st: CliStack, sid: str, n: int) -> list[dict[str, Any]]:
    return wait_until(
        lambda: (obs := st.observations(sid)) and len(obs) >= n and obs,
        timeout=20,
        what=f"{n} observations of {sid}",
    )


def _check(st: CliStack, sid: str, agent: str, types: list[str]) -> list[dict[str, Any]]:
    obs = _stored(st, sid, len(types))
    assert sorted(o["type"] for o in obs) == sorted(types), [(o["type"], o["title"]) for o in obs]
    assert {o["project"] for o in obs} == {"payments-svc"}
    assert {o["agentId"] for o in obs} == {agent}
    assert not any("memory_save" in json.dumps(o) for o in obs)  # our own tool: skipped
    return obs


def _ended(st: CliStack, sid: str, timeout: float = 20) -> dict[str, Any]:
    s: dict[str, Any] = wait_until(
        lambda: (found := _session(st, sid)) and found["status"] == "ended" and found,
        timeout=timeout,
        what=f"session {sid} ended",
    )
    return s


def test_cursor(hooked: CliStack) -> None:
    cmds = _installed(hooked, "cursor")
    assert set(cmds) == {
        "sessionStart", "beforeSubmitPrompt", "postToolUse", "postToolUseFailure",
        "preCompact", "stop", "sessionEnd",
    }  # fmt: skip
    work, sid = str(_work_dir(hooked)), "cursor-conv-7f3a"
    common = {"conversation_id": sid, "generation_id": "gen-1", "workspace_roots": [work]}
    out = _feed(
        hooked,
        cmds,
        ("sessionStart", {**common, "hook_event_name": "sessionStart"}),
        ("beforeSubmitPrompt", {
            **common, "hook_event_name": "beforeSubmitPrompt", "attachments": [],
            "prompt": "Add retries with exponential backoff to the Stripe client",
        }),
        ("postToolUse", {
            # Cursor may name its own folder as cwd: the workspace root wins
            **common, "hook_event_name": "postToolUse", "cwd": "/opt/cursor/.cursor",
            "tool_name": "Shell", "tool_input": {"command": "pytest -q tests/test_stripe.py"},
            "tool_output": "4 passed in 0.31s", "tool_use_id": "tool-1", "duration": 812,
        }),
        ("postToolUse", {
            **common, "hook_event_name": "postToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": f"{work}/stripe_client.py", "old_string": "a", "new_string": "b"},
            "tool_output": "ok", "tool_use_id": "tool-2",
        }),
        ("postToolUse", {
            **common, "hook_event_name": "postToolUse", "tool_name": "MCP:memory_save",
            "tool_input": json.dumps({"content": "use backoff"}), "tool_output": "{}",
        }),
        ("stop", {**common, "hook_event_name": "stop", "status": "completed", "loop_count": 0}),
        ("sessionEnd", {**common, "hook_event_name": "sessionEnd", "reason": "user_close"}),
    )  # fmt: skip
    assert all(json.loads(o) is not None for o in out)  # Cursor reads every stdout as JSON
    assert json.loads(out[1]) == {"continue": True}
    _check(hooked, sid, "cursor", ["prompt", "command", "file_edit"])
    assert _ended(hooked, sid)["status"] == "ended"


def test_gemini_cli(hooked: CliStack) -> None:
    cmds = _installed(hooked, "gemini-cli")
    assert set(cmds) == {
        "SessionStart",
        "BeforeAgent",
        "AfterTool",
        "PreCompress",
        "AfterAgent",
        "SessionEnd",
    }
    settings = json.loads((hooked.home / ".gemini" / "settings.json").read_text())
    assert settings["hooks"]["AfterTool"][0]["matcher"] == "*"
    work, sid = str(_work_dir(hooked)), "gemini-7d1e6c2a"
    common = {
        "session_id": sid,
        "transcript_path": "/tmp/t.json",
        "cwd": work,
        "timestamp": "2026-12-06T10:00:00.000Z",
    }
    out = _feed(
        hooked,
        cmds,
        ("SessionStart", {**common, "hook_event_name": "SessionStart", "source": "startup"}),
        ("BeforeAgent", {**common, "hook_event_name": "BeforeAgent", "prompt": "Why does the refund job time out?"}),
        ("AfterTool", {
            **common, "hook_event_name": "AfterTool", "tool_name": "run_shell_command",
            "tool_input": {"command": "npm test -- refunds"},
            "tool_response": {"llmContent": "Tests: 12 passed, 12 total", "returnDisplay": "12 passed"},
        }),
        ("AfterTool", {
            **common, "hook_event_name": "AfterTool", "tool_name": "read_file",
            "tool_input": {"absolute_path": f"{work}/refunds.ts"},
            "tool_response": {"llmContent": "", "returnDisplay": "", "error": {"message": "ENOENT: no such file"}},
        }),
        ("AfterTool", {
            **common, "hook_event_name": "AfterTool", "tool_name": "mcp__agentmemory__memory_save",
            "tool_input": {"content": "refund job"}, "tool_response": {"llmContent": "saved"},
        }),
        ("AfterAgent", {
            **common, "hook_event_name": "AfterAgent", "prompt": "Why does the refund job time out?",
            "prompt_response": "The job holds a row lock while calling Stripe.", "stop_hook_active": False,
        }),
        ("SessionEnd", {**common, "hook_event_name": "SessionEnd", "reason": "exit"}),
    )  # fmt: skip
    assert all(json.loads(o) == {} for o in out)  # JSON only on stdout
    _check(hooked, sid, "gemini-cli", ["prompt", "command", "error", "response"])
    _ended(hooked, sid)


def test_copilot(hooked: CliStack) -> None:
    cmds = _installed(hooked, "copilot-cli")
    hooks_file = json.loads((hooked.home / ".copilot" / "hooks" / "agentmemory.json").read_text())
    assert hooks_file["version"] == 1
    work, sid = str(_work_dir(hooked)), "0b8e2c4f-5a6d-4e1f-9c3b-7d2a1e0f6b5c"
    # The PascalCase events we install: Copilot CLI sends VS-Code-compatible snake_case.
    snake = {"session_id": sid, "timestamp": "2026-12-06T13:37:49.098Z", "cwd": work}
    _feed(
        hooked,
        cmds,
        ("SessionStart", {**snake, "hook_event_name": "SessionStart", "source": "new", "initial_prompt": "fix the build"}),
        ("UserPromptSubmit", {**snake, "hook_event_name": "UserPromptSubmit", "prompt": "fix the build"}),
        ("PostToolUse", {
            **snake, "hook_event_name": "PostToolUse", "tool_name": "bash",
            "tool_input": {"command": "go test ./...", "description": "Run tests"},
            "tool_result": {"result_type": "success", "text_result_for_llm": "ok  payments  0.81s"},
        }),
        ("PostToolUse", {
            # the camelCase form (a `postToolUse` entry): toolArgs is JSON text
            "sessionId": sid, "timestamp": 1796564270000, "cwd": work, "toolName": "edit",
            "toolArgs": json.dumps({"path": f"{work}/ledger.go", "old_str": "a", "new_str": "b"}),
            "toolResult": {"resultType": "success", "textResultForLlm": "File edited"},
        }),
        ("PostToolUse", {
            **snake, "hook_event_name": "PostToolUse", "tool_name": "agentmemory-memory_save",
            "tool_input": {"content": "x"}, "tool_result": {"result_type": "success", "text_result_for_llm": "ok"},
        }),
        ("Stop", {**snake, "hook_event_name": "Stop", "stop_hook_active": False}),
        ("SessionEnd", {**snake, "hook_event_name": "SessionEnd", "reason": "complete"}),
    )  # fmt: skip
    _check(hooked, sid, "copilot-cli", ["prompt", "command", "file_edit"])
    _ended(hooked, sid)


def test_antigravity_cli(hooked: CliStack) -> None:
    cmds = _installed(hooked, "antigravity-cli")
    assert set(cmds) == {"PreInvocation", "PostToolUse", "Stop"}
    doc = json.loads((hooked.home / ".gemini" / "config" / "hooks.json").read_text())
    assert doc["hooks"]["PostToolUse"][0]["matcher"] == ""  # agy's catch-all (a regex)
    work, sid = str(_work_dir(hooked)), "agy-conv-2c9b"
    common = {"conversationId": sid, "workspacePaths": [work], "transcriptPath": "/tmp/agy.jsonl"}
    out = _feed(
        hooked,
        cmds,
        ("PreInvocation", {**common, "invocationNum": 0}),
        ("PostToolUse", {
            **common, "stepIdx": 3,
            "toolCall": {"name": "run_command", "args": {"CommandLine": "cargo test -p ledger", "Cwd": work}},
            "toolResult": "test result: ok. 9 passed",
        }),
        ("PostToolUse", {
            **common, "stepIdx": 4,
            "toolCall": {"name": "replace_file_content", "args": {"TargetFile": f"{work}/ledger.rs"}},
            "result": "edited",
        }),
        ("PostToolUse", {**common, "stepIdx": 5, "toolCall": {"name": "memory_save", "args": {}}, "result": "ok"}),
        ("PreInvocation", {**common, "invocationNum": 1}),  # a later model call: nothing
        ("Stop", {**common, "fullyIdle": True}),
    )  # fmt: skip
    assert all(json.loads(o) == {} for o in out)  # a JSON object, always
    # agy's payloads carry no prompt text: tool calls and the session's end only
    _check(hooked, sid, "antigravity-cli", ["command", "file_edit"])
    # Stop ends a run, not the session: it ends after the idle period
    now = _session(hooked, sid)
    assert now is not None and now["status"] == "active"
    _ended(hooked, sid, timeout=IDLE_MS / 1000 + 30)


def test_opencode_plugin(hooked: CliStack, tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    hooked.cli("connect", "opencode", "--with-hooks")
    h = BY_NAME["opencode"].hooks
    assert h is not None
    plugin = h.file(hooked.home)
    work, sid = str(_work_dir(hooked)), "ses_2f0c1d9e8a7bWq"
    script = tmp_path / "drive.mjs"
    script.write_text(
        f"""
const {{ AgentMemory }} = await import({json.dumps(plugin.as_uri())});
const hooks = await AgentMemory({{ directory: {json.dumps(work)}, worktree: "/" }});
const sid = {json.dumps(sid)};
await hooks.event({{ event: {{ type: "session.created", properties: {{ sessionID: sid,
  info: {{ id: sid, directory: {json.dumps(work)}, title: "New session" }} }} }} }});
await hooks["chat.message"]({{ sessionID: sid, agent: "build", messageID: "msg_1" }},
  {{ message: {{}}, parts: [{{ type: "text", text: "Make the webhook handler idempotent" }}] }});
await hooks["tool.execute.before"]({{ tool: "bash", sessionID: sid, callID: "call_1" }},
  {{ args: {{ command: "bun test webhooks" }} }});
await hooks["tool.execute.after"]({{ tool: "bash", sessionID: sid, callID: "call_1" }},
  {{ title: "bun test webhooks", output: "7 pass, 0 fail", metadata: {{}} }});
await hooks["tool.execute.before"]({{ tool: "agentmemory_memory_save", sessionID: sid, callID: "call_2" }},
  {{ args: {{ content: "x" }} }});
await hooks["tool.execute.after"]({{ tool: "agentmemory_memory_save", sessionID: sid, callID: "call_2" }},
  {{ title: "", output: "saved", metadata: {{}} }});
await hooks.event({{ event: {{ type: "message.part.updated", properties: {{ part: {{ type: "tool",
  tool: "read", callID: "call_3", sessionID: sid,
  state: {{ status: "error", input: {{ filePath: "{work}/missing.ts" }}, error: "File not found" }} }} }} }} }});
await hooks.event({{ event: {{ type: "session.idle", properties: {{ sessionID: sid }} }} }});
"""
    )
    env = {**hooked.hook_env()}
    env.pop("AGENTMEMORY_URL")  # the plugin carries the URL `connect` gave it
    res = subprocess.run(
        [node, "--experimental-detect-module", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    _check(hooked, sid, "opencode", ["prompt", "command", "error"])
    _ended(hooked, sid, timeout=IDLE_MS / 1000 + 30)  # session.idle: a turn, then silence


def test_remove_takes_only_ours_out(hooked: CliStack) -> None:
    home = hooked.home
    cursor = home / ".cursor" / "hooks.json"
    doc = json.loads(cursor.read_text())
    doc["hooks"]["stop"].append({"command": "say done"})
    cursor.write_text(json.dumps(doc))
    for agent in ("cursor", "gemini-cli", "copilot-cli", "antigravity-cli", "opencode"):
        hooked.cli("connect", agent, "--with-hooks")  # connected (again): nothing doubles
        hooked.cli("connect", agent, "--remove")
    assert json.loads(cursor.read_text())["hooks"] == {"stop": [{"command": "say done"}]}
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    assert gemini.get("hooks") == {} and "agentmemory" not in gemini.get("mcpServers", {})
    assert not (home / ".copilot" / "hooks" / "agentmemory.json").exists()
    assert json.loads((home / ".gemini" / "config" / "hooks.json").read_text())["hooks"] == {}
    assert not (home / ".config" / "opencode" / "plugins" / "agentmemory.js").exists()


def test_a_host_payload_that_is_not_json_still_exits_zero_with_json(hooked: CliStack) -> None:
    for agent, event in (
        ("cursor", "postToolUse"),
        ("gemini-cli", "AfterTool"),
        ("antigravity-cli", "PostToolUse"),
    ):
        commands = _installed(hooked, agent)
        code, _ = run_hook(commands[event], {"not": "a payload of this host"}, hooked.hook_env())
        assert code == 0
        res = subprocess.run(
            commands[event], shell=True, input="{oops", env=hooked.hook_env(),
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert res.returncode == 0 and json.loads(res.stdout) == {}, (agent, res.stdout)


def test_vscode_reads_the_copilot_hooks_and_records_as_itself(hooked: CliStack) -> None:
    copilot = _installed(hooked, "copilot-cli")
    first = (hooked.home / ".copilot" / "hooks" / "agentmemory.json").read_text()
    vscode = _installed(hooked, "vscode")  # one file for both: the same entries
    assert (hooked.home / ".copilot" / "hooks" / "agentmemory.json").read_text() == first
    assert vscode == copilot
    work, sid = str(_work_dir(hooked)), "vscode-chat-5e1f"
    # VS Code's agent hooks (its docs): camelCase common keys, Claude Code's tool keys
    common = {"sessionId": sid, "cwd": work, "timestamp": "2026-12-06T10:00:00.000Z"}
    printed = _feed(
        hooked,
        vscode,
        ("SessionStart", {**common, "hookEventName": "SessionStart", "source": "new"}),
        ("UserPromptSubmit", {**common, "hookEventName": "UserPromptSubmit", "prompt": "rename the ledger type"}),
        ("PostToolUse", {
            **common, "hookEventName": "PostToolUse", "tool_name": "runInTerminal",
            "tool_input": {"command": "npm run typecheck"}, "tool_response": "0 errors",
            "tool_use_id": "vs-1",
        }),
        ("PostToolUse", {
            **common, "hookEventName": "PostToolUse", "tool_name": "replace_string_in_file",
            "tool_input": {"filePath": f"{work}/ledger.ts", "oldString": "Ledger", "newString": "Book"},
            "tool_response": "edited", "tool_use_id": "vs-2",
        }),
        ("Stop", {**common, "hookEventName": "Stop", "stop_hook_active": False}),
    )  # fmt: skip
    obs = _check(hooked, sid, "vscode", ["prompt", "command", "file_edit"])
    assert any(f.endswith("ledger.ts") for o in obs for f in o["files"]), obs
    if printed[0].strip():  # context for the agent, in the shape VS Code reads
        said = json.loads(printed[0])["hookSpecificOutput"]
        assert said["hookEventName"] == "SessionStart" and said["additionalContext"]
    # VS Code sends no SessionEnd: Stop ends the turn, the idle finaliser the session
    ended = _ended(hooked, sid, timeout=IDLE_MS / 1000 + 30)
    assert ended["agentId"] == "vscode"
