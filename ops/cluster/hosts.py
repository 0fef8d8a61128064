"""A simulated host: one `python -m engine run` supervisor with its own data dir and port
block, joined to the cluster. Killing a host freezes then SIGKILLs every process it runs
(supervisor and workers together, as a machine losing power), so no worker sees its
supervisor go and drains."""

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

ROOT = Path(__file__).resolve().parents[2]
READY = "engine ready"


class Host:
    """Host `index` of the cluster: instance `index` of the layout, anchored at `anchor`
    (its block is anchor + 100 × index, as `--instance` shifts it)."""

    def __init__(
        self,
        index: int,
        home: Path,
        config: Path,
        anchor: int,
        env: dict[str, str],
        *,
        address: str = "127.0.0.1",
        wrap: list[str] | None = None,
    ) -> None:
        """`address`: where its REST listens (a namespace's own address); `wrap`: a command
        prefix (`ip netns exec NS`) that runs the host in a network namespace."""
        self.address = address
        self.wrap = wrap or []
        self.index = index
        self.home = home
        self.data_dir = home / "data"
        self.config = config
        self.anchor = anchor
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines: list[str] = []
        self.ready = threading.Event()

    @property
    def name(self) -> str:
        return f"host-{self.index}"

    def port(self, offset: int) -> int:
        return self.anchor + 100 * self.index + offset

    @property
    def rest_url(self) -> str:
        return f"http://{self.address}:{self.port(0)}"

    def argv(self) -> list[str]:
        return [
            *self.wrap,
            sys.executable,
            "-m",
            "engine",
            "run",
            "--config",
            str(self.config),
            "--instance",
            str(self.index),
            "--port",
            str(self.anchor),
            "--data-dir",
            str(self.data_dir),
            "--quiet",
        ]

    def start(self, timeout: float = 180.0) -> float:
        """Start the supervisor; seconds until it printed its ready line."""
        t0 = time.monotonic()
        self.lines = []
        self.ready.clear()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.home / "engine.log", "ab")  # the pump thread closes it
        env = self.env
        if self.address != "127.0.0.1":
            env = dict(env, AGENTMEMORY_REST_HOST=self.address)
        self.proc = subprocess.Popen(
            self.argv(),
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        threading.Thread(target=self._pump, args=(self.proc, log), daemon=True).start()
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = "".join(self.lines[-30:])
                self.kill()
                raise RuntimeError(f"{self.name} did not start:\n{tail}")
        return time.monotonic() - t0

    def _pump(self, proc: subprocess.Popen[bytes], log: object) -> None:
        assert proc.stderr is not None
        with log:  # type: ignore[attr-defined]
            for raw in proc.stderr:
                log.write(raw)  # type: ignore[attr-defined]
                line = raw.decode(errors="replace")
                if len(self.lines) < 2000:
                    self.lines.append(line)
                if line.startswith(READY):
                    self.ready.set()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pids(self) -> list[int]:
        if not self.running():
            return []
        assert self.proc is not None
        return process_tree(self.proc.pid)

    def worker_pids(self, module: str) -> list[int]:
        """Live worker processes of this host that run `module` (alone or with others)."""
        return [p for p in self.pids()[1:] if module in cmdline(p)]

    def kill_worker(self, module: str) -> int:
        """SIGKILL one worker process running `module`; its supervisor restarts it."""
        pids = self.worker_pids(module)
        if not pids:
            raise RuntimeError(f"{self.name} runs no {module}")
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def kill(self) -> None:
        """Every process of the host at once: frozen first, so none outlives another."""
        pids = self.pids()
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for p in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, sig)
        if self.proc is not None:
            self.proc.wait()
        deadline = time.monotonic() + 10
        while any(Path(f"/proc/{p}").exists() and _alive(p) for p in pids):
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)

    def stop(self, timeout: float = 60.0) -> None:
        """In order, as an operator would: the supervisor drains its workers."""
        if not self.running():
            return
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()


def _alive(pid: int) -> bool:
    # A killed child of ours stays a zombie until reaped: gone for our purpose.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
