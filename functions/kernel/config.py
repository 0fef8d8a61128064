"""Lifecycle settings, read from the environment once per process. Every default is stated
here and in docs/LIFECYCLE.md."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from functions.kernel.models.settings import Format, ModelSettings, Provider


def data_dir() -> Path | None:
    """The instance's data dir as the supervisor gives it to its workers
    (AGENTMEMORY_DATA_DIR, else ENGINE_DATA_DIR); None for a process run without either."""
    raw = os.environ.get("AGENTMEMORY_DATA_DIR") or os.environ.get("ENGINE_DATA_DIR")
    return Path(raw).expanduser() if raw else None


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        return float(raw) if raw else default
    except ValueError:
        return default


def _int(name: str, default: int) -> int:
    return int(_float(name, float(default)))


def _bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    return raw in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class DecayConfig:
    half_life_days: float = 30.0
    """Half-life of a plain memory's strength without access."""
    semantic_half_life_days: float = 90.0
    """Semantic facts and procedures decay slower: many sessions back them."""
    lesson_half_life_days: float = 60.0
    reinforce_boost: float = 0.3
    """An access closes this fraction of the gap to full strength."""
    lesson_decay: bool = True


@dataclass(frozen=True)
class ForgetConfig:
    low_value_days: float = 30.0
    """Observations older than this with importance <= `low_value_importance` are dropped."""
    low_value_importance: int = 3
    superseded_grace_days: float = 7.0
    """A superseded memory is kept this long for its version chain, then removed."""
    batch: int = 256
    """Ids per removal call (one audit entry and one RecordsRemoved event each)."""
    max_obs_per_session: int = 500
    """A session above this many observations loses its lowest-value oldest ones (0: off)."""
    scheduled: bool = True
    """AUTO_FORGET_ENABLED (upstream's name): false stops the scheduled runs (nothing is
    deleted by the clock); POST auto-forget and evict still run when asked."""
    interval_ms: int = 3_600_000
    """AUTO_FORGET_INTERVAL_MS: how often the scheduled run comes (at least a minute)."""


@dataclass(frozen=True)
class GraphConfig:
    batch: int = 1000
    """MEM_EVENTS messages folded per step (the only events held in memory at once)."""
    retention_days: float = 90.0
    """Expired edges (validTo set) are kept this long; idle unlinked nodes too."""


@dataclass(frozen=True)
class ProfileConfig:
    top: int = 50
    """Terms kept per list (concepts, files, commands, errors)."""
    half_life_days: float = 30.0
    """A term's score halves after this much event time without a mention."""
    session_half_life: float = 1.5
    """... and after this many later sessions of the project without a mention, so what
    the last sessions did leads even when they came the same day; a term of most sessions
    (the project's core) keeps its place. 0 turns session recency off."""


@dataclass(frozen=True)
class LlmConfig:
    """The model consolidation uses: the environment's providers (functions/kernel/models),
    or one given explicitly (`provider`, `api_key`, `base_url`, `model`, `timeout`)."""

    provider: str = ""
    """"openai", "anthropic" (the two wire formats) or "" (the environment's chain)."""
    api_key: str = ""
    base_url: str = ""
    model: str = ""
    timeout: float = 30.0
    max_calls: int = 20
    """Model calls per consolidation run; the rest keep deterministic text until later runs."""
    settings: ModelSettings = field(default_factory=ModelSettings)
    """The environment's chain (from_env); used when no `provider` is given."""

    @property
    def enabled(self) -> bool:
        return bool(self.provider) or self.settings.enabled

    def model_settings(self) -> ModelSettings:
        if not self.provider:
            return self.settings
        fmt: Format = "anthropic" if self.provider == "anthropic" else "openai"
        one = Provider(self.provider, fmt, self.api_key, self.model, self.base_url, self.timeout)
        return ModelSettings(chain=(one,), breaker=self.settings.breaker)

    @classmethod
    def from_env(cls) -> LlmConfig:
        return cls(
            timeout=_float("CONSOLIDATION_LLM_TIMEOUT_S", 30.0),
            max_calls=max(0, _int("CONSOLIDATION_LLM_MAX_CALLS", 20)),
            settings=ModelSettings.from_env(),
        )


@dataclass(frozen=True)
class LifecycleConfig:
    stale_hours: float = 4.0
    """A session with no activity for this long is abandoned and summarized."""
    consolidation_interval_ms: int = 2 * 3600 * 1000
    consolidation_llm: bool = False
    """CONSOLIDATION_ENABLED: let an LLM rewrite consolidated text (same pipeline)."""
    min_sessions: int = 3
    """A semantic fact or procedure needs evidence from this many distinct sessions."""
    provenance_cap: int = 32
    """Source ids kept per record, node and edge (most recent)."""
    audit_retention_months: int = 12
    decay: DecayConfig = field(default_factory=DecayConfig)
    forget: ForgetConfig = field(default_factory=ForgetConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    llm: LlmConfig = field(default_factory=LlmConfig)

    @classmethod
    def from_env(cls) -> LifecycleConfig:
        return cls(
            stale_hours=_float("AGENTMEMORY_SESSION_SWEEP_STALE_HOURS", 4.0),
            consolidation_interval_ms=_int("CONSOLIDATION_INTERVAL_MS", 2 * 3600 * 1000),
            # upstream: on by default whenever a provider is configured; false keeps the
            # model out (the deterministic pipeline runs either way)
            consolidation_llm=_bool("CONSOLIDATION_ENABLED", ModelSettings.from_env().enabled),
            min_sessions=max(2, _int("AGENTMEMORY_CONSOLIDATION_MIN_SESSIONS", 3)),
            provenance_cap=max(1, _int("AGENTMEMORY_PROVENANCE_CAP", 32)),
            audit_retention_months=max(1, _int("AGENTMEMORY_AUDIT_RETENTION_MONTHS", 12)),
            decay=DecayConfig(
                half_life_days=_float("AGENTMEMORY_DECAY_HALF_LIFE_DAYS", 30.0),
                semantic_half_life_days=_float("AGENTMEMORY_SEMANTIC_HALF_LIFE_DAYS", 90.0),
                lesson_half_life_days=_float("AGENTMEMORY_LESSON_HALF_LIFE_DAYS", 60.0),
                lesson_decay=_bool("LESSON_DECAY_ENABLED", True),
            ),
            forget=ForgetConfig(
                low_value_days=_float("AGENTMEMORY_LOW_VALUE_DAYS", 30.0),
                superseded_grace_days=_float("AGENTMEMORY_SUPERSEDED_GRACE_DAYS", 7.0),
                # upstream's MAX_OBS_PER_SESSION first, ours as the older name
                max_obs_per_session=max(
                    0, _int("MAX_OBS_PER_SESSION", _int("AGENTMEMORY_MAX_OBS_PER_SESSION", 500))
                ),
                scheduled=os.environ.get("AUTO_FORGET_ENABLED", "").strip().lower()
                not in ("false", "0", "off", "no"),
                interval_ms=max(60_000, _int("AUTO_FORGET_INTERVAL_MS", 3_600_000)),
            ),
            graph=GraphConfig(
                batch=max(1, _int("AGENTMEMORY_GRAPH_BATCH", 1000)),
                retention_days=_float("AGENTMEMORY_GRAPH_RETENTION_DAYS", 90.0),
            ),
            profile=ProfileConfig(
                top=max(5, _int("AGENTMEMORY_PROFILE_TOP", 50)),
                half_life_days=_float("AGENTMEMORY_PROFILE_HALF_LIFE_DAYS", 30.0),
                session_half_life=_float("AGENTMEMORY_PROFILE_SESSION_HALF_LIFE", 1.5),
            ),
            llm=LlmConfig.from_env(),
        )
