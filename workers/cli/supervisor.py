"""Starting, stopping and inspecting the engine supervisor (`python -m engine …`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engine.settings import environ
from functions.kernel.settings import kernel_settings
from workers.cli.target import CHECKOUT, ROOT, ServiceError, Target
from workers.hooks import SCRIPTS

READY_LINE = "engine ready:"


class StartFailed(Exception):
    pass


def engine_command(target: Target, config: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "engine",
        "run",
        "--config",
        str(config),
        *target.engine_args(),
        *extra,
    ]


def _env() -> dict[str, str]:
    env = environ()
    if CHECKOUT:  # the engine and its workers import the same tree as this process
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def start_detached(target: Target, config: Path, timeout: float = 60.0) -> int:
    """Start the supervisor in its own session; return its pid once it reports ready."""
    logs = target.instance.logs
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / "engine.out"
    offset = log_path.stat().st_size if log_path.exists() else 0
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            engine_command(target, config, "--quiet"),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            cwd=ROOT,
            env=_env(),
            start_new_session=True,
        )
    wait_ready(proc, log_path, offset, timeout)
    return proc.pid


def wait_ready(proc: subprocess.Popen[Any], log_path: Path, offset: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = _tail(log_path, offset)
        if READY_LINE in text:
            return
        if proc.poll() is not None:
            errors = [ln for ln in text.splitlines() if "error" in ln.lower()] or text.splitlines()
            raise StartFailed("\n".join(errors[-5:]) or f"engine exited with {proc.returncode}")
        time.sleep(0.1)
    raise StartFailed(f"engine not ready after {timeout:.0f}s; see {log_path}")


def _tail(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def run_foreground(target: Target, config: Path, on_ready: Any) -> int:
    """Run the supervisor attached to this terminal; `on_ready()` once it serves."""
    # Ctrl-C stops it even when this process was started with SIGINT ignored, as a
    # non-interactive shell starts its background jobs (`make test &`, nohup): Python then
    # leaves SIGINT ignored and the supervisor would never hear it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # --quiet: worker logs stay in the data dir's logs/; the terminal gets the engine's
    # own lines (errors, restarts) and the readiness panel in place of its ready line.
    proc = subprocess.Popen(
        engine_command(target, config, "--quiet"),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=_env(),
    )
    assert proc.stderr is not None
    try:
        for raw in proc.stderr:
            line = raw.decode(errors="replace")
            if READY_LINE in line:
                on_ready()
            else:
                sys.stderr.write(line)
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGTERM)
        return proc.wait()


def stop(target: Target, timeout: float = 60.0) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "engine", "stop", *target.engine_args(), "--timeout", str(timeout)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=_env())
    return res.returncode, (res.stdout + res.stderr).strip()


def engine_status(target: Target) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "engine", "status", "--json", *target.engine_args()]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=30)
    try:
        data: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
        return data
    except (ValueError, IndexError):
        return {"running": False, "error": res.stderr.strip()[-500:]}


def counts(target: Target) -> dict[str, int] | None:
    """What the store holds, from the export document (None when the service is away)."""
    try:
        with target.client(timeout=10) as rest:
            data = rest.call("GET", "/agentmemory/export")
    except ServiceError:
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, int] = {}
    for key in ("sessions", "observations", "memories", "summaries"):
        value = data.get(key)
        if isinstance(value, dict):  # observations come grouped by session
            out[key] = sum(len(v) for v in value.values() if isinstance(v, list))
        elif isinstance(value, list):
            out[key] = len(value)
    if isinstance(data.get("totalSessions"), int):
        out["sessions"] = data["totalSessions"]
    return out


def team(target: Target) -> dict[str, Any] | None:
    """This instance's team link as `mesh/peers` tells it (None when the service is away)."""
    try:
        with target.client(timeout=5) as rest:
            data = rest.call("GET", "/agentmemory/mesh/peers")
    except ServiceError:
        return None
    return data if isinstance(data, dict) else None


def wait_serving(target: Target, timeout: float = 15.0) -> bool:
    """The http trigger learns routes from KV a moment after the engine reports ready."""
    deadline = time.monotonic() + timeout
    with target.client(timeout=2) as rest:
        while time.monotonic() < deadline:
            if rest.alive():
                return True
            time.sleep(0.1)
    return False


def drain_spool(target: Target) -> None:
    """Replay hook events spooled while the server was down, in a detached process."""
    env = environ(AGENTMEMORY_URL=target.url)
    subprocess.Popen(
        [sys.executable, "-S", str(SCRIPTS["claude-code"]), "--drain"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )


def embedding_mode() -> str:
    """As the search workers read it (`EMBEDDING_PROVIDER`, process env or ~/.agentmemory/.env)."""
    mode = kernel_settings().embedding_provider
    if mode == "none":
        return "none (keyless: BM25 + graph)"
    if mode == "openai":
        return f"openai-compatible ({kernel_settings().embedding_model})"
    return mode
