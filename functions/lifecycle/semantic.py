"""Semantic tier: facts seen across sessions, found by clustering observations on the files
they touch, the concepts they name, the commands they run and the errors they hit.

A cluster becomes a fact when `min_sessions` distinct sessions support it. The fact's id
is a hash of its cluster key, so re-running consolidation names the same fact; its text
and confidence depend only on the evidence (never on the wall clock), so unchanged
evidence gives an identical record. Memory per cluster is bounded: at most `SESSION_CAP`
session ids and `cap` source ids are kept.
"""

from __future__ import annotations

import hashlib
import heapq
from dataclasses import dataclass, field

from functions.kernel.records import Memory, Observation
from functions.kernel.scrub import scrub
from functions.kernel.steps import command_head, command_of, error_key

SESSION_CAP = 256
"""Distinct sessions counted per cluster; support above it reads as 256+."""
PER_KIND = 200
"""Facts kept per project and kind (the best supported)."""
KINDS = ("file", "command", "error", "concept")


def cluster_id(prefix: str, *parts: str) -> str:
    h = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]
    return f"{prefix}_{h}"


@dataclass
class Cluster:
    kind: str
    key: str
    project: str
    agent_id: str
    count: int = 0
    sessions: set[str] = field(default_factory=set)
    last: str = ""
    recent: list[tuple[str, str]] = field(default_factory=list)

    def add(self, obs: Observation, cap: int) -> None:
        self.count += 1
        if len(self.sessions) < SESSION_CAP:
            self.sessions.add(obs.session_id)
        self.last = max(self.last, obs.timestamp)
        item = (obs.timestamp, obs.id)
        if len(self.recent) < cap:
            heapq.heappush(self.recent, item)
        elif item > self.recent[0]:
            heapq.heapreplace(self.recent, item)


def confidence(sessions: int) -> float:
    """s / (s + 2): 3 sessions -> 0.6, 8 -> 0.8, 18 -> 0.9; never 1."""
    return round(sessions / (sessions + 2.0), 3)


def _text(c: Cluster) -> tuple[str, str]:
    s, n = len(c.sessions), c.count
    more = "+" if s >= SESSION_CAP else ""
    day = c.last[:10]
    if c.kind == "file":
        return (
            f"{c.key} is a hot spot",
            f"`{c.key}` is worked on across {s}{more} sessions ({n} observations, last {day}).",
        )
    if c.kind == "command":
        return (
            f"Runs `{c.key}`",
            f"`{c.key}` is run in {s}{more} sessions ({n} times, last {day}).",
        )
    if c.kind == "error":
        return (
            f"Recurring error: {c.key[:60]}",
            f"The error `{c.key}` recurs in {s}{more} sessions ({n} times, last {day}).",
        )
    return (
        f"Recurring concept: {c.key}",
        f"`{c.key}` comes up in {s}{more} sessions ({n} observations, last {day}).",
    )


@dataclass
class SemanticPlanner:
    min_sessions: int = 3
    cap: int = 32
    clusters: dict[tuple[str, str, str, str], Cluster] = field(default_factory=dict)

    def _cluster(self, kind: str, key: str, obs: Observation) -> None:
        ck = (obs.project, obs.agent_id, kind, key)
        c = self.clusters.get(ck)
        if c is None:
            c = self.clusters[ck] = Cluster(kind, key, obs.project, obs.agent_id)
        c.add(obs, self.cap)

    def add(self, obs: Observation) -> None:
        for f in dict.fromkeys(obs.files):
            self._cluster("file", f, obs)
        if obs.type == "command":
            head = command_head(command_of(obs))
            if head:
                self._cluster("command", head, obs)
        err = error_key(obs)
        if err:
            self._cluster("error", err, obs)
        for c in dict.fromkeys(obs.concepts):
            self._cluster("concept", c.lower(), obs)

    def facts(self) -> list[Memory]:
        best: dict[tuple[str, str, str], list[Cluster]] = {}
        for c in self.clusters.values():
            if len(c.sessions) >= self.min_sessions:
                best.setdefault((c.project, c.agent_id, c.kind), []).append(c)
        out: list[Memory] = []
        for group in best.values():
            group.sort(key=lambda c: (-len(c.sessions), -c.count, c.key))
            for c in group[:PER_KIND]:
                title, content = _text(c)
                out.append(
                    Memory(
                        id=cluster_id("sem", c.project, c.agent_id, c.kind, c.key),
                        content=scrub(content),
                        type="semantic",
                        title=scrub(title),
                        project=c.project,
                        agent_id=c.agent_id,
                        concepts=[scrub(c.key)] if c.kind == "concept" else [],
                        files=[scrub(c.key)] if c.kind == "file" else [],
                        confidence=confidence(len(c.sessions)),
                        source_ids=[i for _, i in sorted(c.recent, reverse=True)],
                    )
                )
        out.sort(key=lambda m: m.id)
        return out
