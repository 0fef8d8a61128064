"""`GET consolidation/status` (upstream 0.9.30, src/functions/consolidation-status.ts):
whether consolidation runs, its last run, its schedule and thresholds, and each tier's
state with a sentence a user can act on.

Here the pipeline always runs (the model only words its records), so `enabled` is true;
`llmConfigured` says whether a model words them. Upstream's thresholds are named for its
tiers' inputs; ours take evidence from distinct sessions (AGENTMEMORY_CONSOLIDATION_MIN_
SESSIONS), shown under upstream's names. The relations tier is upstream's model pass over
memories; here relations are written by `relations` and `evolve`, so it is `off`."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from engine import Bucket
from functions.kernel.records import Memory, SessionSummary
from functions.kernel.store import MemoryStore
from functions.lifecycle.consolidate import ConsolidateOut
from functions.lifecycle.settings import LifecycleConfig

LAST_RUN = "run.consolidate.last"
"""Lifecycle bucket key of the last run's record (the run marker keeps only committed
runs that changed something)."""
TierState = Literal["off", "waiting", "ready", "ran", "error"]


class LastRun(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    at: str
    tier: str = "all"
    results: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    error: str = ""


class Schedule(msgspec.Struct, rename="camel", kw_only=True):
    interval_ms: int
    cooldown_ms: int = 0
    """Runs are serialised by a job lock instead of a cool-down."""
    decay_days: float


class Thresholds(msgspec.Struct, rename="camel", kw_only=True):
    semantic_min_summaries: int
    procedural_min_patterns: int
    procedural_min_sessions_per_pattern: int


class TierStatus(msgspec.Struct, rename="camel", kw_only=True):
    id: Literal["semantic", "procedural", "relations"]
    label: str
    from_: str = msgspec.field(name="from")
    count: int
    state: TierState
    detail: str


class ConsolidationStatusOut(msgspec.Struct, rename="camel", kw_only=True):
    enabled: bool
    llm_configured: bool
    last_run_at: str | None
    last_run: LastRun | None
    summaries: int
    recurring_patterns: int
    """Procedures made from sessions that repeated a workflow (current ones)."""
    schedule: Schedule | None
    thresholds: Thresholds
    tiers: list[TierStatus]


async def record_run(life: Bucket, at: str, out: ConsolidateOut | None, error: str = "") -> None:
    results: dict[str, dict[str, Any]] = {}
    if out is not None:
        results = {
            "summaries": {"summarized": out.summarized},
            "semantic": msgspec.to_builtins(out.semantic),
            "procedural": msgspec.to_builtins(out.procedural),
        }
    await life.put(LAST_RUN, LastRun(at=at, results=results, error=error[:500]))


async def last_run(life: Bucket) -> LastRun | None:
    raw: Any = await life.get(LAST_RUN)
    try:
        return msgspec.convert(raw, LastRun) if raw is not None else None
    except msgspec.ValidationError:
        return None


def _tier(
    id: Literal["semantic", "procedural"], count: int, inputs: int, need: int, run: LastRun | None
) -> TierStatus:
    label = "Semantic facts" if id == "semantic" else "Procedures"
    source = "observations" if id == "semantic" else "session summaries"
    state: TierState
    if run is not None and run.error:
        state, detail = "error", f"the last run failed: {run.error}"
    elif run is not None and id in run.results:
        r = run.results[id]
        state = "ran"
        detail = (
            f"last run: {r.get('created', 0)} created, {r.get('updated', 0)} updated, "
            f"{r.get('unchanged', 0)} unchanged"
        )
    elif inputs:
        state, detail = "ready", f"{inputs} {source} wait for the next run"
    else:
        state = "waiting"
        detail = f"needs evidence from {need} distinct sessions; none recorded yet"
    return TierStatus(id=id, label=label, from_=source, count=count, state=state, detail=detail)


async def consolidation_status(
    store: MemoryStore, life: Bucket, config: LifecycleConfig
) -> ConsolidationStatusOut:
    run = await last_run(life)
    memories = [m for m in await store.load_all(store.memories, Memory) if not m.superseded_by]
    summaries = len(await store.load_all(store.summaries, SessionSummary))
    semantic = sum(1 for m in memories if m.type == "semantic")
    procedural = sum(1 for m in memories if m.type == "procedural")
    need = config.min_sessions
    return ConsolidationStatusOut(
        enabled=True,
        llm_configured=bool(config.consolidation_llm) and config.llm.enabled,
        last_run_at=run.at if run else None,
        last_run=run,
        summaries=summaries,
        recurring_patterns=procedural,
        schedule=Schedule(
            interval_ms=config.consolidation_interval_ms,
            decay_days=config.decay.half_life_days,
        ),
        thresholds=Thresholds(
            semantic_min_summaries=need,
            procedural_min_patterns=1,
            procedural_min_sessions_per_pattern=need,
        ),
        tiers=[
            _tier("semantic", semantic, await _observations(store), need, run),
            _tier("procedural", procedural, summaries, need, run),
            TierStatus(
                id="relations",
                label="Relations",
                from_="memories",
                count=0,
                state="off",
                detail="relations are written by POST relations and evolve, not by consolidation",
            ),
        ],
    )


async def _observations(store: MemoryStore) -> int:
    return await store.count_observations()
