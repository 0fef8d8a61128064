"""The engine process: embedded nats-server, provisioning, and supervised worker processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any, Literal, cast

import msgspec
from nats.aio.client import Client as NATS
from nats.js.api import DiscardPolicy, RetentionPolicy

from engine._client import Client
from engine._config import EngineConfig, WorkerConfig, start_order
from engine._connect import ENV_CREDENTIALS, ENV_REPLICAS, ENV_URL, connect
from engine._context import Context
from engine._instance import Instance, InstanceLock
from engine._logs import LOGS_STREAM, LOGS_SUBJECT
from engine._nats_server import (
    LeafNodes,
    LeafRemote,
    LeafTls,
    NatsServer,
    NatsServerError,
    ensure_credentials,
    leaf_allowlist,
)
from engine._paths import ENGINE_PORTS, ENV_CONFIG
from engine._store_guard import StoreGuard, StoreStatus
from engine._tracing import TRACES_STREAM, TRACES_SUBJECT
from engine._triggers import TRIGGERS_BUCKET, TriggerSpec
from engine._worker import Worker
from engine.disk import ENV_MIN_FREE, parse_size

log = logging.getLogger("engine.supervisor")

READY_MARK = "ENGINE_WORKER_READY"
WorkerStateName = Literal["starting", "running", "backoff", "stopping", "stopped", "failed"]


class StartError(RuntimeError):
    """The engine cannot start; the message says what to do."""


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


_TICKS = os.sysconf("SC_CLK_TCK")


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a listener could bind `port` now. SO_REUSEADDR, as every server here sets it:
    sockets left in TIME-WAIT by closed client connections do not count as in use (without
    it a restart was refused for about a minute after clients had closed)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


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
                if line.startswith(READY_MARK):
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
            try:
                await asyncio.wait_for(self._until_ready_or_exit(), self.cfg.ready_timeout)
            except TimeoutError:
                log.error(
                    "%s not ready after %.0fs; killing it", self.label, self.cfg.ready_timeout
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

    async def _until_ready_or_exit(self) -> None:
        assert self.proc is not None
        ready = asyncio.ensure_future(self.ready.wait())
        exited = asyncio.ensure_future(self.proc.wait())
        await asyncio.wait({ready, exited}, return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        exited.cancel()

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
            self._check_ports()
            await self._start_bus()
            await self._provision()
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
                try:
                    await asyncio.wait_for(
                        asyncio.gather(*(mw.ready.wait() for mw in group)), wcfg.ready_timeout
                    )
                except TimeoutError:
                    raise StartError(
                        f"worker {wcfg.name} did not become ready in {wcfg.ready_timeout:.0f}s; "
                        f"see {self.inst.logs / (wcfg.name + '.0.log')}"
                    ) from None
            self._write_pidfile()
        except BaseException:
            await self.shutdown()
            raise

    def _check_ports(self) -> None:
        named = self.inst.ports.as_dict()
        if self.cfg.nats.url is not None:
            for p in ENGINE_PORTS:
                named.pop(p, None)
        for what, port in named.items():
            if not port_is_free(port):
                raise StartError(
                    f"port {port} ({what}) on 127.0.0.1 is already in use; stop what holds "
                    f"it (`ss -ltnp 'sport = :{port}'`) or move the block with --port/--instance"
                )

    async def _start_bus(self) -> None:
        if self.cfg.nats.url:
            self.url = self.cfg.nats.url
            self.credentials = self.cfg.nats.credentials
        else:
            user, password = ensure_credentials(self.inst.credentials)
            self._kill_stale_server()
            self.server = NatsServer(
                store_dir=self.inst.data_dir / "nats",
                port=self.inst.ports.nats,
                monitor_port=self.inst.ports.nats_monitor,
                user=user,
                password=password,
                server_name="-".join(
                    [self.inst.layout.name, str(self.inst.number)]
                    + ([self.cfg.nats.domain] if self.cfg.nats.domain else [])
                ),
                log_file=self.inst.data_dir / "logs" / "nats-server.log",
                max_file_store=self.cfg.nats.max_file_store,
                max_memory_store=self.cfg.nats.max_memory_store,
                memory_limit=self.cfg.nats.memory_limit,
                sync=self.cfg.nats.sync,
                domain=self.cfg.nats.domain,
                leafnodes=self._leafnodes(),
            )
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

    def _leafnodes(self) -> LeafNodes | None:
        cfg = self.cfg.nats.leafnodes
        if not cfg.active:
            return None

        def tls(t: Any) -> LeafTls | None:
            return LeafTls(t.cert_file, t.key_file, t.ca_file, t.verify) if t else None

        leaf = LeafNodes(
            listen=cfg.listen,
            allow=leaf_allowlist(cfg.share.streams, cfg.share.subjects),
            tls=tls(cfg.tls),
        )
        if cfg.listen:
            path = self.inst.data_dir / "nats" / "leaf-credentials.json"
            leaf.user, leaf.password = ensure_credentials(path, user="leaf")
            log.info("leaf link: peers connect to %s with %s", cfg.listen, path)
        for r in cfg.remotes:
            remote = LeafRemote(url=r.url, tls=tls(r.tls))
            if r.credentials:
                creds = Path(r.credentials).expanduser()
                if creds.suffix == ".creds":
                    remote.creds_file = str(creds)
                else:
                    try:
                        data = json.loads(creds.read_text())
                        remote.user, remote.password = data["user"], data["password"]
                    except (OSError, ValueError, KeyError) as exc:
                        raise StartError(
                            f"nats.leafnodes.remotes: cannot read credentials {creds}: {exc}"
                        ) from None
            leaf.remotes.append(remote)
        return leaf

    def _kill_stale_server(self) -> None:
        # A supervisor killed with SIGKILL leaves its nats-server running on our store.
        prev = self.inst.read_pidfile() or {}
        pid = prev.get("nats_pid")
        if not pid:
            return
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return
        if b"nats-server" in cmd and str(self.inst.data_dir).encode() in cmd:
            log.warning("stopping stale nats-server (pid %s) left by a previous run", pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            for _ in range(100):
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.05)

    async def _provision(self) -> None:
        assert self.nc is not None
        reps = self.cfg.nats.replicas
        client = Client(self.nc, replicas=reps)
        # Declared here, so made as declared or brought to it (engine/_reconcile.py): a
        # config changed between runs changes the stored stream or bucket, or the start
        # fails saying what JetStream cannot change in place.
        for b in self.cfg.buckets:
            await client.bucket(
                b.name,
                history=b.history,
                ttl=b.ttl or 0,
                replicas=reps,
                max_bytes=b.max_bytes or -1,
            )
        for s in self.cfg.streams:
            await client.stream(
                s.name,
                subjects=s.subjects,
                retention=RetentionPolicy(s.retention),
                max_age=s.max_age or 0,
                max_bytes=s.max_bytes or -1,
                max_msgs=s.max_msgs or -1,
                num_replicas=reps,
                allow_msg_schedules=s.allow_msg_schedules,
            ).ensure()
        # Bounded streams the console reads: spans and log records of every process.
        for name, subject, age, size in (
            (TRACES_STREAM, f"{TRACES_SUBJECT}.>", 24 * 3600, 256 * 2**20),
            (LOGS_STREAM, f"{LOGS_SUBJECT}.>", 24 * 3600, 128 * 2**20),
        ):
            await client.stream(
                name,
                subjects=[subject],
                max_age=age,
                max_bytes=size,
                num_replicas=reps,
                discard=DiscardPolicy.OLD,
            ).ensure()
        if self.cfg.triggers:
            store = await client.bucket(TRIGGERS_BUCKET, history=5, replicas=reps)
            for t in self.cfg.triggers:
                spec = TriggerSpec(
                    kind=t.kind,
                    function_id=t.function_id,
                    config=t.config,
                    id=t.id,
                    worker="config",
                )
                await store.put(spec.key, spec)

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
        lay = self.inst.layout
        env = dict(os.environ)
        env.update(self.cfg.env)
        env.update(
            {
                ENV_URL: self.url,
                # Every bucket, stream and object store a worker creates gets the instance's
                # replicas: on a cluster (replicas 3) nothing lives on one node only.
                ENV_REPLICAS: str(self.cfg.nats.replicas),
                "ENGINE_WORKER_NAME": w.name,
                "ENGINE_WORKER_REPLICA": str(replica),
                "ENGINE_INSTANCE": str(self.inst.number),
                "ENGINE_DATA_DIR": str(self.inst.data_dir),
                ENV_MIN_FREE: str(parse_size(self.cfg.nats.min_free_disk)),
                "ENGINE_SUPERVISOR_PID": str(os.getpid()),
                "ENGINE_BOOT_ID": self.boot_id,
                "ENGINE_SUPERVISOR_FD": str(self._lifeline_r),
                "ENGINE_NAMESPACE": lay.name,
                # The layout's own names (config/engine.yaml), so workers find the instance
                # they belong to with the settings a user would set.
                lay.env("DATA_DIR"): str(self.inst.data_dir),
                lay.env("INSTANCE"): str(self.inst.number),
            }
        )
        if self.config_path:
            env[ENV_CONFIG] = self.config_path
        for name, port in self.inst.ports.as_dict().items():
            env[f"ENGINE_PORT_{name.upper()}"] = str(port)
            env[lay.port_env(name)] = str(port)
        if self.credentials:
            env[ENV_CREDENTIALS] = self.credentials
        if self.cfg.nats.domain:
            env["ENGINE_NATS_DOMAIN"] = self.cfg.nats.domain
        env.update(w.env)
        return env

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
