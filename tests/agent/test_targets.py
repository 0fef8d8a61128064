"""Every `connect` target writes the file its agent reads, in the agent's own schema; merges
with what is there, changes nothing the second time, and `--remove` takes only ours out.
Where the agent's CLI is installed (tests/agents_cli), its own reader checks the result."""

from __future__ import annotations

import io
import json
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.agent import agent_clis
from tests.agent.cli_stack import CLI, CliStack
from workers.cli import connect
from workers.cli.agents import AGENTS, BY_NAME, CLAUDE_EVENTS, CODEX_EVENTS
from workers.hooks import SCRIPTS

ENV = {"AGENTMEMORY_INSTANCE": "3"}
MCP = connect.formats.mcp_command()


def _yaml(text: str) -> Any:
    return YAML(typ="safe").load(io.StringIO(text))


def _seed(home: Path, name: str) -> None:
    """Another server and a setting of the user's, in the agent's format."""
    a = BY_NAME[name]
    path = a.file(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    if a.format == "toml":
        path.write_text('# mine\nmodel = "o3"\n\n[mcp_servers.other]\ncommand = "other-mcp"\n')
    elif a.shape == "continue":
        path.write_text(
            "# my assistant\nname: mine\nversion: 1.0.0\nschema: v1\n"
            "mcpServers:\n  - name: other\n    command: other-mcp\n"
        )
    elif a.shape == "dsh":
        path.write_text("# my patch\n- insert:\n    - id: other\n      name: other-plugin\n")
    elif a.format == "yaml":
        path.write_text(f"# mine\nmodel: big\n{a.key}:\n  other:\n    command: other-mcp\n")
    elif a.format == "json":
        other = (
            {"type": "local", "command": ["other-mcp"], "enabled": True}
            if a.shape == "opencode"
            else {"command": "other-mcp"}
        )
        path.write_text(json.dumps({"theme": "dark", a.key: {"other": other}}))


def _ours(home: Path, name: str) -> Any:
    """Our entry as the agent's format parses it, and whether the user's items survived."""
    a = BY_NAME[name]
    text = a.file(home).read_text()
    if a.format == "toml":
        doc = tomllib.loads(text)
        assert doc["model"] == "o3" and doc["mcp_servers"]["other"]["command"] == "other-mcp"
        assert text.startswith("# mine")
        return doc["mcp_servers"].get("agentmemory")
    if a.shape == "continue":
        doc = _yaml(text)
        assert text.startswith("# my assistant") and doc["name"] == "mine"
        assert doc["mcpServers"][0]["name"] == "other"
        return next((s for s in doc["mcpServers"] if s["name"] == "agentmemory"), None)
    if a.shape == "dsh":
        rows = _yaml(text)
        assert text.startswith("# my patch") and rows[0]["insert"][0]["id"] == "other"
        items = [i for r in rows for i in r["insert"]]
        return next((i for i in items if i["id"] == "agentmemory"), None)
    doc = _yaml(text) if a.format == "yaml" else json.loads(text)
    assert doc[a.key]["other"]["command"] in ("other-mcp", ["other-mcp"])
    assert doc.get("theme", "dark") == "dark" and doc.get("model", "big") == "big"
    return doc[a.key].get("agentmemory")


def _expected(name: str) -> dict[str, Any]:
    """Our entry in each agent's documented schema: the keys it has, nothing more."""
    shape = BY_NAME[name].shape
    plain = {"command": MCP[0], "args": MCP[1:], "env": ENV}
    if shape == "stdio":
        return {"type": "stdio", **plain}
    if shape == "copilot":
        return {"type": "local", **plain, "tools": ["*"]}
    if shape == "opencode":
        return {"type": "local", "command": MCP, "enabled": True, "environment": ENV}
    if shape == "continue":
        return {"name": "agentmemory", **plain}
    if shape == "dsh":
        config = {"transport": "stdio", "serverName": "agentmemory", **plain}
        return {"id": "agentmemory", "name": "@deepseek-ai/dsh-mcp-client", "config": config}
    return plain


CONFIG_AGENTS = [a.name for a in AGENTS if a.format not in ("none", "extension")]


@pytest.mark.unit
@pytest.mark.parametrize("name", CONFIG_AGENTS)
def test_each_target_writes_the_agents_own_schema_merges_and_removes(
    name: str, tmp_path: Path
) -> None:
    _seed(tmp_path, name)
    first = connect.wire(name, tmp_path, False, "", ENV)
    for change in first.changes:
        change.write()
    assert _ours(tmp_path, name) == _expected(name)
    again = connect.wire(name, tmp_path, False, "", ENV)
    assert not any(c.changed for c in again.changes), "a second connect changed something"
    backup = BY_NAME[name].file(tmp_path)
    assert backup.with_name(backup.name + ".agentmemory.bak").exists()
    for change in connect.unplan(name, tmp_path).changes:
        change.write()
    assert _ours(tmp_path, name) is None


@pytest.mark.unit
@pytest.mark.parametrize(
    "name", [a.name for a in AGENTS if a.hooks is None and a.format != "extension"]
)
def test_with_hooks_on_an_agent_without_hooks_says_so_and_writes_none(
    name: str, tmp_path: Path
) -> None:
    result = connect.wire(name, tmp_path, True, "http://127.0.0.1:9", {})
    assert not result.hooks
    if BY_NAME[name].format == "none":
        assert result.changes == [] and "REST" in " ".join(result.notes)
        return
    assert any("MCP only" in n for n in result.notes)
    # no hooks key (a bare "hook" would match a checkout path such as .../doors-hooks/...)
    assert not any('"hooks"' in c.after for c in result.changes if c.path.suffix == ".json")


@pytest.mark.unit
def test_hook_agents_get_claude_shaped_hooks_that_name_themselves(tmp_path: Path) -> None:
    for name, script in (
        ("claude-code", "claude_code.py"),
        ("codex", "codex.py"),
        ("droid", "claude_code.py"),
        ("devin", "claude_code.py"),
    ):
        for change in connect.wire(name, tmp_path, True, "", {}).changes:
            change.write()
        h = BY_NAME[name].hooks
        assert h is not None
        hooks = json.loads(h.file(tmp_path).read_text())["hooks"]
        assert tuple(hooks) == h.events
        if name == "claude-code":
            assert h.events == CLAUDE_EVENTS and {"Notification", "TaskCompleted"} <= set(hooks)
        commands = [x["command"] for groups in hooks.values() for g in groups for x in g["hooks"]]
        assert all(script in c for c in commands)
        if name in ("droid", "devin"):
            assert all(c.endswith(f"--agent={name}") for c in commands)
    devin = json.loads(BY_NAME["devin"].file(tmp_path).read_text())
    assert set(devin) == {"mcpServers", "hooks"}  # servers and hooks in one file, one change
    assert tomllib.loads(BY_NAME["codex"].file(tmp_path).read_text())["features"]["codex_hooks"]


def _apply(plan: connect.Plan) -> connect.Plan:
    for change in plan.changes:
        change.write()
    return plan


@pytest.mark.unit
@pytest.mark.parametrize("name", connect.HOOK_AGENTS)
def test_every_agent_with_hooks_gets_them_and_loses_them_on_remove(
    name: str, tmp_path: Path
) -> None:
    wired = _apply(connect.wire(name, tmp_path, True, "", {}))
    assert wired.hooks and not any("MCP only" in n for n in wired.notes)
    assert connect.wiring(name, tmp_path).hook_commands
    removed = _apply(connect.unplan(name, tmp_path))
    assert removed.changes
    assert not connect.wiring(name, tmp_path).connected
    hooks = BY_NAME[name].hooks
    if hooks is not None and hooks.file(tmp_path).name.startswith("agentmemory"):
        assert not hooks.file(tmp_path).exists()  # a file of ours alone goes with them


@pytest.mark.unit
def test_copilot_cli_and_vscode_share_one_hooks_file_that_goes_with_the_last(
    tmp_path: Path,
) -> None:
    hooks_file = tmp_path / ".copilot" / "hooks" / "agentmemory.json"
    _apply(connect.wire("copilot-cli", tmp_path, True, "", {}))
    first = hooks_file.read_text()
    assert "--agent=" not in first  # the script tells the two apart by their payloads
    assert not connect.wiring("vscode", tmp_path).connected  # Copilot's hooks: not VS Code's
    _apply(connect.wire("vscode", tmp_path, True, "", {}))
    assert hooks_file.read_text() == first  # one file for both: the same entries
    assert connect.wiring("vscode", tmp_path).hook_commands
    kept = _apply(connect.unplan("vscode", tmp_path))
    assert hooks_file.read_text() == first, "removing VS Code took Copilot CLI's hooks"
    assert any("Copilot CLI" in n and "still connected" in n for n in kept.notes)
    assert not connect.wiring("vscode", tmp_path).connected
    _apply(connect.unplan("copilot-cli", tmp_path))
    assert not hooks_file.exists()  # the last one out takes the file
    _apply(connect.wire("vscode", tmp_path, True, "", {}))
    assert hooks_file.read_text() == first
    _apply(connect.unplan("vscode", tmp_path))
    assert not hooks_file.exists()


@pytest.mark.unit
def test_dsh_hooks_row_names_the_hooks_file_it_writes(tmp_path: Path) -> None:
    for change in connect.wire("dsh", tmp_path, True, "", {}).changes:
        change.write()
    rows = _yaml(BY_NAME["dsh"].file(tmp_path).read_text())
    row = next(i for r in rows for i in r["insert"] if i["id"] == "agentmemory-hooks")
    assert row["name"] == "@deepseek-ai/dsh-hooks-claude-code"
    hooks = json.loads(Path(row["config"]["configPath"]).read_text())["hooks"]
    assert set(hooks) == set(CODEX_EVENTS)


@pytest.mark.unit
def test_pi_extension_runs_our_hook_script_with_this_interpreter(tmp_path: Path) -> None:
    for change in connect.wire("pi", tmp_path, False, "http://127.0.0.1:4111", {}).changes:
        change.write()
    text = BY_NAME["pi"].file(tmp_path).read_text()
    assert "__AGENTMEMORY_" not in text and str(SCRIPTS["claude-code"]) in text
    assert '{"AGENTMEMORY_URL": "http://127.0.0.1:4111"}' in text
    for change in connect.unplan("pi", tmp_path).changes:
        change.write()
    assert not BY_NAME["pi"].file(tmp_path).exists()


@pytest.mark.unit
def test_guideline_block_is_upserted_once_and_removed_alone(tmp_path: Path) -> None:
    rules = tmp_path / ".gemini" / "GEMINI.md"
    rules.parent.mkdir(parents=True)
    rules.write_text("# my rules\nBe brief.\n")
    for _ in range(2):
        for change in connect.wire("gemini-cli", tmp_path, False, "", {}).changes:
            change.write()
    text = rules.read_text()
    assert text.startswith("# my rules\nBe brief.\n") and text.count("agentmemory:start") == 1
    assert "memory_smart_search" in text
    for change in connect.unplan("gemini-cli", tmp_path).changes:
        change.write()
    assert rules.read_text() == "# my rules\nBe brief.\n"


@pytest.mark.unit
def test_a_jsonc_file_is_refused_not_rewritten(tmp_path: Path) -> None:
    zed = BY_NAME["zed"].file(tmp_path)
    zed.parent.mkdir(parents=True)
    zed.write_text('// Zed settings\n{\n  "theme": "One Dark",\n}\n')
    with pytest.raises(ValueError, match="comments"):
        connect.wire("zed", tmp_path, False, "", {})
    assert zed.read_text().startswith("// Zed settings")


@pytest.mark.parametrize(
    "args", [["connect", "mcp", "--instance", "4"], ["--instance", "4", "connect", "mcp"]]
)
def test_connect_mcp_prints_the_instance_env(stack: CliStack, args: list[str]) -> None:
    res = subprocess.run(
        [*CLI, *args], env=stack.env, cwd=stack.home, capture_output=True, text=True, timeout=60
    )
    block = json.loads(res.stdout)["mcpServers"]["agentmemory"]
    assert block["args"] == ["mcp"] and block["env"] == {"AGENTMEMORY_INSTANCE": "4"}


# ---- the agents' own readers ---------------------------------------------------------
def _wired_home(stack: CliStack, name: str, tmp: Path) -> Path:
    home = tmp / f"home-{name}"
    home.mkdir()
    # The stack's secret, where our MCP server (run by the agent) looks for it.
    (home / ".agentmemory").mkdir()
    (home / ".agentmemory" / "secret").write_text(stack.secret())
    env = {"AGENTMEMORY_DATA_DIR": str(stack.data_dir), "AGENTMEMORY_PORT": str(stack.port)}
    for change in connect.wire(name, home, True, stack.url, env).changes:
        change.write()
    return home


def test_claude_code_lists_and_connects_to_the_server(
    running_stack: CliStack, tmp_path: Path
) -> None:
    home = _wired_home(running_stack, "claude-code", tmp_path)
    res = agent_clis.run("claude", "mcp", "list", home=home)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("agentmemory:")), "")
    assert "Connected" in line and "✘" not in line, res.stdout + res.stderr
    # The hooks we wrote to settings.json, held to the plugin hook schema by Claude Code.
    plugin = tmp_path / "as-plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / "hooks").mkdir()
    manifest = {"name": "settings-hooks", "version": "0.0.1", "description": "check"}
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    res = agent_clis.run("claude", "plugin", "validate", str(plugin), home=home)
    assert res.returncode == 0 and "✘" not in res.stdout, res.stdout


def test_codex_reads_the_server_entry(running_stack: CliStack, tmp_path: Path) -> None:
    home = _wired_home(running_stack, "codex", tmp_path)
    res = agent_clis.run("codex", "mcp", "list", "--json", home=home)
    servers = {s["name"]: s for s in json.loads(res.stdout)}
    transport = servers["agentmemory"]["transport"]
    assert transport["command"] == MCP[0] and transport["args"] == MCP[1:]
    assert servers["agentmemory"]["enabled"] is True


def _connected(res: Any, marker: str = "agentmemory") -> str:
    text = res.stdout + res.stderr
    return next((ln for ln in text.splitlines() if marker in ln), text)


@pytest.mark.timeout(300)  # up to five tries of a node CLI
@pytest.mark.parametrize("cli,name", [("gemini", "gemini-cli"), ("qwen", "qwen")])
def test_gemini_and_qwen_parse_and_connect(
    running_stack: CliStack, tmp_path: Path, cli: str, name: str
) -> None:
    home = _wired_home(running_stack, name, tmp_path)
    work = home / "work"
    work.mkdir()
    folder = ".gemini" if cli == "gemini" else ".qwen"
    (home / folder / "trustedFolders.json").write_text(json.dumps({str(work): "TRUST_FOLDER"}))
    # `mcp list` gives a server 5 s to start and answer (fixed in both CLIs): our Python
    # server takes under one alone, but on a machine loaded by other work it took longer
    # (Disconnected in two full runs). A server that cannot connect fails every try.
    for attempt in range(5):
        res = agent_clis.run(cli, "mcp", "list", home=home, cwd=work)
        assert "Invalid configuration" not in res.stdout + res.stderr, res.stdout + res.stderr
        line = _connected(res, "agentmemory:")
        if "Disconnected" not in line:
            break
        time.sleep(2 * attempt)
    assert "Connected" in line and "Disconnected" not in line, res.stdout + res.stderr


@pytest.mark.timeout(300)  # three node CLIs, each starting our MCP server
def test_opencode_droid_and_copilot_read_the_entry(running_stack: CliStack, tmp_path: Path) -> None:
    home = _wired_home(running_stack, "opencode", tmp_path)
    line = _connected(agent_clis.run("opencode", "mcp", "list", home=home))
    assert "failed" not in line and "✓" in line, line
    home = _wired_home(running_stack, "droid", tmp_path)
    line = _connected(agent_clis.run("droid", "mcp", "list", home=home))
    assert "failed" not in line.lower() and "stdio" in line, line
    home = _wired_home(running_stack, "copilot-cli", tmp_path)
    res = agent_clis.run("copilot", "mcp", "list", home=home)
    assert "agentmemory (local)" in res.stdout, res.stdout + res.stderr


# ---- the server by URL (`connect --transport http`) ----------------------------------
URL = connect.McpUrl.of("http://127.0.0.1:4111", "s3cret")
URL_AGENTS = [a.name for a in AGENTS if a.url is not None]


def _expected_url(name: str) -> dict[str, Any]:
    """Our entry by URL in each agent's documented schema."""
    shape = BY_NAME[name].url
    where = {"url": URL.url, "headers": {"Authorization": "Bearer s3cret"}}
    if shape == "http":
        return {"type": "http", **where}
    if shape == "copilot":
        return {"type": "http", **where, "tools": ["*"]}
    if shape == "httpUrl":
        return {"httpUrl": URL.url, "headers": where["headers"]}
    if shape == "serverUrl":
        return {"serverUrl": URL.url, "headers": where["headers"]}
    if shape == "cline":
        return {"type": "streamableHttp", **where}
    if shape == "opencode":
        return {"type": "remote", **where, "enabled": True}
    if shape == "continue":
        return {
            "name": "agentmemory",
            "type": "streamable-http",
            "url": URL.url,
            "requestOptions": {"headers": where["headers"]},
        }
    if shape == "codex":
        return {"url": URL.url, "http_headers": where["headers"]}
    return where


@pytest.mark.parametrize("name", URL_AGENTS)
def test_each_url_target_writes_the_agents_url_schema_privately_and_switches_back(
    name: str, tmp_path: Path
) -> None:
    _seed(tmp_path, name)
    path = BY_NAME[name].file(tmp_path)
    path.chmod(0o644)
    for change in connect.wire(name, tmp_path, False, "", ENV, mcp_url=URL).changes:
        change.write()
    assert URL.url == "http://127.0.0.1:4111/agentmemory/mcp"
    assert _ours(tmp_path, name) == _expected_url(name)
    assert path.stat().st_mode & 0o777 == 0o600  # it holds the secret now
    read_back = connect.wiring(name, tmp_path)
    assert (read_back.mcp_url, read_back.mcp_bearer, read_back.mcp_command) == (
        URL.url,
        "s3cret",
        [],
    )
    assert read_back.connected
    again = connect.wire(name, tmp_path, False, "", ENV, mcp_url=URL)
    assert not any(c.changed for c in again.changes), "a second connect changed something"
    for change in connect.wire(name, tmp_path, False, "", ENV).changes:  # back to stdio
        change.write()
    assert _ours(tmp_path, name) == _expected(name)
    assert not connect.wiring(name, tmp_path).mcp_url
    for change in connect.wire(name, tmp_path, False, "", ENV, mcp_url=URL).changes:
        change.write()
    for change in connect.unplan(name, tmp_path).changes:
        change.write()
    assert _ours(tmp_path, name) is None


@pytest.mark.parametrize(
    "name", [a.name for a in AGENTS if a.url is None and a.format not in ("none", "extension")]
)
def test_an_agent_without_a_url_form_keeps_the_command_and_says_so(
    name: str, tmp_path: Path
) -> None:
    _seed(tmp_path, name)
    result = connect.wire(name, tmp_path, False, "", ENV, mcp_url=URL)
    assert any("as a command" in n for n in result.notes), result.notes
    for change in result.changes:
        change.write()
    assert _ours(tmp_path, name) == _expected(name)
    assert "s3cret" not in BY_NAME[name].file(tmp_path).read_text()


def test_connect_mcp_prints_the_url_block(stack: CliStack) -> None:
    res = stack.cli("connect", "mcp", "--transport", "http")
    block = json.loads(res.stdout)["mcpServers"]["agentmemory"]
    assert block == {
        "type": "http",
        "url": f"{stack.url}/agentmemory/mcp",
        "headers": {"Authorization": f"Bearer {stack.secret()}"},
    }
    bad = stack.cli("connect", "cursor", "--transport", "sse", check=False)
    assert bad.returncode == 2 and "stdio or http" in bad.stderr


def _connected_by_url(stack: CliStack, tmp: Path, name: str) -> Path:
    """A new user's HOME where `agentmemory connect <name> --transport http` ran."""
    home = tmp / f"url-home-{name}"
    (home / ".agentmemory").mkdir(parents=True)
    (home / ".agentmemory" / "secret").write_text(stack.secret())
    env = {**stack.env, "HOME": str(home)}
    cmd = [*CLI, "connect", name, "--transport", "http"]
    cmd += ["--data-dir", str(stack.data_dir), "--port", str(stack.port)]
    res = subprocess.run(cmd, env=env, cwd=home, capture_output=True, text=True, timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "readable by you only" in res.stdout
    return home


def test_claude_code_connects_to_the_url_connect_writes(
    running_stack: CliStack, tmp_path: Path
) -> None:
    home = _connected_by_url(running_stack, tmp_path, "claude-code")
    res = agent_clis.run("claude", "mcp", "list", home=home)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("agentmemory:")), "")
    assert "/agentmemory/mcp (HTTP)" in line, res.stdout + res.stderr
    assert "Connected" in line and "✘" not in line, res.stdout + res.stderr
    where = ["--data-dir", str(running_stack.data_dir), "--port", str(running_stack.port)]
    doctor = subprocess.run(
        [*CLI, "doctor", "--agent", "claude-code", *where],
        env={**running_stack.env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=90,
    )
    mcp_line = next(ln for ln in doctor.stdout.splitlines() if "claude-code MCP server" in ln)
    assert mcp_line.startswith("ok") and "/agentmemory/mcp (bearer secret)" in mcp_line


@pytest.mark.parametrize("cli,name", [("gemini", "gemini-cli"), ("qwen", "qwen")])
def test_gemini_and_qwen_connect_to_the_url_connect_writes(
    running_stack: CliStack, tmp_path: Path, cli: str, name: str
) -> None:
    home = _connected_by_url(running_stack, tmp_path, name)
    work = home / "work"
    work.mkdir()
    folder = ".gemini" if cli == "gemini" else ".qwen"
    (home / folder / "trustedFolders.json").write_text(json.dumps({str(work): "TRUST_FOLDER"}))
    res = agent_clis.run(cli, "mcp", "list", home=home, cwd=work)
    line = _connected(res, "agentmemory:")
    assert "/agentmemory/mcp (http)" in line, res.stdout + res.stderr
    assert "Connected" in line and "Disconnected" not in line, res.stdout + res.stderr


def test_codex_opencode_droid_and_copilot_read_the_url_entry(
    running_stack: CliStack, tmp_path: Path
) -> None:
    url = f"{running_stack.url}/agentmemory/mcp"
    home = _connected_by_url(running_stack, tmp_path, "codex")
    servers = {
        s["name"]: s
        for s in json.loads(agent_clis.run("codex", "mcp", "list", "--json", home=home).stdout)
    }
    transport = servers["agentmemory"]["transport"]
    assert (transport["type"], transport["url"]) == ("streamable_http", url)
    assert servers["agentmemory"]["auth_status"] == "bearer_token"
    home = _connected_by_url(running_stack, tmp_path, "opencode")
    line = _connected(agent_clis.run("opencode", "mcp", "list", home=home))
    assert "failed" not in line and "✓" in line and "connected" in line, line
    home = _connected_by_url(running_stack, tmp_path, "droid")
    line = _connected(agent_clis.run("droid", "mcp", "list", home=home))
    assert "http" in line and "connected" in line and "failed" not in line.lower(), line
    home = _connected_by_url(running_stack, tmp_path, "copilot-cli")
    res = agent_clis.run("copilot", "mcp", "list", home=home)
    assert "agentmemory (http)" in res.stdout, res.stdout + res.stderr
