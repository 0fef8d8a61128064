"""The benchmarks' harness: everything the benches under ops/bench share, in one module. A
bench imports this (and ops/bench/cluster_workload.py for the cluster's), never another
bench.

- figures: percentiles, peak RSS, the machine a figure was measured on, the JSON last line;
- processes: start a child with exactly its environment, drain its stderr; an asyncio
  bench's command line; free loopback ports;
- HTTP load: wrk as the generator (an httpx client caps near 430 req/s here, below any
  server we measure), its output parsed, readiness polling;
- a small keep-alive HTTP/1.1 client on asyncio streams, for load that must run inside the
  benchmark (retries, failover, checking each reply), where wrk cannot;
- the default install under REST load (load.py, soak.py): the engine started as a user
  starts it, closed-loop clients, CPU per process and disk;
- the hook payloads of the ingest bench (ingest.py, scrub.py, compress.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import faulthandler
import json
import os
import random
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from engine.settings import environ
from ops.procfs import cmdline, kb_fields, process_tree
from ops.settings import ops_settings

ROOT = Path(__file__).resolve().parents[2]


# ---- figures ---------------------------------------------------------------------------
def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def peak_rss_mb(pid: int | None = None) -> float:
    if pid is None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return kb_fields(pid, "status", "VmHWM").get("VmHWM", float("nan"))


def emit(figures: dict[str, Any]) -> None:
    """The last line a benchmark prints: one JSON object."""
    print(json.dumps(figures), flush=True)


def machine() -> dict[str, Any]:
    """What a figure was measured on: a ratio from a loaded machine reads differently."""
    return {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}


# ---- processes -------------------------------------------------------------------------
def spawn(
    argv: list[str], env: dict[str, str], ready_mark: str | bytes | None = None
) -> subprocess.Popen[bytes]:
    """Start `argv` with exactly `env`; when `ready_mark` is given, wait for it on stderr,
    then keep draining stderr so a chatty process never blocks on a full pipe."""
    p = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert p.stderr is not None
    if ready_mark:
        mark = ready_mark.encode() if isinstance(ready_mark, str) else ready_mark
        for raw in p.stderr:
            if mark in raw:
                break
        else:
            raise RuntimeError(f"{argv} exited before it was ready")
    threading.Thread(target=lambda: [None for _ in p.stderr or []], daemon=True).start()
    return p


def spawn_python(
    args: list[str], env: dict[str, str] | None = None, ready_mark: str | None = None
) -> subprocess.Popen[bytes]:
    """`python <args>` with this environment plus `env` and the repository importable."""
    e = environ(PYTHONPATH=str(ROOT))
    e.update(env or {})
    return spawn([sys.executable, *args], e, ready_mark)


def run_async(main: Callable[[bool], Awaitable[None]], wedge_quick: int, wedge_full: int) -> None:
    """The command line of an asyncio benchmark: `--quick`, uvloop, and a wedged run says
    where it hangs (a traceback after `wedge_*` seconds) instead of hanging."""
    import uvloop

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    faulthandler.dump_traceback_later(wedge_quick if a.quick else wedge_full, exit=True)
    uvloop.install()
    asyncio.run(main(a.quick))  # type: ignore[arg-type]


# ---- ports -------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_block(size: int) -> int:
    """The first of `size` consecutive loopback ports, all free now: the port block of a
    product instance (REST, NATS, console ... at fixed offsets from it)."""
    for _ in range(200):
        anchor = random.randrange(20000, 32000, 10)
        try:
            for port in range(anchor, anchor + size):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return anchor
    raise RuntimeError("no free port block")


# ---- HTTP load: wrk ----------------------------------------------------------------------
def wait_http(url: str, body: bytes, secret: str, timeout: float = 30.0) -> None:
    """POST `body` until the endpoint answers 2xx (routes may appear a moment after start)."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {secret}"}
    deadline = time.monotonic() + timeout
    while True:
        try:
            req = urllib.request.Request(url, data=body, headers=headers, method="POST")
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status < 300:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not come up")
        time.sleep(0.1)


def run_wrk(url: str, script: Path, connections: int, seconds: int) -> dict[str, float]:
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"99%\s+([\d.]+\w+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"50%\s+([\d.]+\w+)", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {
        "rps": rps,
        "p50_ms": p50,
        "p99_ms": p99,
        "non_2xx": float(bad.group(1)) if bad else 0.0,
        "socket_errors": 1.0 if errors else 0.0,
    }


def _ms(text: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s)", text)
    assert m is not None, text
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


# ---- a REST client -----------------------------------------------------------------------
_enc = msgspec.json.Encoder()


class HttpFailure(Exception):
    """No reply: connection refused or reset, or a malformed response."""


class Connection:
    """One persistent connection to `host:port`, reopened when it breaks."""

    def __init__(self, host: str, port: int, secret: str) -> None:
        self.host, self.port = host, port
        self._auth = f"Authorization: Bearer {secret}\r\n".encode()
        self._r: asyncio.StreamReader | None = None
        self._w: asyncio.StreamWriter | None = None

    async def _open(self) -> None:
        try:
            self._r, self._w = await asyncio.open_connection(self.host, self.port)
        except OSError as exc:
            raise HttpFailure(f"connect {self.port}: {exc}") from None

    def close(self) -> None:
        if self._w is not None:
            with contextlib.suppress(Exception):
                self._w.close()
        self._r = self._w = None

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        """(status, body). Raises HttpFailure when no reply came; the connection is closed
        then, and the next request opens a new one."""
        if self._w is None:
            await self._open()
        assert self._r is not None and self._w is not None
        data = b"" if body is None else _enc.encode(body)
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        ).encode()
        try:
            self._w.write(head + self._auth + b"\r\n" + data)
            await self._w.drain()
            status_line = await self._r.readline()
            if not status_line:
                raise HttpFailure("connection closed")
            status = int(status_line.split(b" ", 2)[1])
            length = 0
            while True:
                line = await self._r.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            payload = await self._r.readexactly(length) if length else b""
            return status, payload
        except (OSError, ValueError, IndexError, asyncio.IncompleteReadError) as exc:
            self.close()
            raise HttpFailure(f"{method} {path} on {self.port}: {exc!r}") from None
        except BaseException:
            self.close()  # cancelled mid-reply: the stream is out of step
            raise


# ---- the default install under REST load (load.py, soak.py) -----------------------------
SECRET = "load-bench-secret"
PROJECT = "loadbench"


def vocabulary(n: int = 3000, seed: int = 5) -> list[str]:
    """Synthetic words with a code-like spread (a Zipf-ish draw over them below)."""
    rng = random.Random(seed)
    syll = ["ka", "lo", "mi", "ter", "sun", "par", "dex", "qua", "rin", "vol", "ex", "ob"]
    return ["".join(rng.choice(syll) for _ in range(rng.randint(2, 4))) for _ in range(n)]


WORDS = vocabulary()


def words(rng: random.Random, k: int) -> str:
    n = len(WORDS)
    return " ".join(WORDS[min(n - 1, int(rng.paretovariate(1.1)) - 1)] for _ in range(k))


def observe_body(tag: str, i: int, rng: random.Random) -> dict[str, Any]:
    return {
        "hookType": "post_tool_use",
        "sessionId": f"{tag}-s{i % 64}",
        "project": PROJECT,
        "cwd": "/work/loadbench",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "eventId": f"toolu_{tag}_{i:08d}",
        "data": {
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest -q tests/test_{WORDS[i % len(WORDS)]}.py"},
            "tool_output": "\n".join(words(rng, 12) for _ in range(8)),
        },
    }


def _exit_on_term(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


class Engine:
    """The default install as a user starts it, on a free port block and a temp data dir."""

    def __init__(self, tmp: Path, config: Path) -> None:
        # Imported here, not at the top: a bench that weighs its own process (search.py's
        # RSS) loads only the harness it uses, not the engine's config and the cluster's.
        from ops.cluster.cluster import free_anchor

        self.anchor = free_anchor(1)
        self.tmp = tmp
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None
        if threading.current_thread() is threading.main_thread():
            # A bench stopped with SIGTERM (kill, timeout) unwinds through its `finally`,
            # which stops this engine: without it the engine and its workers outlived it.
            signal.signal(signal.SIGTERM, _exit_on_term)

    def start(self) -> float:
        # BENCH_LOG_LEVEL=INFO keeps what the workers say of their start and stop.
        level = ops_settings().bench_log_level
        env = environ(HOME=str(self.tmp / "home"), PYTHONPATH=str(ROOT),
                   AGENTMEMORY_SECRET=SECRET, ENGINE_LOG_LEVEL=level)  # fmt: skip
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "run", "--config", str(self.config),
             "--data-dir", str(self.tmp / "data"), "--port", str(self.anchor), "--quiet"],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            if raw.startswith(b"engine ready"):
                break
        else:
            raise RuntimeError("the engine did not start")
        threading.Thread(target=lambda: [None for _ in self.proc.stderr or []],  # type: ignore[union-attr]
                         daemon=True).start()  # fmt: skip
        return time.monotonic() - t0

    @property
    def rest_port(self) -> int:
        return self.anchor

    def usage(self) -> dict[str, tuple[float, float]]:
        """CPU seconds and RSS MB of every process of the engine, by a readable label."""
        from engine.config import process_usage

        assert self.proc is not None
        out: dict[str, tuple[float, float]] = {}
        for pid in process_tree(self.proc.pid):
            cpu, rss = process_usage(pid)
            if cpu is None or rss is None:
                continue
            words_ = cmdline(pid)
            if "engine.host" in words_:
                name = "+".join(w.split(".")[-1] for w in words_[words_.index("engine.host") + 1 :])
            elif "-m" in words_:
                name = words_[words_.index("-m") + 1]
            else:
                name = Path(words_[0]).name if words_ else str(pid)
            out[f"{name}#{pid}"] = (cpu, rss)
        return out

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(90)
            except subprocess.TimeoutExpired:
                for pid in process_tree(self.proc.pid):
                    os.kill(pid, signal.SIGKILL)


@dataclass
class Clients:
    port: int
    tag: str
    search_share: float
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"observe": [], "search": []})
    stats: Counter[str] = field(default_factory=Counter)
    observed: int = 0
    rate: float = 0.0
    """Observations a second in all (0: as fast as answers come): each observe waits for
    its slot, `start + i / rate`, so the offered load does not follow the latency."""
    _next: int = 0
    _start: float = 0.0

    async def one(self, k: int, until: float, limit: int) -> None:
        rng = random.Random(k)
        conn = Connection("127.0.0.1", self.port, SECRET)
        try:
            while time.monotonic() < until and self._next < limit:
                search = rng.random() < self.search_share
                if search:
                    path, kind = "/agentmemory/search", "search"
                    body: Any = {"query": words(rng, 2), "project": PROJECT, "limit": 10}
                else:
                    path, kind = "/agentmemory/observe", "observe"
                    i = self._next
                    self._next += 1
                    body = observe_body(self.tag, i, rng)
                    if self.rate:
                        await asyncio.sleep(
                            max(0.0, self._start + i / self.rate - time.monotonic())
                        )
                t0 = time.perf_counter()
                try:
                    status, _ = await conn.request("POST", path, body)
                except HttpFailure:
                    self.stats[f"{kind}_failed"] += 1
                    await asyncio.sleep(0.05)
                    continue
                self.latencies[kind].append(1000 * (time.perf_counter() - t0))
                self.stats[f"{kind}_{status}"] += 1
                if kind == "observe" and status in (200, 201, 202):
                    self.observed += 1
        finally:
            conn.close()

    async def run(self, clients: int, seconds: float, limit: int = 10**12) -> float:
        t0 = self._start = time.monotonic()
        await asyncio.gather(*(self.one(k, t0 + seconds, limit) for k in range(clients)))
        return time.monotonic() - t0


def cpu_by_label(
    now: dict[str, tuple[float, float]], before: dict[str, tuple[float, float]], n: int
) -> dict[str, float]:
    """CPU milliseconds per observation of each label's processes since `before`."""
    out: dict[str, float] = {}
    for key, (cpu, _) in now.items():
        label = key.split("#")[0]
        spent = cpu - before.get(key, (0.0, 0.0))[0]
        out[label] = out.get(label, 0.0) + 1000 * spent / n
    return {k: round(v, 3) for k, v in out.items()}


def disk_mb(path: Path) -> float:
    """Bytes under `path` (the data dir: JetStream's store, snapshots, logs), in MB."""
    total = 0
    for f in path.rglob("*"):
        try:
            if f.is_file():
                total += f.stat().st_size
        except OSError:
            continue
    return total / 2**20


# ---- hook payloads (ingest.py, scrub.py, compress.py) ------------------------------------
def payload_template(k: int, rng: random.Random) -> dict[str, Any]:
    """A post_tool_use hook body of 1-8 KB (test logs, code lines, tracebacks, worker logs),
    its eventId left as `__EID__` for the caller to fill."""
    size = rng.randint(1024, 8 * 1024)
    lines = []
    while sum(len(x) for x in lines) < size - 600:
        n = rng.randint(1, 400)
        lines.append(
            rng.choice(
                [
                    f"tests/test_module_{n}.py::test_case_{n} PASSED\n",
                    f"src/app/handlers_{n}.py:{n}: def handle_{n}(request): return Response({n})\n",
                    f'  File "src/core/engine_{n}.py", line {n}, in run\n',
                    f"INFO worker-{n} processed batch {n} in {n / 7:.2f} ms\n",
                ]
            )
        )
    tool = rng.choice(["Bash", "Read", "Edit", "Grep"])
    tool_input: dict[str, Any] = (
        {"command": f"pytest -q tests/test_module_{k}.py"}
        if tool == "Bash"
        else {"file_path": f"src/app/module_{k}.py", "pattern": f"handle_{k}"}
    )
    return {
        "hookType": "post_tool_use",
        "sessionId": f"bench-session-{k % 8}",
        "project": "bench",
        "cwd": "/work/bench",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "eventId": "__EID__",
        "data": {"tool_name": tool, "tool_input": tool_input, "tool_output": "".join(lines)},
    }


def read_payload(k: int, text: str) -> dict[str, Any]:
    return {
        "hookType": "post_tool_use",
        "sessionId": f"bench-session-{k % 8}",
        "project": "bench",
        "cwd": "/work/bench",
        "timestamp": "2026-11-29T10:00:00.000Z",
        "eventId": f"ev-{k}",
        "data": {
            "tool_name": "Read",
            "tool_input": {"file_path": f"src/module_{k}.py"},
            "tool_output": text,
        },
    }


def payload_mixes(n: int) -> dict[str, list[dict[str, Any]]]:
    """Three mixes of `n` hook payloads: the ingest mix, this repository's own code read back
    as 1-8 KB `Read` outputs, and the provider secret corpus (one sample a payload)."""
    from tests.memory.secret_corpus import SAMPLES

    rng = random.Random(11)
    mix = [payload_template(k, rng) for k in range(n)]
    for k, p in enumerate(mix):
        p["eventId"] = f"ev-{k}"
    sources = sorted(
        f for d in ("engine", "functions", "workers", "triggers") for f in (ROOT / d).rglob("*.py")
    )
    code_text = "".join(f.read_text() for f in sources)
    code = []
    pos = 0
    for k in range(n):
        size = rng.randint(1024, 8 * 1024)
        if pos + size > len(code_text):
            pos = 0
        code.append(read_payload(k, code_text[pos : pos + size]))
        pos += size
    secrets = [read_payload(k, SAMPLES[k % len(SAMPLES)].text) for k in range(n)]
    return {"mix": mix, "code": code, "secrets": secrets}
