"""Auto-forget planning: which records to remove, and why. Pure: given records and `now`,
say what goes; the removal itself goes through the memory write path's `forget` (delete,
RecordsRemoved event to every index, audit entry).

Rules, in order:
- ttl: a memory whose `ttl_days` have passed since it was created.
- superseded: a memory replaced by a newer version more than `superseded_grace_days` ago.
- contradiction: two live memories of the same project, agent and type naming exactly the
  same non-empty concept set; the newer supersedes the older (consolidated tiers are
  excluded: their ids are their cluster keys).
- fading: a memory whose decayed strength fell below the cold tier.
- low-value: an observation older than `low_value_days` with importance at most
  `low_value_importance`.
Pinned memories are never removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from functions.kernel import clock
from functions.kernel.records import Memory, Observation
from functions.lifecycle.decay import COLD, decayed, half_life
from functions.lifecycle.settings import DecayConfig, ForgetConfig

CONSOLIDATED = ("semantic", "procedural")


@dataclass
class ForgetPlan:
    memories: dict[str, list[str]] = field(default_factory=dict)
    """reason -> memory ids"""
    observations: list[str] = field(default_factory=list)

    def add_memory(self, reason: str, mid: str) -> None:
        self.memories.setdefault(reason, []).append(mid)


@dataclass
class MemoryRules:
    cfg: ForgetConfig
    decay: DecayConfig
    now: datetime
    plan: ForgetPlan
    # (project, agent, type, concept set) -> (created_at, id) of the newest seen so far
    _newest: dict[tuple[str, str, str, tuple[str, ...]], tuple[str, str]] = field(
        default_factory=dict
    )

    def add(self, m: Memory) -> None:
        if m.pinned:
            return
        if m.ttl_days is not None and clock.days_between(m.created_at, self.now) > m.ttl_days:
            self.plan.add_memory("ttl", m.id)
            return
        if m.superseded_by:
            if clock.days_between(m.updated_at, self.now) > self.cfg.superseded_grace_days:
                self.plan.add_memory("superseded", m.id)
            return
        since = m.strength_at or m.updated_at or m.created_at
        if decayed(m.strength, since, self.now, half_life(m, self.decay)) < COLD:
            self.plan.add_memory("fading", m.id)
            return
        if m.type in CONSOLIDATED or not m.concepts:
            return
        key = (m.project, m.agent_id, m.type, tuple(sorted({c.lower() for c in m.concepts})))
        mine = (m.created_at, m.id)
        seen = self._newest.get(key)
        if seen is None:
            self._newest[key] = mine
        elif mine > seen:
            self._newest[key] = mine
            self.plan.add_memory("contradiction", seen[1])
        else:
            self.plan.add_memory("contradiction", m.id)


def low_value(o: Observation, cfg: ForgetConfig, now: datetime) -> bool:
    return (
        o.importance <= cfg.low_value_importance
        and clock.days_between(o.timestamp, now) > cfg.low_value_days
    )
