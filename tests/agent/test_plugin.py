"""The plugin bundle (workers/hooks is its root): the documented format, skills whose tool
calls exist, Claude Code's own validation, and an install through a marketplace that wires
the same hooks `connect claude-code --with-hooks` does."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.agent import agent_clis
from tests.agent.cli_stack import CliStack
from tests.fixtures import wait_until
from workers.cli.agents import CLAUDE_EVENTS, CODEX_EVENTS, TOOL_EVENTS
from workers.mcp.gateway import RestGateway

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "workers" / "hooks"
# A tool call as the skills write them: in a ```json block, or inline in backticks.
CALL = re.compile(r"```json\n\s*(memory_[a-z_]+) (\{.*?\})\n|`(memory_[a-z_]+) (\{[^`]*\})`", re.S)


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _skills() -> dict[str, tuple[dict[str, Any], str]]:
    out = {}
    for path in sorted((PLUGIN / "skills").glob("*/SKILL.md")):
        _, front, body = path.read_text().split("---\n", 2)
        out[path.parent.name] = (yaml.safe_load(front), body)
    return out


@pytest.mark.unit
def test_manifests_hooks_and_skills_follow_the_documented_format() -> None:
    claude = _json(PLUGIN / ".claude-plugin" / "plugin.json")
    codex = _json(PLUGIN / ".codex-plugin" / "plugin.json")
    for m in (claude, codex):
        assert m["name"] == "agentmemory" and re.fullmatch(r"\d+\.\d+\.\d+", m["version"])
        assert m["description"] and m["author"]["name"]
    for key in ("skills", "mcpServers", "hooks"):
        assert codex[key].startswith("./") and (PLUGIN / codex[key]).exists()
    mcp = _json(PLUGIN / ".mcp.json")["mcpServers"]["agentmemory"]
    assert mcp == {"command": "agentmemory", "args": ["mcp"]}
    for manifest, events, script in (
        ("hooks.json", CLAUDE_EVENTS, "claude_code.py"),
        ("hooks.codex.json", CODEX_EVENTS, "codex.py"),
    ):
        hooks = _json(PLUGIN / "hooks" / manifest)["hooks"]
        assert tuple(hooks) == events  # the same events `connect` installs
        for event, groups in hooks.items():
            assert len(groups) == 1 and (groups[0].get("matcher") == "*") == (event in TOOL_EVENTS)
            (handler,) = groups[0]["hooks"]
            assert handler["type"] == "command"
            assert handler["command"] == f'python3 -S "${{CLAUDE_PLUGIN_ROOT}}/{script}"'
            assert (PLUGIN / script).exists()
    for mk in (
        ROOT / ".claude-plugin" / "marketplace.json",
        PLUGIN / ".claude-plugin" / "marketplace.json",
    ):
        (entry,) = _json(mk)["plugins"]
        source = (mk.parent.parent / entry["source"]).resolve()
        assert entry["name"] == "agentmemory" and source == PLUGIN.resolve()
    skills = _skills()
    assert len(skills) == 17 and (PLUGIN / "skills" / "_shared" / "TROUBLESHOOTING.md").exists()
    for folder, (front, body) in skills.items():
        assert front["name"] == folder and "Use when" in front["description"]
        assert isinstance(front["user-invocable"], bool)
        assert ("argument-hint" in front) <= front["user-invocable"]
        if "argument-hint" in front:
            assert "$ARGUMENTS" in body
    invocable = {f for f, (front, _) in skills.items() if front["user-invocable"]}
    assert {"recall", "remember", "handoff", "recap", "forget", "lesson"} <= invocable


async def test_every_tool_call_in_the_skills_exists_with_those_arguments(
    running_stack: CliStack,
) -> None:
    gateway = RestGateway(running_stack.url, running_stack.secret())
    try:
        schemas = {t["name"]: t["inputSchema"] for t in await gateway.tools()}
    finally:
        await gateway.close()
    calls = [
        (folder, m[0] or m[2], m[1] or m[3])
        for folder, (_, body) in _skills().items()
        for m in CALL.findall(body)
    ]
    assert len(calls) > 20
    wrong = []
    for folder, tool, raw in calls:
        if tool not in schemas:
            wrong.append(f"{folder}: no tool {tool}")
            continue
        args = json.loads(raw.replace("$ARGUMENTS", "x"))
        unknown = set(args) - set(schemas[tool].get("properties", {}))
        if unknown:
            wrong.append(f"{folder}: {tool} has no argument {sorted(unknown)}")
    assert wrong == []


@pytest.mark.unit
def test_claude_code_validates_the_bundle_and_both_marketplaces(tmp_path: Path) -> None:
    for path in (
        PLUGIN / ".claude-plugin" / "plugin.json",
        PLUGIN / ".claude-plugin" / "marketplace.json",
        ROOT / ".claude-plugin" / "marketplace.json",
    ):
        res = agent_clis.run("claude", "plugin", "validate", "--strict", str(path), home=tmp_path)
        assert res.returncode == 0 and "Validation passed" in res.stdout, res.stdout + res.stderr


def test_installed_plugin_wires_the_hooks_connect_does_and_they_record(
    running_stack: CliStack,
) -> None:
    home = running_stack.home  # the stack's secret is there for the hook and the MCP server
    add = agent_clis.run("claude", "plugin", "marketplace", "add", str(ROOT), home=home)
    assert add.returncode == 0, add.stdout + add.stderr
    res = agent_clis.run("claude", "plugin", "install", "agentmemory@agentmemory", home=home)
    assert res.returncode == 0, res.stdout + res.stderr
    installed = _json(home / ".claude" / "plugins" / "installed_plugins.json")["plugins"]
    (copy,) = installed["agentmemory@agentmemory"]
    root = Path(copy["installPath"])
    hooks = _json(root / "hooks" / "hooks.json")["hooks"]
    assert tuple(hooks) == CLAUDE_EVENTS

    # A session as Claude Code runs the installed hook commands (through a shell, with
    # CLAUDE_PLUGIN_ROOT set to the plugin's copy).
    env = {**running_stack.hook_env(), "CLAUDE_PLUGIN_ROOT": str(root)}
    session = "plugin-session-1"
    for event, extra in (
        ("SessionStart", {"source": "startup"}),
        (
            "PostToolUse",
            {
                "tool_name": "Bash",
                "tool_input": {"command": "make zebra-stripes"},
                "tool_response": "zebra stripes painted",
                "tool_use_id": "toolu_plugin_1",
            },
        ),
        ("TaskCompleted", {"task_id": "t1", "task_subject": "paint the zebra"}),
    ):
        payload = {
            "session_id": session,
            "cwd": str(running_stack.project_dir),
            "hook_event_name": event,
            **extra,
        }
        command = hooks[event][0]["hooks"][0]["command"]
        done = subprocess.run(
            command,
            shell=True,
            input=json.dumps(payload),
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0
    seen = wait_until(lambda: running_stack.observations(session), timeout=30, what="observations")
    kinds = {o.get("hookType") or o.get("type") for o in seen}
    assert len(seen) >= 2 and any("zebra" in json.dumps(o) for o in seen), kinds

    listed = agent_clis.run(
        "claude", "mcp", "list", home=home, env={"AGENTMEMORY_URL": running_stack.url}
    )
    line = next((ln for ln in listed.stdout.splitlines() if "agentmemory" in ln), listed.stdout)
    assert "Connected" in line and "✘" not in line, listed.stdout + listed.stderr


@pytest.mark.unit
def test_codex_installs_the_plugin_and_sees_its_server(tmp_path: Path) -> None:
    added = agent_clis.run("codex", "plugin", "marketplace", "add", str(ROOT), home=tmp_path)
    assert added.returncode == 0, added.stdout + added.stderr
    res = agent_clis.run("codex", "plugin", "add", "agentmemory@agentmemory", home=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    servers = {
        s["name"]: s
        for s in json.loads(agent_clis.run("codex", "mcp", "list", "--json", home=tmp_path).stdout)
    }
    assert servers["agentmemory"]["transport"]["command"] == "agentmemory"


@pytest.mark.parametrize("skill", ["recall", "remember"])
def test_a_skill_reads_as_a_slash_command(skill: str) -> None:
    front, body = _skills()[skill]
    assert front["user-invocable"] is True and body.count("$ARGUMENTS") >= 1
