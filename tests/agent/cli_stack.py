"""The product as a new user gets it: started by the real `agentmemory` CLI, with a clean
HOME, data dir and port block, as on a fresh machine (the `stack` fixtures of conftest.py)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.fixtures import free_port_block, wait_until

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
_SCRIPT = Path(sys.executable).parent / "agentmemory"
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "workers.cli"]

# The stack a new user gets: the http trigger, memory and lifecycle workers. config/engine.yaml is
# used as soon as it runs the memory worker; until then, the same workers from here.
_TEST_CONFIG = """
instance: 0
stop_timeout: 20
workers:
  - name: http
    command: [{python}, -m, workers.trigger_plugins, http]
  - name: memory
    module: workers.memory
    depends_on: [http]
  - name: lifecycle
    module: workers.lifecycle
    depends_on: [memory]
"""


def engine_config(tmp: Path) -> Path:
    default = ROOT / "config" / "engine.yaml"
    if "workers.memory" in default.read_text():
        return default
    path = tmp / "engine.yaml"
    path.write_text(_TEST_CONFIG.format(python=json.dumps(sys.executable)))
    return path


@dataclass
class CliStack:
    home: Path
    data_dir: Path
    port: int
    config: Path
    project_dir: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cli(
        self, *args: str, timeout: float = 90, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        target = ["--data-dir", str(self.data_dir), "--port", str(self.port)]
        cmd = [*CLI, *args]
        if args and args[0] in {
            "start",
            "stop",
            "status",
            "search",
            "demo",
            "import-jsonl",
            "doctor",
            "connect",
        }:
            cmd += target
        if args and args[0] == "start":
            cmd += ["--config", str(self.config)]
        res = subprocess.run(
            cmd, env=self.env, cwd=self.home, capture_output=True, text=True, timeout=timeout
        )
        if check and res.returncode != 0:
            raise AssertionError(
                f"{shlex.join(cmd)} exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
            )
        return res

    def secret(self) -> str:
        return (self.home / ".agentmemory" / "secret").read_text().strip()

    def rest(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.secret()}", "Content-Type": "application/json"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=15)

    def observations(self, session_id: str) -> list[dict[str, Any]]:
        with self.rest() as c:
            r = c.get("/agentmemory/observations", params={"sessionId": session_id, "limit": 1000})
            r.raise_for_status()
            data = r.json()
        items = data.get("observations", data) if isinstance(data, dict) else data
        return list(items)

    def start(self) -> None:
        self.cli("start", "--detach")
        wait_until(self.serving, timeout=30, what="memory routes served")

    def serving(self) -> bool:
        try:
            with self.rest() as c:
                return c.get("/agentmemory/sessions").status_code == 200
        except (httpx.HTTPError, OSError):
            return False

    def hook_env(self) -> dict[str, str]:
        return {**self.env, "AGENTMEMORY_URL": self.url}


def new_stack(tmp_path: Path) -> CliStack:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "payments-svc"
    (project / ".git").mkdir(parents=True)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEMORY_", "ENGINE_", "XDG_"))
    }
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), AGENTMEMORY_SPOOL_DIR=str(home / "spool"))
    return CliStack(
        home, tmp_path / "data", free_port_block(), engine_config(tmp_path), project, env
    )


def teardown(st: CliStack) -> None:
    pidfile = st.data_dir / "engine.pid"
    if not pidfile.exists():
        return
    st.cli("stop", check=False, timeout=60)
    try:
        pid = int(json.loads(pidfile.read_text())["pid"])
        os.killpg(pid, 9)
    except (OSError, ValueError, KeyError):
        pass


def session_payloads(cwd: Path) -> list[dict[str, Any]]:
    text = (FIXTURES / "claude_code_session.jsonl").read_text().replace("{cwd}", str(cwd))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run_hook(command: str, payload: dict[str, Any], env: dict[str, str]) -> tuple[int, float]:
    """Run an installed hook command as the agent would; returns (exit code, seconds)."""
    started = time.perf_counter()
    res = subprocess.run(
        command,
        shell=True,
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return res.returncode, time.perf_counter() - started
