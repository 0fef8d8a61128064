"""Strength: access reinforces, time decays.

    strength(t) = s0 * 0.5 ** ((t - t0) / half_life)

where `s0` is the stored `strength` and `t0` its `strength_at`. Because exponential decay
composes, the cron job can fold time in whenever it runs (store strength(now), t0 = now)
and the result does not depend on how often it ran. An access first decays to now, then
closes `boost` of the gap to 1:  s = s + boost * (1 - s).

Retention tiers by current strength: hot >= 0.5, warm >= 0.2, cold >= 0.05, below that
`fading` (auto-forget removes fading memories that are not pinned). Pinned memories do not
decay.
"""

from __future__ import annotations

from datetime import datetime

from functions.kernel import clock
from functions.kernel.records import Lesson, Memory
from functions.lifecycle.settings import DecayConfig

HOT, WARM, COLD = 0.5, 0.2, 0.05


def decayed(strength: float, since: str, now: datetime, half_life_days: float) -> float:
    if half_life_days <= 0 or not since:
        return strength
    days = max(0.0, clock.days_between(since, now))
    return float(strength * 0.5 ** (days / half_life_days))


def reinforced(strength: float, boost: float) -> float:
    return min(1.0, strength + boost * (1.0 - strength))


def tier(strength: float) -> str:
    if strength >= HOT:
        return "hot"
    if strength >= WARM:
        return "warm"
    if strength >= COLD:
        return "cold"
    return "fading"


def half_life(m: Memory, cfg: DecayConfig) -> float:
    if m.type in ("semantic", "procedural"):
        return cfg.semantic_half_life_days
    return cfg.half_life_days


def decay_memory(m: Memory, now: datetime, cfg: DecayConfig) -> Memory | None:
    """The memory with time folded into its strength, or None when nothing changes."""
    if m.pinned:
        return None
    since = m.strength_at or m.updated_at or m.created_at
    s = decayed(m.strength, since, now, half_life(m, cfg))
    at = clock.iso(now)
    if abs(s - m.strength) < 1e-9 and m.strength_at:
        return None
    m.strength, m.strength_at = s, at
    return m


def reinforce_memory(m: Memory, now: datetime, cfg: DecayConfig) -> Memory:
    since = m.strength_at or m.updated_at or m.created_at
    s = m.strength if m.pinned else decayed(m.strength, since, now, half_life(m, cfg))
    m.strength = reinforced(s, cfg.reinforce_boost)
    m.strength_at = clock.iso(now)
    m.access_count += 1
    return m


def current_lesson_strength(lesson: Lesson, now: datetime, cfg: DecayConfig) -> float:
    if not cfg.lesson_decay:
        return lesson.strength
    since = lesson.strength_at or lesson.updated_at or lesson.created_at
    return decayed(lesson.strength, since, now, cfg.lesson_half_life_days)


def decay_lesson(lesson: Lesson, now: datetime, cfg: DecayConfig) -> Lesson | None:
    if not cfg.lesson_decay:
        return None
    s = current_lesson_strength(lesson, now, cfg)
    if abs(s - lesson.strength) < 1e-9 and lesson.strength_at:
        return None
    lesson.strength, lesson.strength_at = s, clock.iso(now)
    return lesson


def reinforce_lesson(lesson: Lesson, now: datetime, cfg: DecayConfig) -> Lesson:
    s = current_lesson_strength(lesson, now, cfg)
    lesson.strength = reinforced(s, cfg.reinforce_boost)
    lesson.strength_at = clock.iso(now)
    lesson.reinforcements += 1
    lesson.updated_at = clock.iso(now)
    return lesson
