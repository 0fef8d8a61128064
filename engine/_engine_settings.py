"""The engine's own areas: its settings (EngineSettings) and the worker identity the
supervisor gives each worker process (WorkerIdentity), the one place their variables are
named."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine._setting import (
    Setting,
    choice,
    declarations,
    duration,
    flag,
    integer,
    items,
    load,
    number,
    path,
    size,
    text,
)

MIN_FREE_DISK = 64 << 20
"""The disk space writers keep free when `nats.min_free_disk` says nothing."""


def _trigger_kinds() -> tuple[str, ...]:
    from engine._triggers import plugins

    return tuple(sorted(plugins()))


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
HEAP_TRIM_SECONDS = 30.0


@dataclass(frozen=True)
class EngineSettings:
    """The engine's own settings, read by the supervisor and every worker process."""

    log_level: str = choice(
        "ENGINE_LOG_LEVEL", "INFO", LOG_LEVELS, "Log level of the supervisor and its workers."
    )
    tracing: bool = flag(
        "ENGINE_TRACING", True, "Trace function calls (spans kept in ENGINE_TRACES, or OTLP)."
    )
    trace_sampling: float = number(
        "ENGINE_TRACE_SAMPLING",
        1.0,
        "Fraction of root spans kept.",
        lo=0.0,
        hi=1.0,
        clamp=True,
    )
    server_trace: bool = flag(
        "ENGINE_NATS_MSG_TRACE",
        False,
        "Let nats-server trace each sampled call's message too (costs a message per hop).",
    )
    natspy_fast: bool = flag(
        "ENGINE_NATSPY_FAST",
        True,
        "Use the engine's faster header code on nats-py connections (verified versions only).",
    )
    heap_trim_seconds: float = duration(
        "ENGINE_HEAP_TRIM_SECONDS",
        HEAP_TRIM_SECONDS,
        "How often a busy worker gives freed heap back to the system (0: never).",
    )
    triggers: tuple[str, ...] = items(
        "ENGINE_TRIGGERS",
        (),
        "Trigger plug-ins a worker process hosts (set per worker in the engine's config).",
        choices=_trigger_kinds,
    )
    otlp_endpoint: str = text(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "", "Also export spans over OTLP/HTTP to this collector."
    )
    otlp_traces_endpoint: str = text(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "As OTEL_EXPORTER_OTLP_ENDPOINT, traces only."
    )
    data_home: Path | None = path(
        "XDG_DATA_HOME",
        None,
        "Where data dirs live by default (`<XDG_DATA_HOME>/<layout name>`).",
        shown="~/.local/share",
    )
    gomemlimit: str = text(
        "GOMEMLIMIT",
        "",
        "The embedded nats-server's memory limit; set, it wins over `nats.memory_limit`.",
    )


@dataclass(frozen=True)
class WorkerIdentity:
    """What the supervisor tells each worker process, in its environment; a process started
    by hand may set them itself (a client names its server with ENGINE_NATS_URL)."""

    nats_url: str = text(
        "ENGINE_NATS_URL",
        "",
        "The NATS server(s) to connect to, comma-separated.",
        shown="the instance's embedded server",
    )
    credentials: Path | None = path(
        "ENGINE_NATS_CREDENTIALS", None, "The bus user: a 0600 JSON user/password or a .creds file."
    )
    replicas: int = integer(
        "ENGINE_REPLICAS",
        1,
        "JetStream replicas of the buckets and streams a process creates (3 on a cluster).",
        lo=1,
        hi=5,
    )
    domain: str = text("ENGINE_NATS_DOMAIN", "", "The instance's JetStream domain (`nats.domain`).")
    config: Path | None = path(
        "ENGINE_CONFIG", None, "The engine config file.", shown="the checkout's config/engine.yaml"
    )
    min_free_disk: int = size(
        "ENGINE_MIN_FREE_DISK",
        MIN_FREE_DISK,
        "Disk space writers keep free: a write that would eat into it is refused, retryable.",
        shown="64M (`nats.min_free_disk`)",
    )
    worker: str = text("ENGINE_WORKER_NAME", "", "The worker's name (its bus connection's).")
    replica: int = integer("ENGINE_WORKER_REPLICA", 0, "Which replica of its worker.", lo=0)
    instance: int = integer("ENGINE_INSTANCE", 0, "The instance number.", lo=0)
    data_dir: Path | None = path("ENGINE_DATA_DIR", None, "The instance's data dir.")
    boot_id: str = text(
        "ENGINE_BOOT_ID", "", "One id per supervisor start, shared by all its workers."
    )
    namespace: str = text(
        "ENGINE_NAMESPACE", "engine", "The layout's name: spans' `service.namespace`."
    )
    supervisor_pid: int = integer(
        "ENGINE_SUPERVISOR_PID", 0, "The supervisor: a worker exits when it is gone.", lo=0
    )
    lifeline_fd: int = integer(
        "ENGINE_SUPERVISOR_FD",
        -1,
        "The read end of the supervisor's lifeline pipe (end of file: the supervisor is gone).",
    )

    def environ(self) -> dict[str, str]:
        """These values under their variables' names, for a worker's environment (unset
        ones left out, so the worker inherits them)."""
        out: dict[str, str] = {}
        for field, s in declarations(WorkerIdentity):
            value = getattr(self, field)
            if isinstance(s, Setting) and value is not None and value != "":
                out[s.name] = str(value)
        return out


def engine_settings() -> EngineSettings:
    return load(EngineSettings)


def worker_identity() -> WorkerIdentity:
    """This process's identity, as its supervisor (or whoever started it) set it."""
    return load(WorkerIdentity)
