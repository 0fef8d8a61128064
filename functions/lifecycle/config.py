"""Lifecycle settings, read from the environment once per process. Every default is stated
here and in docs/LIFECYCLE.md."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


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

    @classmethod
    def from_env(cls) -> LifecycleConfig:
        return cls(
            stale_hours=_float("AGENTMEMORY_SESSION_SWEEP_STALE_HOURS", 4.0),
            consolidation_interval_ms=_int("CONSOLIDATION_INTERVAL_MS", 2 * 3600 * 1000),
            consolidation_llm=_bool("CONSOLIDATION_ENABLED", False),
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
            ),
        )
