"""The suite's scaffolding in one place, loaded as a pytest plugin by tests/conftest.py.

- Ports: `free_port` and `free_port_block`, from a slice of 20000-31999 that belongs to this
  test process alone (parallel workers never hand out the same port).
- Waiting: `eventually` (an async probe) and `wait_until` (a sync one), never a sleep.
- A real nats-server per test (`nats_server`, `client`), worker processes on it (`spawn`),
  the memory worker and the http trigger in front of it (`memory_worker`, `http_trigger`,
  `rest`), the memory store (`store`) and observations stored as the write path stores
  them (`add_observations`), a service's replies as the wire carries them (`wire`).
- The engine as a process (`EngineProcess`, `engine_factory`) and the product stack as
  `make run` starts it (`Stack`, `start_stack`).
- Headless Chromium (`needs_chromium`, `chromium`, the `browser` fixture).
- The `unit` marker: a test that needs no server. `make quick` runs only these; one that
  starts a nats-server, an engine or worker process, a browser or node fails, naming it.
- Parallel runs (pytest-xdist, `-n N --dist loadscope`): a test module is one unit of work
  (its module fixtures start once), a folder whose conftest shares a package-scoped stack is
  one, and units holding a `slow` test are handed out first.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import msgspec
import pytest
import yaml

from engine import Client, connect
from engine.server import NatsServer
from functions.kernel.records import Observation
from functions.kernel.store import MemoryStore
from workers.viewer import tokens

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

# ---------------------------------------------------------------------------------------
# Ports

# Below Linux's ephemeral range (32768-60999): what the kernel hands out for port 0 and for
# outgoing connections never lands here, so a port checked free stays free until used.
_PORT_LOW, _PORT_HIGH = 20000, 32000
_port_cursor: list[int] = []


def _port_slice() -> range:
    """This process's share of the port range: one slice per xdist worker."""
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    width = (_PORT_HIGH - _PORT_LOW) // max(count, 1)
    low = _PORT_LOW + index * width
    return range(low, low + width)


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(size: int = 6) -> int:
    """The first of `size` consecutive loopback ports that are free now, from this process's
    slice, none handed out before by this process (a test may take two blocks before it
    starts anything on the first)."""
    span = _port_slice()
    if not _port_cursor:
        _port_cursor.append(random.randrange(span.start, span.stop - size))
    for _ in range(len(span) // size):
        anchor = _port_cursor[0]
        if anchor + size > span.stop:
            anchor = span.start
        _port_cursor[0] = anchor + size
        if all(_bindable(p) for p in range(anchor, anchor + size)):
            return anchor
    raise RuntimeError(f"no {size} free ports in {span}")


def free_port() -> int:
    return free_port_block(1)


# ---------------------------------------------------------------------------------------
# Waiting


async def eventually(
    probe: Callable[[], Awaitable[T]],
    *,
    timeout: float = 10.0,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """Await `probe` until it returns a truthy value without raising; return that value."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = await probe()
            if value:
                return value
        except Exception as exc:
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s (last error: {last!r})")
        await asyncio.sleep(interval)


def wait_until(
    probe: Callable[[], T],
    *,
    timeout: float = 10.0,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """`eventually` for a plain function (a sync test, a fixture, a browser page)."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = probe()
            if value:
                return value
        except Exception as exc:
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s (last error: {last!r})")
        time.sleep(interval)


# ---------------------------------------------------------------------------------------
# The `unit` marker

UNIT = "unit"
# What a unit test may not start: the servers and clients the rest of the suite drives
# (`python -m engine run`, `engine.host` and worker modules count; `engine status` does not).
_SERVER_PROGRAMS = {"nats-server", "chromium", "node", "npm", "npx", "agentmemory-engine"}
_guard: dict[str, str | None] = {"test": None, "started": None}


def _server_in(argv: list[str]) -> str | None:
    """What `argv` starts, when it is a server a unit test must not need."""
    if not argv:
        return None
    prog = Path(argv[0]).name
    if prog in _SERVER_PROGRAMS:
        return prog
    if prog.startswith("python") and "-m" in argv[1:]:
        module, *rest = argv[argv.index("-m") + 1 :] or [""]
        if module == "engine" and rest[:1] == ["run"]:
            return "python -m engine run"
        if module == "engine.host" or (module.startswith("workers.") and module != "workers.cli"):
            return f"python -m {module}"
    return None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _guard["test"] is None or event != "subprocess.Popen":
        return
    argv = [str(a) for a in (args[1] if isinstance(args[1], list | tuple) else [args[1]])]
    started = _server_in(argv)
    if started is None:
        return
    _guard["started"] = started
    raise RuntimeError(
        f"{_guard['test']} is marked `unit` but started {started!r}: a unit test needs no "
        "server (no nats-server, engine or worker process, browser or node). Remove its "
        "`unit` marker or give it no server."
    )


sys.addaudithook(_audit)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{UNIT}: needs no server (no nats-server, engine or worker process, browser or "
        "node); `make quick` runs these alone, and one that starts a server fails",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _guarded(item):
        return (yield)


@contextlib.contextmanager
def _guarded(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker(UNIT) is None:
        yield
        return
    _guard["test"], _guard["started"] = item.nodeid, None
    try:
        yield
    finally:
        started, _guard["test"] = _guard["started"], None
    if started is not None:  # also when the test caught the error
        pytest.fail(f"marked `unit` but started {started!r}", pytrace=False)


# ---------------------------------------------------------------------------------------
# Parallel runs (pytest-xdist, `-n N --dist loadscope`)

TESTS = Path(__file__).resolve().parent
# Folders whose conftest shares a package-scoped fixture (one stack for the folder): their
# tests are one unit of work, so the stack starts once.
_SHARED_FOLDERS = sorted(
    f"tests/{c.parent.relative_to(TESTS).as_posix()}/"
    for c in TESTS.glob("*/conftest.py")
    if 'scope="package"' in c.read_text()
)


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its module (module fixtures start once), or its
    folder when the folder shares a stack; the bench modules (`*_bench.py`, a cluster under
    load each) are one unit, so two never load the machine at once."""
    module = nodeid.split("::")[0]
    if module.endswith("_bench.py"):
        return "benches"
    return next((f for f in _SHARED_FOLDERS if module.startswith(f)), module)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadscope` by `work_unit` (xdist's own loadscope splits a folder that shares
    a stack, and its `xdist_group` does nothing on pytest 9)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ByWorkUnit(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a parallel worker: units holding a `slow` test first, the one with the longest
    declared timeout first, so that the longest start first and no worker is left alone
    with one at the end (`--no-loadscope-reorder` keeps this order; every worker sorts the
    same way)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    slow: dict[str, float] = {}
    for i in items:
        if i.get_closest_marker("slow") is not None:
            mark = i.get_closest_marker("timeout")
            declared = float(mark.args[0]) if mark and mark.args else 0.0
            unit = work_unit(i.nodeid)
            slow[unit] = max(slow.get(unit, 0.0), declared)
    items.sort(key=lambda i: -slow.get(work_unit(i.nodeid), -1.0))


# ---------------------------------------------------------------------------------------
# A real nats-server and worker processes


def _drain(stream: Any) -> None:
    for _ in stream:
        pass


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    srv = NatsServer(store_dir=tmp_path / "js").start()
    yield srv
    srv.kill()


async def close_client(nc: NATS) -> None:
    """Close a client whose server may be gone. nats-py closing while it reconnects can end
    its own close with CancelledError from the transport's wait (nats.py#806's family of
    close races); run apart, that ends the close, not the test. Any other error is raised."""
    closing = asyncio.ensure_future(nc.close())
    await asyncio.wait({closing})
    if not closing.cancelled() and (err := closing.exception()) is not None:
        raise err


@pytest.fixture
async def client(nats_server: NatsServer) -> AsyncIterator[Client]:
    nc = await connect(nats_server.url)
    yield Client(nc)
    await nc.close()


Spawn = Callable[..., "subprocess.Popen[bytes]"]


@pytest.fixture
def spawn(nats_server: NatsServer) -> Iterator[Spawn]:
    """Start `python -m <module>` on the test's server; returns once it says it serves."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(
        module: str, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        e = dict(os.environ, ENGINE_NATS_URL=nats_server.url, PYTHONPATH=str(ROOT))
        e.update(env or {})
        p = subprocess.Popen(
            [sys.executable, "-m", module, *args], env=e, cwd=ROOT, stderr=subprocess.PIPE
        )
        procs.append(p)
        assert p.stderr is not None
        for raw in p.stderr:  # wait until it serves
            if b"ENGINE_WORKER_READY" in raw:
                break
        else:
            raise RuntimeError(f"{module} exited before it was ready")
        # keep reading so a chatty worker never blocks on a full pipe
        threading.Thread(target=_drain, args=(p.stderr,), daemon=True).start()
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


# The memory worker and the REST routes in front of it.
SECRET = "memory-test-secret"
AUTH = {"Authorization": f"Bearer {SECRET}", "Content-Type": "application/json"}


@pytest.fixture
def memory_worker(spawn: Spawn, tmp_path: Path) -> Callable[..., Any]:
    """Start `python -m workers.memory` with its inbox and HOME under the test's tmp dir."""

    def start(**env: str) -> Any:
        e = {
            "AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"),
            "HOME": str(tmp_path / "home"),
            "AGENTMEMORY_SEARCH": "off",
            **env,
        }
        return spawn("workers.memory", env=e)

    return start


@pytest.fixture
def http_trigger(spawn: Spawn, tmp_path: Path) -> Callable[..., str]:
    """Start the http trigger worker on a free port; returns its base URL."""

    def start(**env: str) -> str:
        port = free_port()
        spawn(
            "workers.trigger_plugins",
            "http",
            env={
                "AGENTMEMORY_REST_PORT": str(port),
                "AGENTMEMORY_SECRET": SECRET,
                "HOME": str(tmp_path / "home"),
                "HTTP_OPENAPI_PATHS": "/openapi.json,/agentmemory/openapi.json",
                **env,
            },
        )
        return f"http://127.0.0.1:{port}"

    return start


async def rest_client(base: str, headers: dict[str, str] = AUTH) -> httpx.AsyncClient:
    """A client of the memory routes at `base`, once they answer."""
    c = httpx.AsyncClient(base_url=base, timeout=15, headers=headers)

    async def routes_ready() -> bool:
        r = await c.get("/agentmemory/capture")
        return r.status_code == 200

    await eventually(routes_ready, timeout=15, what="memory routes served")
    return c


@pytest.fixture
async def rest(memory_worker: Any, http_trigger: Any) -> AsyncIterator[httpx.AsyncClient]:
    memory_worker()
    c = await rest_client(http_trigger())
    yield c
    await c.aclose()


@pytest.fixture
async def store(client: Client) -> MemoryStore:
    return await MemoryStore(client).open()


async def add_observations(
    store: MemoryStore, observations: Iterable[Observation], *, batch: int = 100
) -> int:
    """Store new observations as the write path does (`add_observation`, `batch` at once)
    and return MEM_EVENTS' last sequence after them: what a fence or `caught_up` waits for.
    Each must be new: a duplicate fails here rather than passing unnoticed."""
    pending = list(observations)
    for lo in range(0, len(pending), batch):
        chunk = pending[lo : lo + batch]
        added = await asyncio.gather(*(store.add_observation(o) for o in chunk))
        assert all(added), [o.id for o, ok in zip(chunk, added, strict=True) if not ok]
    return (await store.events.info()).last_seq


class Wire:
    """A service whose operations answer as a bus caller reads them: the reply Struct as
    JSON builtins (camelCase), so tests check the wire shape."""

    def __init__(self, svc: Any) -> None:
        self.svc = svc

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.svc, name)
        if not inspect.iscoroutinefunction(value) or name in ("start", "stop"):
            return value

        async def call(*args: Any, **kw: Any) -> Any:
            return msgspec.to_builtins(await value(*args, **kw))

        return call


def wire(svc: Any) -> Any:
    return Wire(svc)


async def live_keys(client: Client, bucket: str) -> list[str]:
    """Keys holding a value now (the KV watcher behind Bucket.keys can race; see store.py)."""
    pre = f"$KV.{bucket}."
    info = await client.nc.jetstream().stream_info(f"KV_{bucket}", subjects_filter=f"{pre}>")
    st = await client.bucket(bucket)
    out = []
    for subject in sorted(info.state.subjects or {}):
        key = subject[len(pre) :]
        try:
            if await st.get(key) is not None:
                out.append(key)
        except Exception:  # a tombstone
            continue
    return out


async def stored_ids(client: Any) -> list[str]:
    """Ids of the observations stored now (each one's record on MEM_EVENTS), sorted."""
    from functions.kernel.observation_records import ObservationRecords
    from functions.kernel.store import events_stream

    records = await ObservationRecords(client, events_stream(client)).open()
    return sorted([o.id async for o in records.scan()])


async def stored(client: Any, obs_id: str) -> Any:
    """The stored observation `obs_id` (None: none), read as any process would."""
    from functions.kernel.observation_records import ObservationRecords
    from functions.kernel.store import events_stream

    records = await ObservationRecords(client, events_stream(client)).open()
    return await records.get(obs_id)


# ---------------------------------------------------------------------------------------
# The engine as a process

# The product's layout (config/engine.yaml): test configs without a `layout:` of their own
# get it, so their REST, console and NATS ports sit where the product puts them.
PRODUCT_LAYOUT = """
layout:
  name: agentmemory
  env_prefix: AGENTMEMORY
  anchor: 3111
  ports: [rest, streams, viewer, console, nats, nats_monitor]
"""

EXAMPLE_CONFIG = """
workers:
  - name: example
    module: workers.example
    replicas: 1
    restart: {policy: always, backoff_initial: 0.2, backoff_max: 2, reset_after: 5}
"""


class EngineProcess:
    """`python -m engine run` as a real process, on its own data dir and port block."""

    def __init__(self, tmp: Path, config: str, anchor: int | None = None) -> None:
        self.data_dir = tmp / "data"
        self.config = tmp / "engine.yaml"
        if "\nlayout:" not in "\n" + config:
            config = PRODUCT_LAYOUT + config
        self.config.write_text(config)
        self.anchor = anchor or free_port_block()
        self.proc: subprocess.Popen[bytes] | None = None
        self.lines: list[str] = []

    def args(self) -> list[str]:
        return ["--data-dir", str(self.data_dir), "--port", str(self.anchor)]

    def start(self, timeout: float = 60.0) -> EngineProcess:
        self.lines = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "run", "--config", str(self.config), *self.args()],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        ready = threading.Event()

        def pump() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace")
                self.lines.append(line)
                if line.startswith("engine ready"):
                    ready.set()

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("engine did not start:\n" + "".join(self.lines[-30:]))
        return self

    @property
    def ports(self) -> dict[str, int]:
        """The running instance's ports by name, as its pidfile records them (the layout of
        its config names them; without one only the engine's own, nats first)."""
        info = json.loads((self.data_dir / "engine.pid").read_text())
        return {str(k): int(v) for k, v in info["ports"].items()}

    @property
    def nats_url(self) -> str:
        return f"nats://127.0.0.1:{self.ports['nats']}"

    @property
    def credentials(self) -> str:
        return str(self.data_dir / "nats" / "credentials.json")

    async def client(self) -> Client:
        return Client(await connect(self.nats_url, self.credentials))

    def status(self) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "engine", "status", "--json", "--config", str(self.config),
             *self.args()],
            cwd=ROOT, capture_output=True, check=False,
        )  # fmt: skip
        return json.loads(out.stdout) if out.stdout else {}

    def stop(self, timeout: float = 60.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill_all(self) -> None:
        """Last-resort cleanup: the engine and anything still bound to its data dir."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        mine = str(self.data_dir).encode()
        for pid_dir in Path("/proc").iterdir():
            if not pid_dir.name.isdigit():
                continue
            try:
                env = (pid_dir / "environ").read_bytes()
                cmd = (pid_dir / "cmdline").read_bytes()
            except OSError:
                continue
            if mine in env or mine in cmd:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(pid_dir.name), signal.SIGKILL)


@pytest.fixture
def engine_factory(tmp_path: Path) -> Iterator[Callable[..., EngineProcess]]:
    made: list[EngineProcess] = []

    def make(config: str = EXAMPLE_CONFIG, sub: str = "e") -> EngineProcess:
        d = tmp_path / f"{sub}{len(made)}"
        d.mkdir()
        e = EngineProcess(d, config)
        made.append(e)
        return e

    yield make
    for e in made:
        e.stop(30)
        e.kill_all()


# ---------------------------------------------------------------------------------------
# The product stack

STACK_SECRET = "stack-test-secret"


def product_config(
    home: Path, secret: str = STACK_SECRET, nats: dict[str, Any] | None = None, **env: str
) -> str:
    """config/engine.yaml as `make run` starts it, with the test's secret, HOME and env (and
    `nats` settings merged into its own, e.g. a domain and leaf link)."""
    cfg = yaml.safe_load((ROOT / "config" / "engine.yaml").read_text())
    cfg.pop("instance", None)
    for key, value in (nats or {}).items():
        if isinstance(value, dict):
            cfg["nats"].setdefault(key, {}).update(value)
        else:
            cfg["nats"][key] = value
    cfg.setdefault("env", {}).update(
        {
            "AGENTMEMORY_SECRET": secret,
            "HOME": str(home),
            "AGENTMEMORY_EXPORT_ROOT": str(home / ".agentmemory"),
            "AGENTMEMORY_INBOX_DIR": str(home / "inbox"),
            **env,
        }
    )
    return yaml.safe_dump(cfg)


@dataclass
class Stack:
    """The product (config/engine.yaml, every worker) as a process, on its own port block,
    data dir, HOME and secret."""

    engine: EngineProcess
    home: Path
    secret: str = STACK_SECRET

    @property
    def url(self) -> str:
        """The REST routes."""
        return f"http://127.0.0.1:{self.engine.anchor}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}", "Content-Type": "application/json"}

    def rest(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=60)

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=60)

    def serving(self) -> bool:
        """Every worker's routes answer: memory, search, MCP, diagnostics."""
        try:
            with self.rest() as h:
                rs = [
                    h.get("/agentmemory/mcp/tools"),
                    h.post("/agentmemory/search", json={"query": "x"}),
                    h.post("/agentmemory/context", json={"project": "x"}),
                    h.get("/agentmemory/diagnostics/followup"),
                ]
        except httpx.HTTPError:
            return False
        return all(r.status_code == 200 for r in rs)

    def observe(self, session: str, n: int, project: str = "viewer-demo", start: int = 0) -> None:
        """`n` tool observations in `session` (each a call and its result on replay)."""
        with self.rest() as c:
            for i in range(start, start + n):
                r = c.post(
                    "/agentmemory/observe",
                    json={
                        "hookType": "post_tool_use",
                        "sessionId": session,
                        "project": project,
                        "timestamp": f"2026-11-20T10:{i // 60:02d}:{i % 60:02d}.000Z",
                        "data": {
                            "tool_name": "Bash",
                            "tool_input": {"command": f"pytest tests/test_step_{i}.py -q"},
                            "tool_output": f"{i + 1} passed",
                        },
                        "eventId": f"{session}-{i}",
                    },
                )
                assert r.status_code in (200, 201), r.text

    def digest(self) -> None:
        """The lifecycle's event digest now, instead of at its next minute (it builds the
        graph)."""

        async def run() -> None:
            c = await self.engine.client()
            try:
                await c.call("mem::digest-events", None, timeout=120)
            finally:
                await c.nc.close()

        with ThreadPoolExecutor(1) as pool:  # a sync Playwright API holds this thread's loop
            pool.submit(asyncio.run, run()).result()

    # The viewer: its pages, and the one-time link `agentmemory viewer` opens to sign in.

    @property
    def viewer(self) -> str:
        return f"http://127.0.0.1:{self.engine.ports['viewer']}"

    def login_url(self, ttl: float = tokens.LOGIN_TTL) -> str:
        return tokens.login_url(self.engine.ports["viewer"], self.secret, ttl)

    @property
    def cookie_name(self) -> str:
        return tokens.cookie_name(self.engine.ports["viewer"])

    def viewed(self) -> httpx.Client:
        """A client signed in to the viewer as a browser is: the link, then its cookie."""
        c = httpx.Client(base_url=self.viewer, timeout=30)
        r = c.get(self.login_url().removeprefix(self.viewer), follow_redirects=False)
        assert r.status_code == 303 and self.cookie_name in r.headers["set-cookie"], r.text
        return c

    def cookie(self, c: httpx.Client) -> dict[str, str]:
        """The Cookie header of a signed-in client (for the live socket)."""
        return {"Cookie": f"{self.cookie_name}={c.cookies[self.cookie_name]}"}

    def stop(self) -> None:
        self.engine.stop(30)
        self.engine.kill_all()


def start_stack(
    tmp: Path,
    secret: str = STACK_SECRET,
    *,
    nats: dict[str, Any] | None = None,
    ready: Callable[[Stack], bool] = Stack.serving,
    **env: str,
) -> Stack:
    """Start the product in `tmp` (its data dir, and HOME `tmp/home`) and wait until `ready`."""
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    engine = EngineProcess(tmp, product_config(home, secret, nats, **env))
    stack = Stack(engine, home, secret)
    try:
        engine.start(timeout=180)
        wait_until(lambda: ready(stack), timeout=120, interval=0.3, what="the product's routes")
    except BaseException:
        stack.stop()
        raise
    return stack


# ---------------------------------------------------------------------------------------
# Headless Chromium: the Debian binary, driven by Playwright

CHROMIUM = Path("/usr/bin/chromium")
# No first-run, sync or update traffic: the machine has no network beyond the package mirrors.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium missing (apt-get install chromium)"
)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    playwright_sync = pytest.importorskip("playwright.sync_api")
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for a module's pages (each test opens its own context)."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium missing (apt-get install chromium)")
    with chromium() as b:
        yield b


# ---------------------------------------------------------------------------------------
# git


def git(repo: Path, *args: str, when: str | None = None) -> str:
    """Run git in `repo` as a fixed author with no user config (`when`: the commit date)."""
    env = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com",
           "HOME": str(repo), "PATH": "/usr/bin:/bin"}  # fmt: skip
    if when:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when
    out = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)
    return out.stdout.decode().strip()
