"""The engine's configuration file (config/engine.yaml), typed."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from engine._paths import Layout
from engine._triggers import check_kind
from engine.disk import parse_size


class RestartPolicy(msgspec.Struct, forbid_unknown_fields=True):
    policy: Literal["always", "on-failure", "never"] = "always"
    backoff_initial: float = 0.5
    """Seconds before the first restart; doubles after each crash."""
    backoff_max: float = 30.0
    reset_after: float = 10.0
    """A worker that stayed up this long starts again from backoff_initial."""


class WorkerConfig(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    module: str | None = None
    """Python module run as `python -m <module>` with this interpreter."""
    modules: list[str] | None = None
    """Or several workers' modules in one process (`python -m engine.host ...`): they share
    a bus connection, and their calls to each other run in-process."""
    command: list[str] | None = None
    """Or any command; `{python}` is replaced by this interpreter."""
    replicas: int = 1
    env: dict[str, str] = msgspec.field(default_factory=dict)
    depends_on: list[str] = msgspec.field(default_factory=list)
    restart: RestartPolicy = msgspec.field(default_factory=RestartPolicy)
    ready_timeout: float = 30.0
    enabled: bool = True
    nice: int = 0
    """CPU priority offset (0–19): background work (indexing) yields to the hot path."""

    def argv(self) -> list[str]:
        if self.command:
            return [sys.executable if c == "{python}" else c for c in self.command]
        if self.modules:
            return [sys.executable, "-m", "engine.host", *self.modules]
        if self.module:
            return [sys.executable, "-m", self.module]
        raise ValueError(f"worker {self.name}: set one of 'module', 'modules' or 'command'")


class BucketConfig(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    history: int = 1
    ttl: float | None = None
    max_bytes: int | None = None


class StreamConfig(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    subjects: list[str]
    retention: Literal["limits", "workqueue", "interest"] = "limits"
    max_age: float | None = None
    """Seconds."""
    max_bytes: int | None = None
    max_msgs: int | None = None
    allow_msg_schedules: bool = False


class LeafTlsConfig(msgspec.Struct, forbid_unknown_fields=True):
    cert_file: str | None = None
    key_file: str | None = None
    ca_file: str | None = None
    """The CA that signed the peers' (or the hub's) certificates."""
    verify: bool = False
    """On a listener: require peers to present a certificate signed by `ca_file`."""


class LeafRemoteConfig(msgspec.Struct, forbid_unknown_fields=True):
    url: str
    """The hub's leaf listener: `nats-leaf://host:7422` (add a `tls:` block for TLS)."""
    credentials: str | None = None
    """The hub's leaf credentials: the JSON file its engine wrote (`nats/leaf-credentials.json`
    in its data dir, copied here), or a NATS `.creds` file."""
    tls: LeafTlsConfig | None = None


class LeafShareConfig(msgspec.Struct, forbid_unknown_fields=True):
    streams: list[str] = msgspec.field(default_factory=list)
    """Streams a peer's server may source (copy) across the link."""
    subjects: list[str] = msgspec.field(default_factory=list)
    """Core subjects both sides exchange."""


class LeafNodesConfig(msgspec.Struct, forbid_unknown_fields=True):
    """Leaf node links to other instances' embedded servers: one machine `listen`s, the
    others name it in `remotes` (a tree: no cycles). Only `share` crosses a link."""

    listen: str | None = None
    """host:port to accept peers on (e.g. `0.0.0.0:7422`); they log in with the credentials
    this engine writes to `nats/leaf-credentials.json` in its data dir on first start."""
    remotes: list[LeafRemoteConfig] = msgspec.field(default_factory=list)
    share: LeafShareConfig = msgspec.field(default_factory=LeafShareConfig)
    tls: LeafTlsConfig | None = None
    """TLS of the listener."""

    @property
    def active(self) -> bool:
        return bool(self.listen or self.remotes)


class NatsConfig(msgspec.Struct, forbid_unknown_fields=True):
    url: str | None = None
    """An external NATS (cluster) instead of the embedded server."""
    credentials: str | None = None
    """For an external URL: a NATS .creds file, or a JSON file with user and password."""
    replicas: int = 1
    """JetStream replicas for buckets and streams the engine creates (3 on a cluster)."""
    max_file_store: str = "10G"
    max_memory_store: str = "512M"
    memory_limit: str | None = "160MiB"
    """The embedded nats-server's soft memory limit, given to it as GOMEMLIMIT (Go's syntax:
    `160MiB`, `1GiB`; null: none). Go's runtime otherwise lets the heap grow to twice what is
    live; a limit above the live set costs some CPU only as the heap nears it
    (docs/design/nats-memory-limit.md). A GOMEMLIMIT in the engine's own environment wins."""
    sync: str = "default"
    """When the embedded nats-server syncs its store to disk: `default` (its own: every two
    minutes; the kernel writes most pages back within ~30 s, so a power loss can take the last
    seconds of acknowledged writes), `always` (before every acknowledgement: nothing
    acknowledged is lost to a power cut, at the price on ingest docs/PERFORMANCE.md states),
    or an interval such as `1s`. A crash of the process alone loses nothing either way."""
    min_free_disk: str = "64M"
    """Space kept free on the disk of the data dir: writers answer a retryable "disk full"
    error below it rather than write, and a nats-server that hit a full disk is restarted
    once this much is free again (workers get it as ENGINE_MIN_FREE_DISK)."""
    domain: str | None = None
    """This instance's JetStream domain: its name among linked instances, unique, fixed once
    chosen. Required with leaf links; workers get it as ENGINE_NATS_DOMAIN."""
    leafnodes: LeafNodesConfig = msgspec.field(default_factory=LeafNodesConfig)

    def __post_init__(self) -> None:
        try:
            parse_size(self.min_free_disk)
        except ValueError as exc:
            raise msgspec.ValidationError(f"nats.min_free_disk: {exc}") from None
        if not SYNC_RE.match(self.sync):
            raise msgspec.ValidationError(
                f"nats.sync must be 'default', 'always' or an interval such as '1s', "
                f"got {self.sync!r}"
            )


SYNC_RE = re.compile(r"^(default|always|\d+(ms|s|m|h))$")


class TriggerConfig(msgspec.Struct, forbid_unknown_fields=True):
    kind: str
    function_id: str
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str = ""


class EngineConfig(msgspec.Struct, forbid_unknown_fields=True):
    layout: Layout = msgspec.field(default_factory=Layout)
    """The instance's data dir and named port block (see engine/_paths.py)."""
    instance: int = 0
    data_dir: str | None = None
    port: int | None = None
    """Anchor of the port block; default `layout.anchor`."""
    nats: NatsConfig = msgspec.field(default_factory=NatsConfig)
    buckets: list[BucketConfig] = msgspec.field(default_factory=list)
    streams: list[StreamConfig] = msgspec.field(default_factory=list)
    workers: list[WorkerConfig] = msgspec.field(default_factory=list)
    triggers: list[TriggerConfig] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    """Environment given to every worker."""
    stop_timeout: float = 30.0


class ConfigError(ValueError):
    pass


def load_config(path: str | os.PathLike[str] | None) -> EngineConfig:
    if path is None:
        return EngineConfig()
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file {p} not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {p} is not valid YAML: {exc}") from None
    try:
        cfg = msgspec.convert(raw, EngineConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"config file {p}: {exc}") from None
    check(cfg)
    return cfg


_DOMAIN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_GO_SIZE = re.compile(r"^[1-9][0-9]{0,12}(B|KiB|MiB|GiB|TiB)?$")
"""GOMEMLIMIT's syntax (what Go's runtime accepts; a bad value makes it exit at start)."""


def check(cfg: EngineConfig) -> None:
    if not 1 <= cfg.nats.replicas <= 5:
        raise ConfigError(
            f"nats.replicas must be from 1 to 5 (JetStream's range), got {cfg.nats.replicas}"
        )
    nats = cfg.nats
    if nats.memory_limit is not None and not _GO_SIZE.match(nats.memory_limit):
        raise ConfigError(
            f"nats.memory_limit {nats.memory_limit!r}: a size in Go's syntax, e.g. 320MiB or "
            "1GiB (B, KiB, MiB, GiB, TiB), or null for none"
        )
    if nats.domain is not None and not _DOMAIN.match(nats.domain):
        raise ConfigError(
            f"nats.domain {nats.domain!r}: letters, digits, '-' and '_' only (at most 64)"
        )
    if nats.leafnodes.active:
        if nats.url:
            raise ConfigError("nats.leafnodes links the embedded server: drop nats.url")
        if not nats.domain:
            raise ConfigError(
                "nats.leafnodes needs nats.domain: a name for this instance, unique among the "
                "linked ones (JetStream tells their APIs apart by it)"
            )
        for r in nats.leafnodes.remotes:
            if "://" not in r.url:
                raise ConfigError(f"nats.leafnodes.remotes: {r.url!r} is not a URL")
    names = [w.name for w in cfg.workers]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError(f"worker names must be unique: {', '.join(sorted(dup))}")
    for w in cfg.workers:
        if sum(bool(x) for x in (w.module, w.modules, w.command)) != 1:
            raise ConfigError(f"worker {w.name}: set one of 'module', 'modules' or 'command'")
        for d in w.depends_on:
            if d not in names:
                raise ConfigError(f"worker {w.name} depends on unknown worker {d!r}")
    for t in cfg.triggers:
        try:
            check_kind(t.kind)
        except ValueError as exc:
            raise ConfigError(f"trigger of {t.function_id}: {exc}") from None
    start_order(cfg.workers)


def start_order(workers: list[WorkerConfig]) -> list[WorkerConfig]:
    """Dependencies first; a cycle is a config error."""
    by_name = {w.name: w for w in workers}
    order: list[WorkerConfig] = []
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise ConfigError("worker dependency cycle: " + " -> ".join([*path, name]))
        state[name] = 1
        for dep in by_name[name].depends_on:
            visit(dep, [*path, name])
        state[name] = 2
        order.append(by_name[name])

    for w in workers:
        visit(w.name, [])
    return order
