"""docs/EXTENDING.md runs as written: its code blocks (two files and a config entry) make a
new operation that answers over the bus, REST (listed in the OpenAPI document) and MCP."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from engine import Client, connect
from tests.fixtures import ROOT, eventually, free_port_block

DOC = ROOT / "docs" / "EXTENDING.md"
SECRET = "extending-secret"
_BLOCK = re.compile(r"```(?P<lang>\w+) (?P<path>[\w./-]+)\n(?P<body>.*?)```", re.S)


def _noisy(line: str) -> bool:
    return any(w in line for w in ("Warning:", "Traceback", " WARNING ", " ERROR "))


def recipe() -> dict[str, str]:
    """path -> content of every fenced block whose info string names a file."""
    return {m["path"]: m["body"] for m in _BLOCK.finditer(DOC.read_text())}


def tree_with(tmp: Path, blocks: dict[str, str]) -> Path:
    """A copy of the repository made of symlinks, with the recipe's files added: new
    files in real folders, config/engine.yaml a copy with the recipe's entry appended."""
    repo = tmp / "repo"
    repo.mkdir()
    folders = {Path(p).parts[0] for p in blocks}
    for entry in ROOT.iterdir():
        if entry.name in folders or entry.name.startswith("."):
            continue
        (repo / entry.name).symlink_to(entry)
    for folder in folders:
        (repo / folder).mkdir()
        for child in (ROOT / folder).iterdir():
            if child.name != "__pycache__":
                (repo / folder / child.name).symlink_to(child)
    for path, body in blocks.items():
        target = repo / path
        if path.endswith(".yaml"):
            target.unlink()
            target.write_text((ROOT / path).read_text().rstrip("\n") + "\n" + body)
            continue
        if target.parent.is_symlink():  # a new file in an existing package folder
            real = target.parent.resolve()
            target.parent.unlink()
            shutil.copytree(
                real, target.parent, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    return repo


@pytest.mark.unit
def test_the_recipe_is_two_files_and_a_config_entry() -> None:
    blocks = recipe()
    files = [p for p in blocks if not p.startswith("config/")]
    assert len(files) <= 2 and set(blocks) - set(files) == {"config/engine.yaml"}
    assert not any((ROOT / p).exists() for p in files)  # new files, not edits of ours


@pytest.mark.slow
async def test_the_recipe_answers_over_the_bus_rest_openapi_and_mcp(tmp_path: Path) -> None:
    repo = tree_with(tmp_path, recipe())
    anchor = free_port_block()
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONPATH": str(repo),
        "AGENTMEMORY_SECRET": SECRET,
        "ENGINE_LOG_LEVEL": "WARNING",
    }
    data = tmp_path / "data"
    cmd = [sys.executable, "-m", "engine", "run", "--config", str(repo / "config/engine.yaml")]
    proc = subprocess.Popen(
        [*cmd, "--data-dir", str(data), "--port", str(anchor), "--quiet"],
        cwd=repo,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("engine ready"):
                break
        else:
            raise AssertionError("engine did not start:\n" + "".join(lines[-30:]))
        info = json.loads((data / "engine.pid").read_text())
        ports = info["ports"]

        # the bus
        creds = str(data / "nats" / "credentials.json")
        c = Client(await connect(info["nats_url"], creds))
        try:
            got = await c.call("mem::word-count", {"text": "one two three"}, timeout=10)
        finally:
            await c.nc.close()
        assert got == {"words": 3, "longest": "three"}

        # REST, with the declared validation, and the OpenAPI document
        base = f"http://127.0.0.1:{ports['rest']}"
        auth = {"Authorization": f"Bearer {SECRET}"}
        async with httpx.AsyncClient(base_url=base, headers=auth, timeout=15) as http:

            async def served() -> bool:
                r = await http.post("/agentmemory/word-count", json={"text": "a bb ccc"})
                return r.status_code == 200 and r.json() == {"words": 3, "longest": "ccc"}

            await eventually(served, timeout=20, what="the route is served")
            bad = await http.post("/agentmemory/word-count", json={"text": "x", "minLength": 0})
            assert bad.status_code == 400 and bad.json()["error"]["field"] == "minLength"
            blank = await http.post("/agentmemory/word-count", json={"text": "  "})
            assert blank.status_code == 400 and blank.json()["error"]["field"] == "text"
            doc = (await http.get("/agentmemory/openapi.json")).json()
            op = doc["paths"]["/agentmemory/word-count"]["post"]
            assert op["operationId"] == "mem::word-count"
            schemas = doc["components"]["schemas"]
            body_ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            assert schemas[body_ref.rsplit("/", 1)[1]]["required"] == ["text"]
            ok_ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
            assert set(schemas[ok_ref.rsplit("/", 1)[1]]["properties"]) == {"words", "longest"}

            # upstream's shim routes
            tools = (await http.get("/agentmemory/mcp/tools")).json()["tools"]
            tool = next(t for t in tools if t["name"] == "memory_word_count")
            assert tool["inputSchema"]["required"] == ["text"]

        # our MCP server, as an agent runs it (stdio)
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "workers.mcp"],
            env={**env, "AGENTMEMORY_URL": base},
            cwd=str(repo),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            assert "memory_word_count" in names
            result = await s.call_tool("memory_word_count", {"text": "x yy"})
            assert not result.is_error
            assert result.structured_content == {"words": 2, "longest": "yy"}

        # a clean start: no warning or traceback in any worker's log
        noisy = {
            log.name: [ln for ln in log.read_text().splitlines() if _noisy(ln)]
            for log in (data / "logs").glob("*.log")
        }
        assert {k: v for k, v in noisy.items() if v} == {}
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
