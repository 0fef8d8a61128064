"""Hook latency: wall time of the Claude Code PostToolUse hook process, start to exit.

Three sides in alternating rounds, so machine noise hits all alike:
  - `python3 -c pass` (what a Python hook pays with site-packages), and `python3 -S -c
    pass` (the floor our `-S` hooks stand on),
  - the hook with the real service up (engine + http trigger + memory worker, started by
    `agentmemory start --detach` in a throwaway HOME, data dir and port block),
  - the hook with the server down (connection refused, the event goes to the spool).
Target: hook_p99_ms <= python_p50_ms + 60.

    python ops/bench/hook.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.settings import environ
from ops.bench.harness import ROOT, emit, free_block, median, pct
from workers.hooks import SCRIPTS

PYTHON = os.path.realpath(sys.executable)
HOOK = [PYTHON, "-S", str(SCRIPTS["claude-code"])]
_CLI = Path(sys.executable).parent / "agentmemory"
CLI = [str(_CLI)] if _CLI.exists() else [sys.executable, "-m", "workers.cli"]
CONFIG = """
workers:
  - name: http
    command: [{python}, -m, workers.trigger_plugins, http]
  - name: memory
    module: workers.memory
    depends_on: [http]
"""


def payload(i: int) -> bytes:
    return json.dumps(
        {
            "session_id": "bench-session",
            "transcript_path": "/tmp/bench.jsonl",
            "cwd": "/tmp/bench-project",
            "permission_mode": "default",
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest tests/test_{i}.py -q"},
            "tool_response": {"stdout": "." * 200 + f"\n{i} passed", "stderr": ""},
            "tool_use_id": f"toolu_bench_{os.getpid()}_{i}",
        }
    ).encode()


def timed(cmd: list[str], data: bytes, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, input=data, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds = 40 if args.quick else 200
    with tempfile.TemporaryDirectory(prefix="hookbench-") as tmp:
        root = Path(tmp)
        home, data = root / "home", root / "data"
        home.mkdir()
        anchor = free_block(6)
        config = ROOT / "config" / "engine.yaml"
        if "workers.memory" not in config.read_text():
            config = root / "engine.yaml"
            config.write_text(CONFIG.format(python=json.dumps(sys.executable)))
        base = {k: v for k, v in environ().items() if not k.startswith(("AGENTMEMORY_", "ENGINE_"))}
        env = {**base, "HOME": str(home), "PYTHONPATH": str(ROOT)}
        target = ["--data-dir", str(data), "--port", str(anchor)]
        subprocess.run(
            [*CLI, "start", "--detach", *target, "--config", str(config)],
            env=env,
            check=True,
            capture_output=True,
        )
        try:
            up_env = {
                **env,
                "AGENTMEMORY_URL": f"http://127.0.0.1:{anchor}",
                "AGENTMEMORY_SPOOL_DIR": str(root / "spool-up"),
            }
            down_env = {
                **env,
                "AGENTMEMORY_URL": f"http://127.0.0.1:{free_block(6)}",
                "AGENTMEMORY_SPOOL_DIR": str(root / "spool-down"),
            }
            _wait_serving(up_env)
            py, py_s, up, down = [], [], [], []
            for i in range(rounds):
                py.append(timed([PYTHON, "-c", "pass"], b"", env))
                py_s.append(timed([PYTHON, "-S", "-c", "pass"], b"", env))
                up.append(timed(HOOK, payload(i), up_env))
                down.append(timed(HOOK, payload(i), down_env))
        finally:
            subprocess.run([*CLI, "stop", *target], env=env, capture_output=True)
    figures = {
        "bench": "hook",
        "rounds": rounds,
        "python_p50_ms": round(median(py), 2),
        "python_S_p50_ms": round(median(py_s), 2),
        "hook_p50_ms": round(median(up), 2),
        "hook_p99_ms": round(pct(up, 99), 2),
        "down_p50_ms": round(median(down), 2),
        "down_p99_ms": round(pct(down, 99), 2),
    }
    figures["target_met"] = figures["hook_p99_ms"] <= figures["python_p50_ms"] + 60
    print(
        f"hook p50 {figures['hook_p50_ms']} ms, p99 {figures['hook_p99_ms']} ms (server up); "
        f"p99 {figures['down_p99_ms']} ms (server down); python3 -c pass p50 "
        f"{figures['python_p50_ms']} ms; ratio hook_p50/python_p50 = "
        f"{figures['hook_p50_ms'] / figures['python_p50_ms']:.2f}"
    )
    emit(figures)


def _wait_serving(env: dict[str, str]) -> None:
    """Until one hook event is stored (the routes reach the trigger a moment after start)."""
    from workers.hooks._hookcore import Settings, request

    settings = Settings(env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        reply = request(settings, "GET", "/agentmemory/sessions", None)
        if reply is not None and reply.status == 200:
            return
        time.sleep(0.1)
    raise RuntimeError("memory service did not come up")


if __name__ == "__main__":
    main()
