"""The engine process: the embedded nats-server, provisioning, and supervised worker
processes, started in order and stopped in reverse. Each part lives in its own module:
engine/_bus_setup.py (ports, the embedded server), engine/_provision.py (what the config
declares), engine/_worker_process.py (one supervised child), engine/_worker_env.py (what a
worker is told through its environment)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import time
from pathlib import Path
from typing import Any, cast

import msgspec
from nats.aio.client import Client as NATS

from engine._bus_setup import StartError, check_ports, embedded_server, kill_stale_server
from engine._client import Client
from engine._config import EngineConfig, WorkerConfig, start_order
from engine._connect import connect
from engine._context import Context
from engine._instance import Instance, InstanceLock
from engine._nats_server import NatsServer, NatsServerError, ensure_credentials
from engine._provision import provision
from engine._store_guard import StoreGuard, StoreStatus
from engine._worker import Worker
from engine._worker_env import worker_env
from engine._worker_process import ManagedWorker, WorkerStatus
from engine.disk import parse_size

log = logging.getLogger("engine.supervisor")


class EngineStatus(msgspec.Struct, kw_only=True):
    instance: int
    pid: int
    data_dir: str
    nats_url: str
    embedded_nats: bool
    ports: dict[str, int]
    started_at: float
    workers: list[WorkerStatus]
    store: StoreStatus | None = None
    """The embedded server's store: free space, a write error, what was repaired at start."""


class Supervisor:
    def __init__(
        self,
        cfg: EngineConfig,
        inst: Instance,
        *,
        echo_logs: bool = True,
        config_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.cfg = cfg
        self.inst = inst
        self.config_path = str(Path(config_path).resolve()) if config_path else None
        self.echo_logs = echo_logs
        self.server: NatsServer | None = None
        self.store_guard: StoreGuard | None = None
        self.nc: NATS | None = None
        self.url = ""
        self.credentials: str | None = None
        self.workers: list[ManagedWorker] = []
        self.started_at = time.time()
        self.boot_id = secrets.token_hex(8)
        """One per start of the instance, shared by every worker (ENGINE_BOOT_ID): replicas
        of a worker report the same boot, a restart of the instance a new one."""
        self.stop_requested = asyncio.Event()
        self._lock = InstanceLock(inst)
        # Workers inherit the read end; only this process holds the write end, so when it
        # is gone (even SIGKILLed) every worker reads end-of-file and drains.
        self._lifeline_r, self._lifeline_w = os.pipe()
        self._api = Worker("engine", description="the supervisor: status and stop")

    # ---- start -------------------------------------------------------------------
    async def start(self) -> None:
        # The lock first: a second start of a running instance must say so, not blame a port.
        self._lock.acquire(
            {
                "pid": os.getpid(),
                "instance": self.inst.number,
                "ports": self.inst.ports.as_dict(),
                "data_dir": str(self.inst.data_dir),
            }
        )
        try:
            check_ports(self.cfg, self.inst)
            await self._start_bus()
            assert self.nc is not None
            await provision(Client(self.nc, replicas=self.cfg.nats.replicas), self.cfg)
            await self._serve_api()
            self.inst.logs.mkdir(parents=True, exist_ok=True)
            for wcfg in start_order([w for w in self.cfg.workers if w.enabled]):
                group = [
                    ManagedWorker(
                        wcfg,
                        i,
                        self._worker_env(wcfg, i),
                        self.inst.logs,
                        self.echo_logs,
                        self._lifeline_r,
                    )
                    for i in range(wcfg.replicas)
                ]
                for mw in group:
                    mw.task = asyncio.get_running_loop().create_task(mw.supervise())
                self.workers.extend(group)
                # A replica that reports progress (an upgrade in place) gets more time.
                ready = await asyncio.gather(*(mw.until_ready(wcfg.ready_timeout) for mw in group))
                if not all(ready):
                    raise StartError(
                        f"worker {wcfg.name} did not become ready in {wcfg.ready_timeout:.0f}s; "
                        f"see {self.inst.logs / (wcfg.name + '.0.log')}"
                    )
            self._write_pidfile()
        except BaseException:
            await self.shutdown()
            raise

    async def _start_bus(self) -> None:
        if self.cfg.nats.url:
            self.url = self.cfg.nats.url
            self.credentials = self.cfg.nats.credentials
        else:
            user, password = ensure_credentials(self.inst.credentials)
            kill_stale_server(self.inst)
            self.server = embedded_server(self.cfg, self.inst, user, password)
            (self.inst.data_dir / "logs").mkdir(parents=True, exist_ok=True)
            self.store_guard = StoreGuard(self.server, parse_size(self.cfg.nats.min_free_disk))
            self.store_guard.before_start()
            try:
                await asyncio.to_thread(self.server.start)
            except NatsServerError as exc:
                raise StartError(str(exc)) from None
            self.url = self.server.url
            self.credentials = str(self.inst.credentials)
        self.nc = await connect(self.url, self.credentials, name="engine")
        if self.store_guard is not None:
            await self.store_guard.after_ready(self.nc)
            self.store_guard.start()

    async def _serve_api(self) -> None:
        assert self.nc is not None
        sup = self

        @self._api.function("engine::status", description="workers, pids, restarts, ports")
        async def status(req: None, ctx: Context) -> EngineStatus:
            return sup.status()

        @self._api.function("engine::stop", description="stop the engine in order")
        async def stop(req: None, ctx: Context) -> dict[str, bool]:
            sup.stop_requested.set()
            return {"stopping": True}

        # Its own Client at the instance's replicas: the supervisor's environment has no
        # ENGINE_REPLICAS (it sets it for workers), and the api worker opens the triggers
        # bucket first on a fresh cluster.
        await self._api.start(self.nc, Client(self.nc, replicas=self.cfg.nats.replicas))

    def _worker_env(self, w: WorkerConfig, replica: int) -> dict[str, str]:
        return worker_env(
            self.cfg,
            self.inst,
            w,
            replica,
            url=self.url,
            credentials=self.credentials,
            boot_id=self.boot_id,
            lifeline=self._lifeline_r,
            config_path=self.config_path,
        )

    def _write_pidfile(self) -> None:
        info = {
            "pid": os.getpid(),
            "instance": self.inst.number,
            "ports": self.inst.ports.as_dict(),
            "data_dir": str(self.inst.data_dir),
            "nats_url": self.url,
            "nats_pid": self.server.proc.pid if self.server and self.server.proc else None,
        }
        tmp = self.inst.pidfile.with_suffix(".tmp")
        tmp.write_text(json.dumps(info))
        os.replace(tmp, self.inst.pidfile)

    # ---- running -----------------------------------------------------------------
    def functions(self) -> list[str]:
        """Every function id the instance serves: its workers' and the supervisor's own
        (engine::status, engine::stop), as the console's Functions page lists them."""
        return sorted({f for w in self.workers for f in w.functions} | set(self._api.functions))

    def status(self) -> EngineStatus:
        return EngineStatus(
            instance=self.inst.number,
            pid=os.getpid(),
            data_dir=str(self.inst.data_dir),
            nats_url=self.url,
            embedded_nats=self.server is not None,
            ports=self.inst.ports.as_dict(),
            started_at=self.started_at,
            workers=[w.status() for w in self.workers],
            store=self.store_guard.status() if self.store_guard is not None else None,
        )

    async def run_until_stopped(self) -> None:
        await self.stop_requested.wait()
        await self.shutdown()

    # ---- stop --------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Triggers and workers stop in reverse start order (each drains), nats-server last."""
        log.info("engine stopping")
        by_name: dict[str, list[ManagedWorker]] = {}
        for w in self.workers:
            by_name.setdefault(w.cfg.name, []).append(w)
        for name in reversed(list(by_name)):
            await asyncio.gather(*(w.stop(self.cfg.stop_timeout) for w in by_name[name]))
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await self._api.drain()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.nc.drain(), 5)
            self.nc = None
        if self.store_guard is not None:
            await self.store_guard.stop()
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
            if self.store_guard is not None and not self.server.running():
                self.store_guard.mark_clean()
        self._lock.release()
        log.info("engine stopped")


def status_json(status: EngineStatus) -> dict[str, Any]:
    # A Struct's builtins are a dict of its fields (nested Structs as dicts too).
    return cast("dict[str, Any]", msgspec.to_builtins(status))
