"""Episodic tier: a session summary built from the session's observations without an LLM.

`SessionDigest` takes observations in any order and keeps only what the summary needs,
bounded: counters, the first prompts, and up to `MAX_STEPS` steps. It is a fold: its state
(`DigestState`) is kept between passes with the position of the last record it read, so the
next pass reads only what was stored since (the `coveredThrough` watermark of upstream's
incremental summaries): a session summarized after each of N turns costs O(N) reads in all,
not O(N^2).
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field

import msgspec

from functions.kernel.records import Observation, Session, SessionSummary
from functions.kernel.scrub import scrub
from functions.kernel.steps import command_head, command_of, step_of
from functions.kernel.text import clip

MAX_STEPS = 200
MAX_PROMPTS = 3
TOP = 10
MAX_TERMS = 500
"""Files, concepts and commands a kept fold counts at most (the summary shows the top 10)."""
MAX_IDS = 20_000
"""Ids a kept fold remembers (~0.6 MB): a session past the cap (MAX_OBS_PER_SESSION, 500 by
default) this far is an import; a record of it read twice may then count twice."""


class DigestState(msgspec.Struct, kw_only=True, omit_defaults=True):
    """`mem_lifecycle/sdig.<sessionId>`: a session's fold, where the next pass resumes."""

    session_id: str
    position: int = 0
    """The last record read (MemoryStore.project_observations' position)."""
    count: int = 0
    project: str = ""
    agent_id: str = ""
    first: str = ""
    last: str = ""
    prompts: list[tuple[str, str]] = msgspec.field(default_factory=list)
    decisions: list[tuple[str, str]] = msgspec.field(default_factory=list)
    edited: dict[str, int] = msgspec.field(default_factory=dict)
    concepts: dict[str, int] = msgspec.field(default_factory=dict)
    commands: dict[str, int] = msgspec.field(default_factory=dict)
    errors: int = 0
    steps: list[tuple[str, str, str]] = msgspec.field(default_factory=list)
    recent: list[tuple[str, str]] = msgspec.field(default_factory=list)
    ids: list[str] = msgspec.field(default_factory=list)
    """Every record folded (up to MAX_IDS): one read twice (a re-import, a revision) counts
    once. A session holds at most MAX_OBS_PER_SESSION records (the session cap), so this
    stays small."""


@dataclass
class SessionDigest:
    session_id: str
    cap: int = 32
    """Source ids kept (most recent)."""
    count: int = 0
    project: str = ""
    agent_id: str = ""
    first: str = ""
    last: str = ""
    prompts: list[tuple[str, str]] = field(default_factory=list)
    decisions: list[tuple[str, str]] = field(default_factory=list)
    edited: Counter[str] = field(default_factory=Counter)
    concepts: Counter[str] = field(default_factory=Counter)
    commands: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    steps: list[tuple[str, str, str]] = field(default_factory=list)
    """(timestamp, step, observation id), trimmed to the earliest MAX_STEPS."""
    recent: list[tuple[str, str]] = field(default_factory=list)
    """(timestamp, id) min-heap of the `cap` most recent observations."""
    ids: set[str] = field(default_factory=set)
    position: int = 0
    fresh_steps: list[tuple[str, str]] = field(default_factory=list)
    """(timestamp, step) of the records folded by this pass, not kept: what the model's
    incremental summary is told happened since its last one."""
    read: int = 0
    """Records this pass read for the session (kept folds: only those stored since)."""

    @classmethod
    def resume(cls, state: DigestState, cap: int = 32) -> SessionDigest:
        d = cls(state.session_id, cap=cap)
        d.position, d.count, d.project, d.agent_id = (
            state.position, state.count, state.project, state.agent_id,
        )  # fmt: skip
        d.first, d.last, d.errors = state.first, state.last, state.errors
        d.prompts, d.decisions = list(state.prompts), list(state.decisions)
        d.edited, d.concepts = Counter(state.edited), Counter(state.concepts)
        d.commands, d.steps = Counter(state.commands), list(state.steps)
        d.recent, d.ids = list(state.recent), set(state.ids)
        heapq.heapify(d.recent)
        return d

    def state(self) -> DigestState:
        return DigestState(
            session_id=self.session_id,
            position=self.position,
            count=self.count,
            project=self.project,
            agent_id=self.agent_id,
            first=self.first,
            last=self.last,
            prompts=sorted(self.prompts),
            decisions=sorted(self.decisions),
            edited=_top(self.edited),
            concepts=_top(self.concepts),
            commands=_top(self.commands),
            errors=self.errors,
            steps=sorted(self.steps)[:MAX_STEPS],
            recent=list(self.recent),
            ids=sorted(self.ids)[:MAX_IDS],
        )

    @property
    def covered_through(self) -> str:
        """The watermark: the time of the latest record folded (upstream's coveredThrough)."""
        return self.last

    def fold(self, obs: Observation) -> bool:
        """Fold one record in unless it was already; False when it was."""
        if obs.id in self.ids:
            return False
        self.ids.add(obs.id)
        self.add(obs)
        step = step_of(obs)
        if step:
            self.fresh_steps.append((obs.timestamp, scrub(step)))
        return True

    def add(self, obs: Observation) -> None:
        self.count += 1
        self.project = self.project or obs.project
        self.agent_id = self.agent_id or obs.agent_id
        ts = obs.timestamp
        self.first = min(self.first, ts) if self.first else ts
        self.last = max(self.last, ts)
        _push_recent(self.recent, (ts, obs.id), self.cap)
        if obs.type == "prompt":
            _push_earliest(self.prompts, (ts, obs.title.removeprefix("Prompt: ")), MAX_PROMPTS)
        if obs.type == "decision":
            _push_earliest(self.decisions, (ts, obs.title), TOP)
        if obs.type in ("file_edit", "file_write"):
            self.edited.update(obs.files)
        if obs.type == "command":
            head = command_head(command_of(obs))
            if head:
                self.commands[head] += 1
        if obs.type == "error":
            self.errors += 1
        self.concepts.update(obs.concepts)
        step = step_of(obs)
        if step:
            self.steps.append((ts, step, obs.id))
            if len(self.steps) >= 2 * MAX_STEPS:
                # Keep the earliest MAX_STEPS; sorting every 2x keeps this amortised O(1).
                self.steps.sort()
                del self.steps[MAX_STEPS:]

    def ordered_steps(self) -> tuple[list[str], list[str]]:
        raw = sorted(self.steps)[:MAX_STEPS]
        steps: list[str] = []
        sources: list[str] = []
        for _, step, oid in raw:
            if steps and steps[-1] == step:
                continue  # editing one file five times in a row is one step
            steps.append(step)
            sources.append(oid)
        return steps, sources

    def summary(self, session: Session | None, created_at: str) -> SessionSummary:
        project = (session.project if session else "") or self.project
        prompts = [p for _, p in sorted(self.prompts)]
        files = [f for f, _ in self.edited.most_common(TOP)]
        concepts = [c for c, _ in self.concepts.most_common(TOP)]
        commands = [c for c, _ in self.commands.most_common(5)]
        steps, sources = self.ordered_steps()
        title = prompts[0] if prompts else ""
        if not title:
            title = f"Edited {', '.join(files[:3])}" if files else f"Session in {project}"
        parts = [f"{self.count} observations from {self.first} to {self.last}."]
        if prompts:
            parts.append("Asked: " + " / ".join(prompts) + ".")
        if files:
            parts.append("Changed: " + ", ".join(files[:5]) + ".")
        if commands:
            parts.append("Ran: " + ", ".join(commands) + ".")
        if self.errors:
            parts.append(f"{self.errors} error(s).")
        status = session.status if session else "ended"
        if status == "abandoned":
            parts.append("The session was abandoned (no SessionEnd).")
        return SessionSummary(
            session_id=self.session_id,
            project=project,
            agent_id=(session.agent_id if session else "") or self.agent_id,
            title=scrub(clip(title, 120)),
            narrative=scrub(" ".join(parts)),
            decisions=[scrub(d) for _, d in sorted(self.decisions)],
            files=[scrub(f) for f in files],
            concepts=[scrub(c) for c in concepts],
            created_at=created_at,
            steps=[scrub(s) for s in steps],
            source_ids=[i for _, i in sorted(self.recent, reverse=True)],
            step_sources=sources,
            observation_count=self.count,
            status=status,
            covered_through=self.covered_through,
        )


def _top(counts: Counter[str]) -> dict[str, int]:
    return dict(counts.most_common(MAX_TERMS))


def _push_recent(heap: list[tuple[str, str]], item: tuple[str, str], cap: int) -> None:
    if len(heap) < cap:
        heapq.heappush(heap, item)
    elif item > heap[0]:
        heapq.heapreplace(heap, item)


def _push_earliest(items: list[tuple[str, str]], item: tuple[str, str], cap: int) -> None:
    items.append(item)
    if len(items) > cap:
        items.sort()
        del items[cap:]


def same_summary(a: SessionSummary, b: SessionSummary) -> bool:
    """Equal but for when it was written: re-summarizing unchanged data is a no-op."""
    return msgspec.structs.replace(a, created_at="") == msgspec.structs.replace(b, created_at="")
