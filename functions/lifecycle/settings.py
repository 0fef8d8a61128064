"""The lifecycle's settings: summaries, consolidation, decay, forgetting, the graph's
retention and project profiles, read through engine.settings (docs/CONFIG.md lists them;
docs/LIFECYCLE.md says what each does)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from engine.settings import duration, flag, integer, load, number
from functions.kernel.models.settings import Format, ModelSettings, Provider


@dataclass(frozen=True)
class DecayConfig:
    half_life_days: float = duration(
        "AGENTMEMORY_DECAY_HALF_LIFE_DAYS",
        30.0,
        "Half-life of a plain memory's strength without access.",
        unit="days",
    )
    semantic_half_life_days: float = duration(
        "AGENTMEMORY_SEMANTIC_HALF_LIFE_DAYS",
        90.0,
        "Semantic facts and procedures decay slower: many sessions back them.",
        unit="days",
    )
    lesson_half_life_days: float = duration(
        "AGENTMEMORY_LESSON_HALF_LIFE_DAYS", 60.0, "Half-life of a lesson's strength.", unit="days"
    )
    reinforce_boost: float = 0.3
    """An access closes this fraction of the gap to full strength."""
    lesson_decay: bool = flag(
        "LESSON_DECAY_ENABLED", True, "false keeps lessons at full strength when unused."
    )


@dataclass(frozen=True)
class ForgetConfig:
    low_value_days: float = duration(
        "AGENTMEMORY_LOW_VALUE_DAYS",
        30.0,
        "Observations older than this with importance 3 or less are dropped.",
        unit="days",
    )
    low_value_importance: int = 3
    superseded_grace_days: float = duration(
        "AGENTMEMORY_SUPERSEDED_GRACE_DAYS",
        7.0,
        "A superseded memory is kept this long for its version chain, then removed.",
        unit="days",
    )
    batch: int = 256
    """Ids per removal call (one audit entry and one RecordsRemoved event each)."""
    max_obs_per_session: int = integer(
        ("MAX_OBS_PER_SESSION", "AGENTMEMORY_MAX_OBS_PER_SESSION"),
        500,
        "A session above this many observations loses its lowest-value oldest ones (0: off).",
        lo=0,
        clamp=True,
    )
    scheduled: bool = flag(
        "AUTO_FORGET_ENABLED",
        True,
        "false stops the scheduled auto-forget runs (POST auto-forget and evict still run).",
    )
    interval_ms: int = duration(
        "AUTO_FORGET_INTERVAL_MS",
        3_600_000,
        "How often the scheduled auto-forget runs (at least a minute).",
        unit="milliseconds",
        lo=60_000,
        clamp=True,
    )


@dataclass(frozen=True)
class GraphConfig:
    batch: int = integer(
        "AGENTMEMORY_GRAPH_BATCH",
        1000,
        "MEM_EVENTS messages the graph folds per step (the only events held in memory at once).",
        lo=1,
        clamp=True,
    )
    retention_days: float = duration(
        "AGENTMEMORY_GRAPH_RETENTION_DAYS",
        90.0,
        "Expired edges (validTo set) are kept this long; idle unlinked nodes too.",
        unit="days",
    )


@dataclass(frozen=True)
class ProfileConfig:
    top: int = integer(
        "AGENTMEMORY_PROFILE_TOP",
        50,
        "Terms a project profile keeps per list (concepts, files, commands, errors).",
        lo=5,
        clamp=True,
    )
    half_life_days: float = duration(
        "AGENTMEMORY_PROFILE_HALF_LIFE_DAYS",
        30.0,
        "A profile term's score halves after this much event time without a mention.",
        unit="days",
    )
    session_half_life: float = number(
        "AGENTMEMORY_PROFILE_SESSION_HALF_LIFE",
        1.5,
        "... and after this many later sessions of the project without one (0: off).",
        lo=0.0,
    )
    """So what the last sessions did leads even when they came the same day; a term of most
    sessions (the project's core) keeps its place."""


@dataclass(frozen=True)
class LlmConfig:
    """The model consolidation uses: the environment's providers (functions/kernel/models),
    or one given explicitly (`provider`, `api_key`, `base_url`, `model`, `timeout`)."""

    provider: str = ""
    """"openai", "anthropic" (the two wire formats) or "" (the environment's chain)."""
    api_key: str = ""
    base_url: str = ""
    model: str = ""
    timeout: float = duration(
        "CONSOLIDATION_LLM_TIMEOUT_S", 30.0, "Seconds one consolidation model call may take."
    )
    max_calls: int = integer(
        "CONSOLIDATION_LLM_MAX_CALLS",
        20,
        "Model calls per consolidation run; the rest keep deterministic text until later runs.",
        lo=0,
        clamp=True,
    )
    settings: ModelSettings = field(default_factory=ModelSettings)
    """The environment's chain (ModelSettings.from_env); used when no `provider` is given."""

    @property
    def enabled(self) -> bool:
        return bool(self.provider) or self.settings.enabled

    def model_settings(self) -> ModelSettings:
        if not self.provider:
            return self.settings
        fmt: Format = "anthropic" if self.provider == "anthropic" else "openai"
        one = Provider(self.provider, fmt, self.api_key, self.model, self.base_url, self.timeout)
        return ModelSettings(chain=(one,), breaker=self.settings.breaker)


@dataclass(frozen=True)
class LifecycleConfig:
    """Summaries, consolidation, decay, forgetting, the graph and project profiles."""

    stale_hours: float = duration(
        "AGENTMEMORY_SESSION_SWEEP_STALE_HOURS",
        4.0,
        "A session with no activity for this long is abandoned and summarized.",
        unit="hours",
    )
    consolidation_interval_ms: int = duration(
        "CONSOLIDATION_INTERVAL_MS",
        2 * 3600 * 1000,
        "How often consolidation runs (at least a minute).",
        unit="milliseconds",
    )
    consolidation_llm: bool | None = flag(
        "CONSOLIDATION_ENABLED",
        None,
        "Let the model word consolidated facts and procedures (the pipeline runs either way).",
        shown="true when a model provider is configured",
    )
    min_sessions: int = integer(
        "AGENTMEMORY_CONSOLIDATION_MIN_SESSIONS",
        3,
        "A semantic fact or procedure needs evidence from this many distinct sessions.",
        lo=2,
        clamp=True,
    )
    provenance_cap: int = integer(
        "AGENTMEMORY_PROVENANCE_CAP",
        32,
        "Source ids kept per record, node and edge (the most recent).",
        lo=1,
        clamp=True,
    )
    audit_retention_months: int = integer(
        "AGENTMEMORY_AUDIT_RETENTION_MONTHS", 12, "Months of audit entries kept.", lo=1, clamp=True
    )
    decay: DecayConfig = field(default_factory=DecayConfig)
    forget: ForgetConfig = field(default_factory=ForgetConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    profile: ProfileConfig = field(default_factory=ProfileConfig)
    llm: LlmConfig = field(default_factory=LlmConfig)

    @classmethod
    def from_env(cls) -> LifecycleConfig:
        cfg = load(cls)
        models = ModelSettings.from_env()
        # upstream: the model words consolidation whenever a provider is configured, unless
        # CONSOLIDATION_ENABLED=false (the deterministic pipeline runs either way)
        llm = cfg.consolidation_llm
        return dataclasses.replace(
            cfg,
            consolidation_llm=models.enabled if llm is None else llm,
            llm=dataclasses.replace(cfg.llm, settings=models),
        )
