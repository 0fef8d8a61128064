"""The product as a user installs it: a wheel in a fresh virtualenv outside the checkout.

`pipx install agentmemory-nats` (or `uv tool install`) is a venv plus `pip install` of the
wheel plus a link to its script; this builds the wheel from the work tree's files, installs
it the same way and runs the installed `agentmemory` from another directory, with nothing of
the checkout on sys.path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.fixtures import free_port_block, wait_until

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "functions", "triggers", "workers")
INSTALL_TIMEOUT = 600
pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_TIMEOUT + 300)]


def _tree_files() -> list[str]:
    """What a clean clone holds (tracked files, and new ones not ignored)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    names = [f for f in out.decode().split("\0") if f]
    return [f for f in names if (ROOT / f).is_symlink() or (ROOT / f).is_file()]


def _copy_tree(dest: Path) -> None:
    # A build in the checkout itself would leave build/ behind; a copy is also a check
    # that the tracked files alone make the wheel.
    for rel in _tree_files():
        src, dst = ROOT / rel, dest / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)


@dataclass
class Installed:
    wheel: Path
    venv: Path
    env: dict[str, str]
    home: Path
    elsewhere: Path

    @property
    def agentmemory(self) -> str:
        return str(self.venv / "bin" / "agentmemory")

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.agentmemory, *args],
            cwd=self.elsewhere,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("wheel")
    src, out = base / "src", base / "dist"
    _copy_tree(src)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(src),
        ],
        check=True,
        timeout=INSTALL_TIMEOUT,
        capture_output=True,
    )
    wheel = next(out.glob("agentmemory_nats-*.whl"))
    venv = base / "venv"
    python = shutil.which("python3.11") or sys.executable
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        timeout=INSTALL_TIMEOUT,
        capture_output=True,
    )
    home, elsewhere = base / "home", base / "somewhere-else"
    home.mkdir()
    elsewhere.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENTMEMORY_", "ENGINE_", "XDG_", "PYTHON", "VIRTUAL_ENV"))
    }
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    yield Installed(wheel, venv, env, home, elsewhere)


def test_the_wheel_holds_every_file_the_packages_read(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    wanted = set()
    for rel in _tree_files():
        top = rel.split("/", 1)[0]
        path = ROOT / rel
        if top not in PACKAGES or rel.endswith(".py"):
            continue
        if path.is_symlink() and path.is_dir():  # workers/config -> ../config
            wanted |= {f"{rel}/{p.name}" for p in path.iterdir() if p.suffix == ".yaml"}
        elif "README" not in rel:
            wanted.add(rel)
    assert wanted, "no data files found: the walk is wrong"
    assert {"workers/config/engine.yaml", "functions/kernel/secret_rules.json"} <= names
    assert wanted <= names, f"missing from the wheel: {sorted(wanted - names)}"
    assert not any(n.startswith(("tests/", "ops/", "config/")) for n in names)


async def test_installed_wheel_starts_observes_searches_and_serves_every_tool(
    installed: Installed,
) -> None:
    from tests.upstream.stack import upstream_tools

    port, data = free_port_block(), installed.home / "data"
    where = ["--port", str(port), "--data-dir", str(data)]
    started = installed.run("start", "--detach", *where, timeout=180)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        assert f"127.0.0.1:{port}" in started.stdout
        secret = (installed.home / ".agentmemory" / "secret").read_text().strip()
        headers = {"Authorization": f"Bearer {secret}"}
        url = f"http://127.0.0.1:{port}/agentmemory"
        body = {
            "sessionId": "wheel-1",
            "project": "wheelproj",
            "hookType": "post_tool_use",
            "timestamp": "2026-12-01T10:00:00Z",
            "data": {
                "tool_name": "Bash",
                "tool_input": {"command": "pytest tests/test_flux_capacitor.py"},
                "tool_output": "1 failed: FluxCapacitorOverload",
            },
        }
        with httpx.Client(headers=headers, timeout=30) as http:
            assert http.post(f"{url}/observe", json=body).status_code in (200, 201)

        def found() -> bool:
            res = installed.run("search", "flux capacitor overload", "--json", *where)
            return res.returncode == 0 and "FluxCapacitor" in res.stdout

        wait_until(found, timeout=60, what="the observation found by `agentmemory search`")

        env = {**installed.env, "AGENTMEMORY_DATA_DIR": str(data), "AGENTMEMORY_PORT": str(port)}
        params = StdioServerParameters(
            command=installed.agentmemory, args=["mcp"], env=env, cwd=str(installed.elsewhere)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
        upstream = set(upstream_tools())
        assert len(upstream) == 54
        assert upstream <= names, f"missing tools: {sorted(upstream - names)}"
    finally:
        stopped = installed.run("stop", *where, timeout=120)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert not (data / "engine.pid").exists()


def test_a_foreign_package_named_engine_is_refused_with_the_way_out(
    installed: Installed, tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow" / "engine"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("# some other project's engine\n")
    env = {**installed.env, "PYTHONPATH": str(shadow.parent)}
    res = subprocess.run(
        [installed.agentmemory, "status"], env=env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 2
    assert "`import engine` loads" in res.stderr and str(shadow) in res.stderr
    assert "pipx install agentmemory-nats" in res.stderr and "Traceback" not in res.stderr

    site = next((installed.venv / "lib").glob("python3*/site-packages"))
    init = site / "functions" / "__init__.py"
    original = init.read_bytes()
    init.write_bytes(original + b"\n# overwritten by another distribution\n")
    try:
        res = installed.run("status")
    finally:
        init.write_bytes(original)
    assert res.returncode == 2
    assert "replaced the package `functions`" in res.stderr


def test_the_installed_plugin_is_complete_and_valid(installed: Installed) -> None:
    from tests.agent import agent_clis

    res = installed.run("plugin")
    assert res.returncode == 0, res.stderr
    root = Path(res.stdout.splitlines()[0])
    assert root.is_relative_to(installed.venv)
    for rel in (
        ".claude-plugin/plugin.json",
        ".claude-plugin/marketplace.json",
        ".codex-plugin/plugin.json",
        ".mcp.json",
        "hooks/hooks.json",
        "hooks/hooks.codex.json",
        "claude_code.py",
        "skills/recall/SKILL.md",
        "skills/_shared/TROUBLESHOOTING.md",
        "pi/index.ts",
    ):
        assert (root / rel).exists(), rel
    checked = agent_clis.run(
        "claude",
        "plugin",
        "validate",
        "--strict",
        str(root / ".claude-plugin" / "plugin.json"),
        home=installed.home,
    )
    assert checked.returncode == 0 and "Validation passed" in checked.stdout, checked.stdout
