"""A stop asked for while the engine is still starting (Ctrl-C while a worker is slow to
come up) ends the start at once: what had started is stopped and the engine exits 0,
instead of waiting out the slow worker's ready timeout first."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ops.procfs import cmdline, process_tree
from tests.fixtures import ROOT, EngineProcess

CONFIG = """
workers:
  - name: slow
    command: [sleep, "600"]
    ready_timeout: 120
"""


def test_ctrl_c_while_a_worker_is_starting_stops_the_engine_at_once(tmp_path: Path) -> None:
    engine = EngineProcess(tmp_path, CONFIG)
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "--config", str(engine.config), *engine.args()],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stderr or []), daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        while not any(cmdline(p)[:1] == ["sleep"] for p in process_tree(proc.pid)):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.1)
        children = [p for p in process_tree(proc.pid) if p != proc.pid]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, "".join(lines)  # not the 120 s ready timeout
        assert "engine stopped before it was ready" in "".join(lines)
        assert not (engine.data_dir / "engine.pid").exists()
        time.sleep(0.5)
        alive = [p for p in children if cmdline(p)]
        assert alive == [], alive
    finally:
        if proc.poll() is None:  # failed: leave no process of it behind (nats-server too)
            for pid in reversed(process_tree(proc.pid)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.wait()
