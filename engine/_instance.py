"""One engine instance on this machine: its data dir, lock and pidfile."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from engine._paths import Layout, Ports, current_layout


class InstanceBusy(RuntimeError):
    pass


@dataclass
class Instance:
    number: int
    data_dir: Path
    ports: Ports
    layout: Layout

    @classmethod
    def resolve(
        cls,
        instance: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        port: int | None = None,
        layout: Layout | None = None,
    ) -> Instance:
        """Instance `instance` (default `<PREFIX>_INSTANCE`, else 0) of `layout` (default
        this process's): its data dir and port block, unless given."""
        lay = layout or current_layout()
        number = lay.default_instance() if instance is None else instance
        dd = Path(data_dir).expanduser() if data_dir else lay.data_dir(number)
        return cls(number, dd.resolve(), lay.ports_for(number, port), lay)

    def flags(self) -> str:
        """The command-line options that name this instance again (`--instance K`, and
        `--data-dir` / `--port` when they are not the instance's defaults)."""
        out = [f"--instance {self.number}"]
        if self.data_dir != self.layout.data_dir(self.number).resolve():
            out.append(f"--data-dir {shlex.quote(str(self.data_dir))}")
        if self.ports != self.layout.ports_for(self.number):
            out.append(f"--port {self.ports.anchor - 100 * self.number}")
        return " ".join(out)

    @property
    def pidfile(self) -> Path:
        return self.data_dir / "engine.pid"

    @property
    def lockfile(self) -> Path:
        return self.data_dir / "engine.lock"

    @property
    def credentials(self) -> Path:
        return self.data_dir / "nats" / "credentials.json"

    @property
    def logs(self) -> Path:
        return self.data_dir / "logs"

    def read_pidfile(self) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads(self.pidfile.read_text())
            return data
        except (FileNotFoundError, ValueError):
            return None

    def is_locked(self) -> bool:
        """True while a supervisor holds this instance (its lock dies with its process)."""
        try:
            fh = open(self.lockfile)
        except FileNotFoundError:
            return False
        with fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
            return False

    def running_pid(self) -> int | None:
        info = self.read_pidfile()
        if not info or not self.is_locked():
            return None
        pid = int(info.get("pid", 0))
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return None
        return pid


class InstanceLock:
    """An exclusive flock held for the life of the supervisor; the OS frees it on crash."""

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        self._fh: IO[str] | None = None

    def acquire(self, info: dict[str, Any]) -> None:
        self.inst.data_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.inst.data_dir, 0o700)
        fh = open(self.inst.lockfile, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            prev = self.inst.read_pidfile() or {}
            flags = self.inst.flags()
            raise InstanceBusy(
                f"engine instance {self.inst.number} is already running "
                f"(pid {prev.get('pid', '?')}, data dir {self.inst.data_dir}); "
                f"stop it with `python -m engine stop {flags}` "
                f"or start another with --instance N"
            ) from None
        self._fh = fh
        tmp = self.inst.pidfile.with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        os.replace(tmp, self.inst.pidfile)
        self._note_in_registry()

    def _forget_in_registry(self) -> None:
        path = self.inst.layout.registry_dir() / f"{self.inst.number}.json"
        try:
            if json.loads(path.read_text()).get("data_dir") == str(self.inst.data_dir):
                path.unlink()
        except (OSError, ValueError, AttributeError):
            pass

    def _note_in_registry(self) -> None:
        folder = self.inst.layout.registry_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = folder / f"{self.inst.number}.json"
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"data_dir": str(self.inst.data_dir)}))
            os.replace(tmp, path)
        except OSError:
            pass  # a convenience for tools: never a reason not to start

    def release(self) -> None:
        if self._fh is None:
            return
        try:
            self.inst.pidfile.unlink(missing_ok=True)
            self._forget_in_registry()
        finally:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None
