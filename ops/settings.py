"""The settings ops/ reads besides the product's (docs/CONFIG.md): read through
engine.settings like every other, not installed with the product, so not in its table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.settings import LOG_LEVELS, choice, load, path


@dataclass(frozen=True)
class OpsSettings:
    """Benchmarks and evaluation runs."""

    bench_log_level: str = choice(
        "BENCH_LOG_LEVEL", "WARNING", LOG_LEVELS, "Log level of the processes a bench starts."
    )
    cache_home: Path | None = path(
        "XDG_CACHE_HOME", None, "Where eval runs cache embeddings.", shown="~/.cache"
    )


def ops_settings() -> OpsSettings:
    return load(OpsSettings)
