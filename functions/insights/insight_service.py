"""What recurred across sessions, without any LLM: `patterns` (files changed together,
errors and concepts that come back), `generate-rules` (a rules file for agents from
patterns, lessons and the project's conventions) and `reflect`, which turns concept
clusters seen in several sessions into insights, stored and searchable.

An insight's id hashes its project and concepts, so reflecting again on the same evidence
reinforces it instead of adding a copy; its confidence is s / (s + 2) for s sessions.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import defaultdict
from itertools import combinations
from typing import TYPE_CHECKING, Annotated

import msgspec

from engine import Tool, operation
from functions.kernel import clock
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import (
    INSIGHTS_BUCKET,
    LESSONS_BUCKET,
    LIFECYCLE_BUCKET,
    PROFILES_BUCKET,
    Insight,
    Lesson,
    Memory,
    Observation,
    ProjectProfile,
    SessionSummary,
    profile_key,
)
from functions.kernel.views import as_view, view
from functions.lifecycle.decay import current_lesson_strength
from functions.lifecycle.semantic import confidence

if TYPE_CHECKING:
    from functions.lifecycle.lifecycle_service import LifecycleService  # the owner, imported by it


# To the type checker a view is its record (the same attributes).
if TYPE_CHECKING:
    InsightView = Insight
else:
    InsightView = view(Insight)
Unit = Annotated[float, msgspec.Meta(ge=0, le=1)]
_TOKEN = re.compile(r"[a-z0-9_./-]{2,}")
_EDITS = ("file_edit", "file_write")


class PatternsIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 20


class Pattern(msgspec.Struct, kw_only=True):
    type: str
    """co_change, error_repeat or concept_recur"""
    description: str
    files: list[str]
    frequency: int
    """Distinct sessions it was seen in."""
    sessions: list[str]


class PatternsOut(msgspec.Struct, rename="camel", kw_only=True):
    patterns: list[Pattern]
    sessions_scanned: int = 0


class RulesIn(PatternsIn, kw_only=True):
    min_confidence: Unit = 0.5
    """Lessons below this strength do not become rules."""


class RulesOut(msgspec.Struct, kw_only=True):
    rules: list[str]
    content: str
    """The rules as a markdown file (CLAUDE.md, AGENTS.md, .cursorrules...)."""


class ReflectIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    max_clusters: Annotated[int, msgspec.Meta(ge=1, le=20)] = 10


class ReflectOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    new_insights: int
    reinforced: int
    clusters_processed: int
    clusters_skipped: int
    insights: list[InsightView]


class InsightListIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    min_confidence: Unit = 0.0
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 50


class InsightSearchIn(InsightListIn, kw_only=True):
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]


class ScoredInsight(InsightView, kw_only=True):
    """An insight with its relevance to the query."""

    score: float


class InsightsOut(msgspec.Struct, kw_only=True):
    success: bool
    insights: list[ScoredInsight]


REFLECT_TASK = "reflect"
REFLECT_SYSTEM = (
    "You find cross-cutting insights in a cluster of a coding agent's memories that share "
    "concepts across sessions: memory titles, lessons and session summaries. Reply with one "
    'JSON object and nothing else: {"insights": [{"title": "under 60 characters", "content": '
    '"1-3 sentences", "confidence": 0.5}]}. Each insight draws on two or more of the records, '
    "is actionable and is not a restatement of one record; at most 5, the strongest first. "
    "confidence (0-1): how well the records support it. Keep file paths, names and numbers "
    "exactly as given; add nothing the records do not say."
)


class InsightItem(msgspec.Struct, kw_only=True):
    title: str
    content: str
    confidence: float = 0.5


class ReflectReply(msgspec.Struct, kw_only=True):
    insights: list[InsightItem] = msgspec.field(default_factory=list)


class Reflected(msgspec.Struct, kw_only=True):
    """`mem_lifecycle/reflect.<insightId>`: the model's insights for a cluster's evidence."""

    fingerprint: str
    insights: list[InsightItem]


rest = routes("insights")


def insight_id(project: str, concepts: list[str]) -> str:
    h = hashlib.sha256(f"{project}\x1f{'|'.join(sorted(concepts))}".encode()).hexdigest()[:24]
    return f"ins_{h}"


class InsightService(OwnedService["LifecycleService"]):
    """Served beside the worker's main service, over its store."""

    owner: LifecycleService

    async def _observations(self, project: str) -> list[Observation]:
        return await self.store.load_observations(project)

    @operation(
        "mem::patterns",
        description="Detect recurring patterns across sessions: files changed together, "
        "errors and concepts that come back.",
        timeout=300,
        http=rest("POST", "patterns"),
        tool=Tool("memory_patterns", tier="basic"),
    )
    async def patterns(self, req: PatternsIn) -> PatternsOut:
        obs = await self._observations(req.project)
        files_of: dict[str, set[str]] = defaultdict(set)
        errors: dict[str, set[str]] = defaultdict(set)
        concepts: dict[str, set[str]] = defaultdict(set)
        for o in obs:
            if o.type in _EDITS:
                files_of[o.session_id].update(o.files)
            if o.type == "error" and o.title:
                errors[o.title.lower()].add(o.session_id)
            for c in o.concepts:
                if c != o.tool_name.lower():
                    concepts[c].add(o.session_id)
        pairs: dict[tuple[str, str], set[str]] = defaultdict(set)
        for sid, files in files_of.items():
            for a, b in combinations(sorted(files)[:40], 2):
                pairs[(a, b)].add(sid)
        out = [
            Pattern(
                type="co_change",
                description=f"{a} and {b} are changed together",
                files=[a, b],
                frequency=len(s),
                sessions=sorted(s),
            )
            for (a, b), s in pairs.items()
            if len(s) >= 3
        ]
        out += [
            Pattern(
                type="error_repeat",
                description=f"Recurring error: {e}",
                files=[],
                frequency=len(s),
                sessions=sorted(s),
            )
            for e, s in errors.items()
            if len(s) >= 2
        ]
        sessions = {o.session_id for o in obs}
        common = max(3, int(len(sessions) * 0.8))  # in nearly every session: noise, not a pattern
        out += [
            Pattern(
                type="concept_recur",
                description=f"`{c}` comes back across sessions",
                files=[],
                frequency=len(s),
                sessions=sorted(s),
            )
            for c, s in concepts.items()
            if 3 <= len(s) < max(common, 4)
        ]
        out.sort(key=lambda p: (-p.frequency, p.type, p.description))
        return PatternsOut(patterns=out[: req.limit], sessions_scanned=len(sessions))

    @operation(
        "mem::generate-rules",
        description="A rules file for coding agents from recurring patterns, strong lessons "
        "and the project's conventions",
        timeout=300,
        http=rest("POST", "generate-rules"),
    )
    async def generate_rules(self, req: RulesIn) -> RulesOut:
        rules: list[str] = []
        for p in (await self.patterns(req)).patterns:
            if p.type == "co_change":
                rules.append(
                    f"When modifying {p.files[0]}, also check {p.files[1]} "
                    f"(changed together in {p.frequency} sessions)."
                )
            elif p.type == "error_repeat":
                rules.append(
                    f"Watch for: {p.description.removeprefix('Recurring error: ')} "
                    f"(seen in {p.frequency} sessions)."
                )
        now = clock.now()
        cfg = self.owner.config.decay
        async for _, les in (await self.store.client.bucket(LESSONS_BUCKET)).scan(">", Lesson):
            if les.deleted or (req.project and les.project not in ("", req.project)):
                continue
            if current_lesson_strength(les, now, cfg) >= req.min_confidence:
                rules.append(
                    " ".join(les.content.split()) + (f" ({les.context})" if les.context else "")
                )
        if req.project:
            profiles = await self.store.client.bucket(PROFILES_BUCKET)
            prof: ProjectProfile | None = await profiles.get(
                profile_key(req.project), ProjectProfile
            )
            if prof is not None:
                rules += [f"Convention: {c}" for c in prof.conventions]
        rules = list(dict.fromkeys(rules))
        title = f"# Rules for {req.project}" if req.project else "# Rules"
        body = "\n".join(f"- {r}" for r in rules) or "- (nothing recurring yet)"
        content = f"{title}\n\nGenerated by agentmemory from past sessions.\n\n{body}\n"
        return RulesOut(rules=rules, content=content)

    @operation(
        "mem::reflect",
        description="Group memories, lessons and session summaries by the concepts that "
        "recur across sessions and record each cluster as an insight (new or reinforced).",
        timeout=300,
        http=rest("POST", "reflect"),
        tool=Tool("memory_reflect", tier="core"),
    )
    async def reflect(self, req: ReflectIn) -> ReflectOut:
        st = self.store
        # concept -> sessions, and concept -> titles of the records naming it
        sessions: dict[str, set[str]] = defaultdict(set)
        titles: dict[str, list[str]] = defaultdict(list)
        sources: dict[str, list[str]] = defaultdict(list)

        def note(concepts: list[str], session_ids: list[str], title: str, rid: str) -> None:
            for c in {c.lower() for c in concepts if c}:
                sessions[c].update(s for s in session_ids if s)
                if title and len(titles[c]) < 5:
                    titles[c].append(title)
                if len(sources[c]) < 32:
                    sources[c].append(rid)

        for m in await st.load_all(st.memories, Memory):
            if not m.superseded_by and (not req.project or m.project == req.project):
                note(
                    m.concepts, [s for s in m.source_ids if not s.startswith("obs_")], m.title, m.id
                )
        for sm in await st.load_all(st.summaries, SessionSummary):
            if not req.project or sm.project == req.project:
                note(sm.concepts, [sm.session_id], sm.title, f"summary:{sm.session_id}")
        for o in await self._observations(req.project):
            note([c for c in o.concepts if c != o.tool_name.lower()], [o.session_id], "", o.id)
        async for _, les in (await st.client.bucket(LESSONS_BUCKET)).scan(">", Lesson):
            if not les.deleted and (not req.project or les.project == req.project):
                note([*les.tags, *les.concepts], [], les.content[:80], les.id)
        everywhere = max(4, int(len({s for v in sessions.values() for s in v}) * 0.8))
        seeds = sorted(
            (c for c, s in sessions.items() if 2 <= len(s) < everywhere),
            key=lambda c: (-len(sessions[c]), c),
        )
        clusters: list[list[str]] = []
        taken: set[str] = set()
        for c in seeds:
            if c in taken or len(clusters) >= req.max_clusters:
                continue
            near = [
                o
                for o in seeds
                if o != c and o not in taken and _jaccard(sessions[c], sessions[o]) >= 0.6
            ]
            group = [c, *near[:5]]
            taken.update(group)
            clusters.append(group)
        state = await st.client.bucket(INSIGHTS_BUCKET)
        now = clock.iso(clock.now())
        new = reinforced = skipped = 0
        written: list[Insight] = []
        for group in clusters:
            backing = set().union(*(sessions[c] for c in group))
            if len(backing) < 2:
                skipped += 1
                continue
            seen = list(dict.fromkeys(t for c in group for t in titles[c]))[:3]
            names = ", ".join(f"`{c}`" for c in group)
            content = f"{names} recurred across {len(backing)} sessions" + (
                ": " + "; ".join(seen) if seen else "."
            )
            fresh = Insight(
                id=insight_id(req.project, group),
                title=f"Recurring: {', '.join(group[:3])}",
                content=content,
                confidence=confidence(len(backing)),
                concepts=group,
                sessions=len(backing),
                project=req.project,
                source_ids=list(dict.fromkeys(s for c in group for s in sources[c]))[:32],
                created_at=now,
                updated_at=now,
            )
            cluster = [fresh]
            evidence = list(dict.fromkeys(t for c in group for t in titles[c]))[:12]
            worded = await self._worded(fresh, evidence)
            for i, w in enumerate(worded):
                one = (
                    fresh
                    if i == 0
                    else msgspec.structs.replace(
                        fresh, id=insight_id(req.project, [*group, f"#{i}"])
                    )
                )
                one.title, one.content = w.title[:120], w.content[:1500]
                one.confidence = max(0.0, min(1.0, w.confidence))
                if i:
                    cluster.append(one)
            for one in cluster:
                got = await state.update(one.id, functools.partial(_fold, fresh=one), type=Insight)
                assert got is not None
                written.append(got)
                made = got.reinforcements == 0 and got.created_at == now
                new += made
                reinforced += not made
        if written:
            await st.audit("reflect", [i.id for i in written][:50], project=req.project)
        return ReflectOut(
            success=True,
            new_insights=new,
            reinforced=reinforced,
            clusters_processed=len(clusters) - skipped,
            clusters_skipped=skipped,
            insights=as_view(written, list[InsightView]),
        )

    async def _worded(self, fresh: Insight, evidence: list[str]) -> list[InsightItem]:
        """The model's insights (at most 5) for a cluster, cached by its evidence, or none."""
        model = self.owner.model()
        if not model.enabled:
            return []
        fp = hashlib.sha256(
            msgspec.json.encode([fresh.concepts, fresh.sessions, evidence, fresh.content])
        ).hexdigest()[:32]
        life = await self.store.client.bucket(LIFECYCLE_BUCKET)
        cached: Reflected | None = await life.get(f"reflect.{fresh.id}", Reflected)
        if cached is not None and cached.fingerprint == fp:
            return cached.insights
        prompt = "\n".join(
            [
                f"Concepts: {', '.join(fresh.concepts)}",
                f"Sessions they recurred in: {fresh.sessions}",
                f"Draft insight: {fresh.content}",
                "Records of the cluster:",
                *(f"- {t}" for t in evidence),
            ]
        )
        got = await model.ask(REFLECT_TASK, REFLECT_SYSTEM, prompt, ReflectReply)
        items = (
            [i for i in got.insights if i.title.strip() and i.content.strip()][:5] if got else []
        )
        if items:
            await life.put(f"reflect.{fresh.id}", Reflected(fingerprint=fp, insights=items))
        return items

    async def _insights(self, req: InsightListIn) -> list[Insight]:
        state = await self.store.client.bucket(INSIGHTS_BUCKET)
        return [
            i
            async for _, i in state.scan(">", Insight)
            if not i.deleted
            and i.confidence >= req.min_confidence
            and (not req.project or i.project == req.project)
        ]

    @operation(
        "mem::insight-list",
        description="List synthesized insights: what recurred across sessions, from "
        "memories, lessons and summaries.",
        http=rest("GET", "insights"),
        tool=Tool("memory_insight_list"),
    )
    async def insight_list(self, req: InsightListIn) -> InsightsOut:
        items = sorted(await self._insights(req), key=lambda i: (-i.confidence, i.id))
        return InsightsOut(
            success=True,
            insights=[
                ScoredInsight(score=i.confidence, **msgspec.structs.asdict(i))
                for i in items[: req.limit]
            ],
        )

    @operation(
        "mem::insight-search",
        description="Search insights by words (title, content, concepts)",
        http=rest("POST", "insights/search"),
    )
    async def insight_search(self, req: InsightSearchIn) -> InsightsOut:
        terms = set(_TOKEN.findall(req.query.lower()))
        if not terms:  # nothing to match (a single character, punctuation): nothing matches
            return InsightsOut(success=True, insights=[])
        scored: list[tuple[float, Insight]] = []
        for i in await self._insights(req):
            text = set(_TOKEN.findall(f"{i.title} {i.content} {' '.join(i.concepts)}".lower()))
            hit = len(terms & text) / len(terms)
            if hit:
                scored.append((round(hit * i.confidence, 4), i))
        scored.sort(key=lambda x: (-x[0], x[1].id))
        return InsightsOut(
            success=True,
            insights=[
                ScoredInsight(score=s, **msgspec.structs.asdict(i)) for s, i in scored[: req.limit]
            ],
        )


def _fold(cur: Insight | None, fresh: Insight) -> Insight:
    """A new insight, or the stored one reinforced by the same cluster seen again."""
    if cur is None or cur.deleted:
        return fresh
    cur.reinforcements += 1
    cur.title, cur.content, cur.sessions = fresh.title, fresh.content, fresh.sessions
    cur.confidence = max(cur.confidence, fresh.confidence)
    cur.updated_at = fresh.updated_at
    return cur


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0
