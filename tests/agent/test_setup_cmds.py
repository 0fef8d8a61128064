"""`agentmemory init`, `upgrade` and `remove` as a user runs them."""

from __future__ import annotations

import json

from tests.agent.cli_stack import CliStack
from workers.cli import datadir
from workers.cli.agents import BY_NAME


def test_init_writes_settings_once_and_the_secret(stack: CliStack) -> None:
    first = stack.cli("init", "--data-dir", str(stack.data_dir))
    env = stack.home / ".agentmemory" / ".env"
    assert "wrote" in first.stdout and "# AGENTMEMORY_URL=" in env.read_text()
    assert (stack.home / ".agentmemory" / "secret").stat().st_size > 20
    env.write_text("AGENTMEMORY_TOOLS=core\n")
    second = stack.cli("init", "--data-dir", str(stack.data_dir))
    assert "kept" in second.stdout and env.read_text() == "AGENTMEMORY_TOOLS=core\n"
    assert datadir.read_format(stack.data_dir) == datadir.FORMAT


def test_upgrade_points_stale_agent_configs_at_this_install_and_stamps_the_data(
    stack: CliStack,
) -> None:
    stack.cli("connect", "claude-code", "--with-hooks")
    stack.cli("connect", "cursor")
    stack.cli("connect", "gemini-cli", "--transport", "http")
    gemini = BY_NAME["gemini-cli"].file(stack.home)
    gemini.write_text(gemini.read_text().replace(stack.secret(), "a-rotated-away-secret"))
    settings = stack.home / ".claude" / "settings.json"
    stale = settings.read_text().replace(".venv/bin/python", "old-venv/bin/python")
    stale = stale.replace("/workers/hooks/claude_code.py", "/old/workers/hooks/claude_code.py")
    settings.write_text(stale)
    cursor = BY_NAME["cursor"].file(stack.home)
    doc = json.loads(cursor.read_text())
    doc["mcpServers"]["agentmemory"]["command"] = "/gone/bin/agentmemory"
    cursor.write_text(json.dumps(doc))
    stack.data_dir.mkdir(parents=True)  # a data dir from before the format stamp
    res = stack.cli("upgrade", "--data-dir", str(stack.data_dir), "--port", str(stack.port))
    assert "migrated through 1" in res.stdout and "refreshed" in res.stdout
    assert "/old/" not in settings.read_text()
    entry = json.loads(cursor.read_text())["mcpServers"]["agentmemory"]
    assert entry["command"] != "/gone/bin/agentmemory" and entry["args"] == ["mcp"]
    by_url = json.loads(gemini.read_text())["mcpServers"]["agentmemory"]  # stays by URL
    assert by_url["httpUrl"] == f"{stack.url}/agentmemory/mcp"
    assert by_url["headers"]["Authorization"] == f"Bearer {stack.secret()}"
    again = stack.cli("upgrade", "--data-dir", str(stack.data_dir), "--port", str(stack.port))
    assert "current" in again.stdout and "agent configs current" in again.stdout


def test_a_data_dir_of_a_newer_format_is_refused_at_start(stack: CliStack) -> None:
    stack.data_dir.mkdir(parents=True)
    (stack.data_dir / datadir.STAMP).write_text(json.dumps({"format": datadir.FORMAT + 1}))
    res = stack.cli("start", "--detach", check=False)
    assert res.returncode == 1 and "newer than this agentmemory reads" in res.stderr
    assert not (stack.data_dir / "engine.pid").exists()


def test_remove_unwires_every_agent_and_keeps_the_data_unless_purged(stack: CliStack) -> None:
    stack.start()
    for agent in ("claude-code", "codex", "gemini-cli"):
        stack.cli("connect", agent, "--with-hooks")
    claude = BY_NAME["claude-code"].file(stack.home)
    doc = json.loads(claude.read_text())
    doc["mcpServers"]["github"] = {"command": "gh-mcp"}
    claude.write_text(json.dumps(doc))
    res = stack.cli("remove", "--data-dir", str(stack.data_dir), "--port", str(stack.port))
    assert "unwired Claude Code" in res.stdout and "kept the data" in res.stdout
    assert json.loads(claude.read_text())["mcpServers"] == {"github": {"command": "gh-mcp"}}
    hooks = json.loads((stack.home / ".claude" / "settings.json").read_text()).get("hooks", {})
    assert hooks == {}
    assert "agentmemory" not in (stack.home / ".codex" / "config.toml").read_text()
    assert "agentmemory:start" not in (stack.home / ".gemini" / "GEMINI.md").read_text()
    assert not (stack.data_dir / "engine.pid").exists() and stack.data_dir.exists()
    purge = stack.cli(
        "remove", "--purge", "--yes", "--data-dir", str(stack.data_dir), "--port", str(stack.port)
    )
    assert "deleted" in purge.stdout
    assert not stack.data_dir.exists() and not (stack.home / ".agentmemory").exists()
