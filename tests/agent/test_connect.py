"""`agentmemory connect`: merges, never clobbers; idempotent; `--dry-run` writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomlkit

from tests.agent.cli_stack import CliStack
from workers.cli.agents import CLAUDE_EVENTS
from workers.cli.connect import plan


@pytest.mark.unit
def test_codex_connect_keeps_other_servers_and_settings(tmp_path: Path) -> None:
    codex = tmp_path / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(
        '# my settings\nmodel = "gpt-5-codex"\n\n[mcp_servers.github]\ncommand = "gh-mcp"\n'
    )
    (codex / "hooks.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}})
    )
    for _ in range(2):  # a second connect changes nothing
        for change in plan("codex", tmp_path, with_hooks=True):
            change.write()
    text = (codex / "config.toml").read_text()
    doc = tomlkit.parse(text)
    assert text.startswith("# my settings") and doc["model"] == "gpt-5-codex"
    assert doc["mcp_servers"]["github"]["command"] == "gh-mcp"  # type: ignore[index]
    assert doc["mcp_servers"]["agentmemory"]["args"] == ["mcp"]  # type: ignore[index]
    assert doc["features"]["codex_hooks"] is True  # type: ignore[index]
    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]
    stop_commands = [h["command"] for g in hooks["Stop"] for h in g["hooks"]]
    assert stop_commands[0] == "say done" and len(stop_commands) == 2
    assert all(
        sum("codex.py" in h["command"] for g in hooks[e] for h in g["hooks"]) == 1
        for e in hooks
        if e != "Stop"
    )
    assert set(hooks) == {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PreCompact",
        "Stop",
    }


def test_dry_run_prints_the_change_and_writes_nothing(stack: CliStack) -> None:
    settings = stack.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus"}')
    out = stack.cli("connect", "claude-code", "--with-hooks", "--dry-run").stdout
    assert "+++" in out and "claude_code.py" in out and "agentmemory" in out
    assert settings.read_text() == '{"model": "opus"}'
    assert not (stack.home / ".claude.json").exists()


def test_every_agent_gets_an_mcp_entry_and_unknown_agents_are_refused(stack: CliStack) -> None:
    stack.cli("connect", "cursor")
    for agent in ("gemini-cli", "opencode"):
        for change in plan(agent, stack.home, with_hooks=False):
            change.write()
    assert (
        "agentmemory" in json.loads((stack.home / ".cursor" / "mcp.json").read_text())["mcpServers"]
    )
    assert (
        "agentmemory"
        in json.loads((stack.home / ".gemini" / "settings.json").read_text())["mcpServers"]
    )
    opencode = json.loads((stack.home / ".config" / "opencode" / "opencode.json").read_text())
    assert opencode["mcp"]["agentmemory"]["command"][-1] == "mcp"
    assert "mcpServers" in stack.cli("connect", "mcp").stdout
    bad = stack.cli("connect", "vim", check=False)
    assert bad.returncode == 2 and "claude-code" in bad.stderr


def test_doctor_names_each_problem_with_its_fix(stack: CliStack) -> None:
    res = stack.cli("doctor", check=False)
    assert res.returncode == 1
    assert "agentmemory start --detach" in res.stdout
    assert "agentmemory connect claude-code --with-hooks" in res.stdout


def test_dry_run_diff_keeps_long_lines_whole_when_piped(stack: CliStack) -> None:
    settings = stack.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "opus"}')  # no final newline
    out = stack.cli("connect", "claude-code", "--with-hooks", "--dry-run").stdout
    lines = out.splitlines()
    commands = [ln for ln in lines if '"command": "AGENTMEMORY_URL=' in ln]
    assert len(commands) == len(CLAUDE_EVENTS) == 12 and all(
        ln.endswith('claude_code.py",') for ln in commands
    )
    assert max(map(len, commands)) > 80
    assert '-{"model": "opus"}' in lines and "\\ No newline at end of file" in lines
