"""`python -m engine run` (what `make run` runs) as a user starts it in a terminal: the
instance the environment names, and a start a person can read (the ready line where they
look, no line per route)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures import ROOT, free_port_block

pytestmark = pytest.mark.timeout(240)


def test_engine_run_honours_agentmemory_instance_and_starts_quietly(tmp_path: Path) -> None:
    rest = free_port_block()
    anchor = rest - 400  # instance 4 shifts the block by 400
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEMORY_", "ENGINE_", "XDG_"))
    }
    env.update(
        HOME=str(tmp_path),
        PYTHONPATH=str(ROOT),
        AGENTMEMORY_INSTANCE="4",
        AGENTMEMORY_PORT=str(anchor),
        AGENTMEMORY_DATA_DIR=str(tmp_path / "data"),
    )
    cmd = [sys.executable, "-m", "engine", "run", "--config", str(ROOT / "config" / "engine.yaml")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    before: list[str] = []
    ready = ""
    try:
        deadline = time.monotonic() + 180
        for line in proc.stderr:
            if "engine ready:" in line:
                ready = line
                break
            before.append(line)
            assert time.monotonic() < deadline, "no ready line"
        assert ready, "".join(before[-20:])
        assert "instance 4" in ready and f"rest :{rest}" in ready
        info = json.loads((tmp_path / "data" / "instance-4" / "engine.pid").read_text())
        assert info["instance"] == 4 and info["ports"]["rest"] == rest
        chatter = [ln for ln in before if " route " in ln or " -> " in ln]
        assert chatter == [], chatter[:5]
        assert len(before) < 60, f"{len(before)} lines before the ready line"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
