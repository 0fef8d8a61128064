"""`mem::consolidate`: working -> episodic -> semantic -> procedural, crash-safe and
idempotent.

A run (1) summarizes closed sessions that have no summary yet, (2) plans the semantic and
procedural tiers from streaming scans, (3) keeps only records that are new or changed, (4)
stages them under `stage.<run>.<n>` in the lifecycle bucket, (5) commits by writing the
run marker, and only then (6) applies them to `mem_memories` and MEM_EVENTS. A crash before
the commit leaves the tiers untouched (the next run discards the stage); a crash after it
is rolled forward by the next run. Ids come from cluster keys and unchanged evidence gives
identical records, so a second run stages nothing.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Literal, TypeVar

import msgspec

from engine import Bucket
from functions.kernel import clock
from functions.kernel.models.client import ModelClient
from functions.kernel.records import (
    LIFECYCLE_BUCKET,
    Memory,
    MemoryAdded,
    Observation,
    SessionSummary,
)
from functions.kernel.store import MemoryStore
from functions.lifecycle.episodes import sweep
from functions.lifecycle.extraction_model import Extractor, carried, supersede
from functions.lifecycle.procedural import ProcedurePlanner
from functions.lifecycle.semantic import SemanticPlanner
from functions.lifecycle.wording import Rewriter
from functions.quarantine.chain import summary_record_id
from functions.quarantine.decisions import Decisions

MARKER = "run.consolidate"
CONCURRENCY = 64
"""KV reads and writes in flight at once (round trips, not CPU, bound a run)."""
T = TypeVar("T")
Fault = Callable[[str, int], None]
"""Test seam: called before each staged and each applied write with (phase, index)."""


class RunMarker(msgspec.Struct, kw_only=True):
    run: str
    state: Literal["committed", "applied"]
    count: int
    at: str


class TierCounts(msgspec.Struct, kw_only=True):
    created: int = 0
    updated: int = 0
    unchanged: int = 0


class ConsolidateOut(msgspec.Struct, rename="camel", kw_only=True):
    run: str
    summarized: int
    semantic: TierCounts
    procedural: TierCounts
    recovered: str = ""
    """The id of an interrupted, committed run this one finished first."""
    consolidated: int = 0
    """Memories the model wrote per concept (extraction_model.py), created or updated."""
    llm_calls: int = 0
    llm_failed: int = 0
    """Rewrites that fell back to the deterministic text (error, timeout, bad answer)."""
    extract_calls: int = 0
    extract_failed: int = 0
    """The model's extraction calls (extraction_model.py) that added nothing."""


def _same(a: Memory, b: Memory) -> bool:
    return (a.content, a.title, a.confidence, a.source_ids, a.steps, a.files, a.concepts) == (
        b.content,
        b.title,
        b.confidence,
        b.source_ids,
        b.steps,
        b.files,
        b.concepts,
    )


def merge(planned: Memory, old: Memory | None, at: str) -> Memory:
    """The planned record, keeping what the tier does not own: decay state, pin, birth."""
    if old is None:
        return msgspec.structs.replace(planned, created_at=at, updated_at=at, strength_at=at)
    return msgspec.structs.replace(
        planned,
        created_at=old.created_at or at,
        updated_at=at,
        strength=old.strength,
        strength_at=old.strength_at or at,
        access_count=old.access_count,
        pinned=old.pinned,
        version=old.version + 1,
    )


class Consolidator:
    def __init__(
        self,
        store: MemoryStore,
        *,
        min_sessions: int = 3,
        cap: int = 32,
        fault: Fault | None = None,
        rewriter: Rewriter | None = None,
        model: ModelClient | None = None,
        extractor: Extractor | None = None,
    ) -> None:
        self.store = store
        self.min_sessions = min_sessions
        self.cap = cap
        self.fault = fault
        self.rewriter = rewriter
        """Optional model wording of the planner's text (wording.py); None: its text only."""
        self.model = model
        """Summaries of the sessions this run closes (None: keyless ones)."""
        self.extractor = extractor
        """The model's own memories, facts and procedures (extraction_model.py); None: none."""

    async def run(self, now: datetime) -> ConsolidateOut:
        st = self.store
        life = await st.client.bucket(LIFECYCLE_BUCKET)
        recovered = await self._recover(life)
        at = clock.iso(now)
        semantic = SemanticPlanner(self.min_sessions, self.cap)
        x = self.extractor
        visit: Callable[[Observation], None] = semantic.add
        if x is not None:
            plan, feed = semantic.add, x.add

            def both(o: Observation) -> None:
                plan(o)
                feed(o)

            visit = both

        # One pass over the observations feeds the summaries, the planner and the model's.
        swept = await sweep(st, now, None, cap=self.cap, visit=visit, model=self.model)
        procedural = ProcedurePlanner(self.min_sessions, self.cap)
        decisions = await Decisions.load(st.client)
        async for _, summary in st.summaries.scan(">", SessionSummary):
            if decisions.held(summary_record_id(summary.session_id), summary.trust):
                continue  # quarantined (by chain, most often): no procedure from it
            procedural.add(summary)
            if x is not None:
                x.summary(summary)
        counts = {"semantic": TierCounts(), "procedural": TierCounts()}
        memories = TierCounts()
        changed: list[Memory] = []
        modeled = await x.memories() if x is not None else []
        planned_all = [*semantic.facts(), *procedural.procedures()]
        if self.rewriter is not None:
            if x is not None:  # one budget of calls per run
                self.rewriter.max_calls = max(0, self.rewriter.max_calls - x.calls)
            planned_all = await self.rewriter.apply(planned_all)
        if modeled:
            changed += [
                msgspec.structs.replace(m, updated_at=at)
                for m in supersede(modeled, await _titled(st, modeled))
            ]
        planned_all += modeled
        model_ids = {m.id for m in modeled}
        for chunk in _chunks(planned_all, CONCURRENCY):
            olds = await asyncio.gather(*(st.get(st.memories, p.id, Memory) for p in chunk))
            for planned, old in zip(chunk, olds, strict=True):
                if planned.id in model_ids:  # the planner's own records: as planned
                    planned = carried(planned, old)
                tally = counts.get(planned.type, memories)
                if old is not None and _same(old, planned):
                    tally.unchanged += 1
                    continue
                if old is None:
                    tally.created += 1
                else:
                    tally.updated += 1
                changed.append(merge(planned, old, at))
        del semantic, procedural

        run = f"{now.strftime('%Y%m%dT%H%M%S')}{secrets.token_hex(4)}"
        if changed:
            for start in range(0, len(changed), CONCURRENCY):
                chunk = changed[start : start + CONCURRENCY]
                for i in range(start, start + len(chunk)):
                    self._fault("stage", i)
                await asyncio.gather(
                    *(life.put(f"stage.{run}.{start + j}", m) for j, m in enumerate(chunk))
                )
            await life.put(MARKER, RunMarker(run=run, state="committed", count=len(changed), at=at))
            await self._apply(life, run, len(changed))
        return ConsolidateOut(
            run=run,
            summarized=len(swept.summarized),
            semantic=counts["semantic"],
            procedural=counts["procedural"],
            recovered=recovered,
            consolidated=memories.created + memories.updated,
            llm_calls=self.rewriter.calls if self.rewriter else 0,
            llm_failed=self.rewriter.failed if self.rewriter else 0,
            extract_calls=x.calls if x else 0,
            extract_failed=x.failed if x else 0,
        )

    def _fault(self, phase: str, i: int) -> None:
        if self.fault is not None:
            self.fault(phase, i)

    async def _apply(self, stage: Bucket, run: str, count: int) -> None:
        for start in range(0, count, CONCURRENCY):
            idx = range(start, min(count, start + CONCURRENCY))
            staged = await asyncio.gather(
                *(self.store.get(stage, f"stage.{run}.{i}", Memory) for i in idx)
            )
            for i in idx:
                self._fault("apply", i)
            await asyncio.gather(*(self._write(run, m) for m in staged if m is not None))
        marker = await self.store.get(stage, MARKER, RunMarker)
        if marker is not None and marker.run == run:
            marker.state = "applied"
            await stage.put(MARKER, marker)
        await self._purge_stage()

    async def _write(self, run: str, m: Memory) -> None:
        # The msg id makes a rolled-forward apply publish each record once per run.
        await self.store.publish(MemoryAdded(memory=m), msg_id=f"consolidate:{run}:{m.id}")
        await self.store.memories.put(m.id, m)

    async def _recover(self, stage: Bucket) -> str:
        marker = await self.store.get(stage, MARKER, RunMarker)
        recovered = ""
        if marker is not None and marker.state == "committed":
            await self._apply(stage, marker.run, marker.count)
            recovered = marker.run
        else:
            await self._purge_stage()  # an uncommitted run's stage: never visible, drop it
        return recovered

    async def _purge_stage(self) -> None:
        await (await self.store.client.bucket(LIFECYCLE_BUCKET)).purge("stage.>")


async def _titled(st: MemoryStore, modeled: list[Memory]) -> list[Memory]:
    """The stored memories holding a title one of `modeled` has (same project)."""
    titles = {(m.project, m.title.lower()) for m in modeled}
    return [
        m async for _, m in st.memories.scan(">", Memory) if (m.project, m.title.lower()) in titles
    ]


def _chunks(items: list[T], size: int) -> list[list[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
