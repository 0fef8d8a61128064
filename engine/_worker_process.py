"""The supervisor's child processes: one replica of a configured worker, spawned with the
worker environment, its stderr kept in a log file, ready when it prints READY_MARK, and
restarted with exponential backoff by its restart policy."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Literal

import msgspec

from engine._config import WorkerConfig

log = logging.getLogger("engine.supervisor")

READY_MARK = "ENGINE_WORKER_READY"
"""What a worker process prints on stderr once it serves (engine/_runtime.py)."""
STARTING_MARK = "ENGINE_WORKER_STARTING"
"""What a worker process prints while a long start makes progress (an upgrade of its data
in place): each one gives it `ready_timeout` more seconds (`still_starting`)."""


def still_starting() -> None:
    """Tell the supervisor this worker process is still starting and making progress (a
    data upgrade of minutes): its ready timeout counts again from now."""
    print(STARTING_MARK, file=sys.stderr, flush=True)


WorkerStateName = Literal["starting", "running", "backoff", "stopping", "stopped", "failed"]


class WorkerStatus(msgspec.Struct):
    name: str
    replica: int
    state: WorkerStateName
    pid: int | None
    restarts: int
    functions: list[str]
    started_at: float | None
    last_exit: int | None
    cpu_s: float | None = None
    rss_mb: float | None = None


_TICKS = os.sysconf("SC_CLK_TCK")


def process_usage(pid: int) -> tuple[float | None, float | None]:
    """CPU seconds (user + system) and resident memory in MB of a live process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / _TICKS
        rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        return round(cpu, 2), round(rss, 1)
    except (OSError, IndexError, ValueError):
        return None, None


class ManagedWorker:
    """One replica of a configured worker, restarted with exponential backoff."""

    def __init__(
        self,
        cfg: WorkerConfig,
        replica: int,
        env: dict[str, str],
        log_dir: Path,
        echo: bool,
        lifeline: int = -1,
    ) -> None:
        self.lifeline = lifeline
        self.cfg = cfg
        self.replica = replica
        self.env = env
        self.log_path = log_dir / f"{cfg.name}.{replica}.log"
        self.echo = echo
        self.proc: asyncio.subprocess.Process | None = None
        self.state: WorkerStateName = "starting"
        self.restarts = 0
        self.functions: list[str] = []
        self.started_at: float | None = None
        self.last_exit: int | None = None
        self.ready = asyncio.Event()
        self.progressed = asyncio.Event()
        """Set by each STARTING_MARK the process prints."""
        self._stopping = False
        self._wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @property
    def label(self) -> str:
        return f"{self.cfg.name}.{self.replica}"

    def status(self) -> WorkerStatus:
        pid = self.proc.pid if self.proc and self.proc.returncode is None else None
        cpu, rss = process_usage(pid) if pid else (None, None)
        return WorkerStatus(
            self.cfg.name,
            self.replica,
            self.state,
            pid,
            self.restarts,
            self.functions,
            self.started_at,
            self.last_exit,
            cpu,
            rss,
        )

    async def _spawn(self) -> None:
        self.state = "starting"
        self.ready.clear()
        self.progressed.clear()
        self.functions = []
        self.proc = await asyncio.create_subprocess_exec(
            *self.cfg.argv(),
            env=self.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # Ctrl-C reaches the supervisor, which stops workers in order
            preexec_fn=(lambda: os.nice(self.cfg.nice)) if self.cfg.nice > 0 else None,
            pass_fds=(self.lifeline,) if self.lifeline >= 0 else (),
        )
        self.started_at = time.time()
        asyncio.get_running_loop().create_task(self._pump(self.proc))

    async def _pump(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        with open(self.log_path, "ab") as out:  # noqa: ASYNC230 - local append-only log
            async for raw in proc.stderr:
                out.write(raw)
                out.flush()
                line = raw.decode(errors="replace").rstrip()
                if line.startswith(STARTING_MARK):
                    self.progressed.set()
                elif line.startswith(READY_MARK):
                    parts = line.split()
                    self.functions = parts[3].split(",") if len(parts) > 3 and parts[3] else []
                    self.state = "running"
                    self.ready.set()
                elif self.echo:
                    print(f"[{self.label}] {line}", file=sys.stderr, flush=True)

    async def supervise(self) -> None:
        policy = self.cfg.restart
        backoff = policy.backoff_initial
        while not self._stopping:
            t0 = time.monotonic()
            await self._spawn()
            assert self.proc is not None
            if not await self.until_ready_or_exit(self.cfg.ready_timeout):
                log.error(
                    "%s not ready after %.0fs without progress; killing it",
                    self.label,
                    self.cfg.ready_timeout,
                )
                self.proc.kill()
            rc = await self.proc.wait()
            self.last_exit = rc
            if self._stopping:
                break
            up = time.monotonic() - t0
            if up >= policy.reset_after:
                backoff = policy.backoff_initial
            if policy.policy == "never" or (policy.policy == "on-failure" and rc == 0):
                self.state = "stopped" if rc == 0 else "failed"
                log.warning("%s exited (code %s); restart policy %s", self.label, rc, policy.policy)
                return
            self.state = "backoff"
            self.restarts += 1
            log.warning(
                "%s exited (code %s) after %.1fs; restart %d in %.2fs",
                self.label,
                rc,
                up,
                self.restarts,
                backoff,
            )
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), backoff)
            backoff = min(backoff * 2, policy.backoff_max)
        self.state = "stopped"

    async def until_ready_or_exit(self, timeout: float) -> bool:
        """Wait until the process is ready or exits: False when `timeout` seconds passed
        without either and without a progress mark (each mark starts the count again)."""
        assert self.proc is not None
        ready = asyncio.ensure_future(self.ready.wait())
        exited = asyncio.ensure_future(self.proc.wait())
        try:
            while True:
                self.progressed.clear()
                progressed = asyncio.ensure_future(self.progressed.wait())
                done, _ = await asyncio.wait(
                    {ready, exited, progressed},
                    timeout=timeout,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                progressed.cancel()
                if ready in done or exited in done:
                    return True
                if not done:
                    return False
        finally:
            ready.cancel()
            exited.cancel()

    async def until_ready(self, timeout: float) -> bool:
        """Wait until ready (across restarts): False when `timeout` seconds passed without
        it and without a progress mark."""
        while not self.ready.is_set():
            self.progressed.clear()
            waits = {
                asyncio.ensure_future(self.ready.wait()),
                asyncio.ensure_future(self.progressed.wait()),
            }
            done, pending = await asyncio.wait(
                waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for t in pending:
                t.cancel()
            if not done:
                return False
        return True

    async def stop(self, timeout: float) -> None:
        self._stopping = True
        self._wake.set()
        self.state = "stopping"
        p = self.proc
        if p is not None and p.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(p.wait(), timeout)
            except TimeoutError:
                log.error("%s did not drain in %.0fs; killing it", self.label, timeout)
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
                await p.wait()
        if self.task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self.task, 5)
        self.state = "stopped"
