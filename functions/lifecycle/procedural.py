"""Procedural tier: recurring workflows as ordered steps, mined from session summaries.

Each summary carries its session's ordered steps (`edit <file>`, `run <command>`). A step
sequence of length 2..`MAX_LEN` that occurs in at least `min_sessions` sessions is a
workflow; a shorter one is dropped when a longer workflow containing it has the same
support (we keep the most specific). Source ids are the observations behind the matched
steps in the most recent supporting sessions, capped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from functions.kernel.records import Memory, SessionSummary
from functions.kernel.scrub import scrub
from functions.lifecycle.semantic import cluster_id, confidence

MAX_LEN = 4
PER_PROJECT = 50
SESSION_CAP = 256


@dataclass
class Support:
    sessions: list[tuple[str, str]] = field(default_factory=list)
    """(session time, session id), capped at SESSION_CAP."""
    sources: dict[str, list[str]] = field(default_factory=dict)
    """session id -> observation ids of its matching steps (only for kept sessions)."""


@dataclass
class ProcedurePlanner:
    min_sessions: int = 3
    cap: int = 32
    grams: dict[tuple[str, str, tuple[str, ...]], Support] = field(default_factory=dict)

    def add(self, s: SessionSummary) -> None:
        steps, sources = s.steps, s.step_sources
        if len(sources) != len(steps):
            sources = [""] * len(steps)
        seen: set[tuple[str, ...]] = set()
        for n in range(2, MAX_LEN + 1):
            for i in range(len(steps) - n + 1):
                gram = tuple(steps[i : i + n])
                if gram in seen or len(set(gram)) < n:
                    continue  # count a session once per gram; skip loops (a, b, a)
                seen.add(gram)
                sup = self.grams.setdefault((s.project, s.agent_id, gram), Support())
                if len(sup.sessions) < SESSION_CAP:
                    sup.sessions.append((s.created_at, s.session_id))
                    sup.sources[s.session_id] = [x for x in sources[i : i + n] if x]

    def procedures(self) -> list[Memory]:
        kept: dict[tuple[str, str], list[tuple[tuple[str, ...], Support]]] = {}
        for (project, agent, gram), sup in self.grams.items():
            if len(sup.sessions) >= self.min_sessions:
                kept.setdefault((project, agent), []).append((gram, sup))
        out: list[Memory] = []
        for (project, agent), items in kept.items():
            items.sort(key=lambda x: (-len(x[0]), -len(x[1].sessions), x[0]))
            chosen: list[tuple[tuple[str, ...], Support]] = []
            for gram, sup in items:
                if any(
                    _contains(big, gram) and len(bsup.sessions) >= len(sup.sessions)
                    for big, bsup in chosen
                ):
                    continue
                chosen.append((gram, sup))
            chosen.sort(key=lambda x: (-len(x[1].sessions), -len(x[0]), x[0]))
            for gram, sup in chosen[:PER_PROJECT]:
                out.append(self._memory(project, agent, gram, sup))
        out.sort(key=lambda m: m.id)
        return out

    def _memory(self, project: str, agent: str, gram: tuple[str, ...], sup: Support) -> Memory:
        n = len(sup.sessions)
        more = "+" if n >= SESSION_CAP else ""
        steps = [scrub(s) for s in gram]
        ids: list[str] = []
        for _, sid in sorted(sup.sessions, reverse=True):
            for oid in sup.sources.get(sid, []):
                if oid not in ids and len(ids) < self.cap:
                    ids.append(oid)
        listing = " → ".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
        return Memory(
            id=cluster_id("proc", project, agent, *gram),
            content=f"Workflow seen in {n}{more} sessions: {listing}",
            type="procedural",
            title=f"Workflow: {' → '.join(steps)}"[:120],
            project=project,
            agent_id=agent,
            files=[s[5:] for s in steps if s.startswith("edit ")],
            confidence=confidence(n),
            steps=steps,
            source_ids=ids,
        )


def _contains(big: tuple[str, ...], small: tuple[str, ...]) -> bool:
    n = len(small)
    return len(big) > n and any(big[i : i + n] == small for i in range(len(big) - n + 1))
