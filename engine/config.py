"""The engine's configuration file (config/engine.yaml), typed: for tools that read the
same file the supervisor runs (benchmarks, the CLI)."""

from engine._config import (
    ConfigError,
    EngineConfig,
    NatsConfig,
    RestartPolicy,
    WorkerConfig,
    load_config,
)
from engine._worker_process import process_usage

__all__ = [
    "ConfigError",
    "EngineConfig",
    "NatsConfig",
    "RestartPolicy",
    "WorkerConfig",
    "load_config",
    "process_usage",
]
