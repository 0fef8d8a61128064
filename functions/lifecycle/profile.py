"""Project profiles, kept up to date from MEM_EVENTS: top concepts, files, commands and
recurring errors per project, the conventions they suggest, counts and last activity.

A term's weight decays on two clocks: event time (it halves every `half_life_days` without
a mention) and the project's sessions (it halves every `session_half_life` sessions that
do not mention it). Time alone cannot tell that a project moved on when the new work
comes the same week as the old: two TypeScript sessions after many Python ones, a day
apart, must lead the profile. A term named in most sessions, the project's core, stays
near the top. Within one session the k-th mention of a term adds 1/k^2 (a session is worth
at most ~1.64 mentions), so breadth across sessions outweighs one long session on one
file, and the order inside a session stays.
Each list keeps only its top `top` terms by current weight, so a profile has a fixed size
however long a project lives. A profile remembers the last stream sequence folded in
(`seq`): a batch replayed after a crash counts nothing twice. Forgetting does not rewind a
profile: its counts are aggregates, not records.

Stored at `mem_profiles/<profile_key(project)>` as `functions.kernel.records.ProjectProfile`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from engine import Bucket, Entry
from functions.kernel import clock
from functions.kernel.records import (
    MemEvent,
    Observation,
    ObservationAdded,
    ProfileTerm,
    ProjectProfile,
    profile_key,
)
from functions.kernel.scrub import scrub
from functions.kernel.steps import command_head, command_of, error_key
from functions.lifecycle.settings import ProfileConfig
from functions.quarantine.feeds import feedable

RECENT_SESSIONS = 16
SHOWN = 15
_LANGUAGES = {
    "py": "Python",
    "ts": "TypeScript",
    "tsx": "TypeScript",
    "js": "JavaScript",
    "jsx": "JavaScript",
    "rs": "Rust",
    "go": "Go",
    "java": "Java",
    "kt": "Kotlin",
    "rb": "Ruby",
    "cs": "C#",
    "cpp": "C++",
    "c": "C",
    "swift": "Swift",
    "php": "PHP",
}
_TEST_RUNNERS = ("pytest", "python -m pytest", "npm test", "pnpm test", "yarn test", "go test",
                 "cargo test", "jest", "vitest", "make test", "uv run", "bun test")  # fmt: skip
_TOOLCHAINS = ("uv", "pip", "poetry", "npm", "pnpm", "yarn", "bun", "cargo", "go", "gradle",
               "mvn", "make", "docker")  # fmt: skip


class _Clock:
    """Where a profile's decay stands: the project's session epoch (it moves while a batch
    is folded, so the lists share it)."""

    def __init__(self, epoch: int, half_life_days: float, session_half_life: float) -> None:
        self.epoch = epoch
        self.half_life_days = half_life_days
        self.session_half_life = session_half_life

    def factor(self, days: float, sessions: int) -> float:
        f = 0.5 ** (days / self.half_life_days) if self.half_life_days > 0 else 1.0
        if self.session_half_life > 0 and sessions > 0:
            f *= 0.5 ** (sessions / self.session_half_life)
        return float(f)


class _Terms:
    """One list of a profile as a dict while a batch is folded (lookups, not scans)."""

    def __init__(self, terms: list[ProfileTerm], clock: _Clock, top: int) -> None:
        self.by_name = {t.name: t for t in terms}
        self.clock = clock
        self.top = top

    def score_at(self, t: ProfileTerm, at: str) -> float:
        days = max(0.0, clock.days_between(t.last, clock.parse(at))) if t.last else 0.0
        return t.score * self.clock.factor(days, self.clock.epoch - t.epoch)

    def bump(self, name: str, at: str) -> None:
        name = name.strip()
        if not name:
            return
        epoch = self.clock.epoch
        t = self.by_name.get(name)
        if t is None:
            self.by_name[name] = ProfileTerm(
                name=scrub(name)[:200], score=1.0, count=1, last=at, epoch=epoch, hits=1
            )
            if len(self.by_name) > 2 * self.top:
                self.trim(at)  # amortised: trimming at 2x keeps a bump O(1)
            return
        # the k-th mention in the same session adds 1/k^2; the first in a new session adds 1
        same = t.epoch == epoch and t.hits > 0
        hits = t.hits + 1 if same else 1
        if at >= t.last:
            t.score = self.score_at(t, at) + 1.0 / (hits * hits)
            t.last = at
        else:  # an older event arriving late counts as of its own time
            late = clock.days_between(at, clock.parse(t.last))
            t.score = t.score * self.clock.factor(0.0, epoch - t.epoch)
            t.score += self.clock.factor(late, 0) / (hits * hits)
        t.epoch, t.hits = epoch, hits
        t.count += 1

    def trim(self, at: str) -> None:
        ranked = sorted(self.by_name.values(), key=lambda t: (-self.score_at(t, at), t.name))
        self.by_name = {t.name: t for t in ranked[: self.top]}

    def ranked(self, at: str) -> list[ProfileTerm]:
        self.trim(at)
        return list(self.by_name.values())


def _fold(p: ProjectProfile, lists: dict[str, _Terms], clock_: _Clock, o: Observation) -> None:
    at = o.timestamp
    p.observations += 1
    p.last_activity = max(p.last_activity, at)
    if o.session_id and o.session_id not in p.recent_sessions:
        p.sessions += 1
        p.epoch += 1
        clock_.epoch = p.epoch
        p.recent_sessions.insert(0, o.session_id)
        del p.recent_sessions[RECENT_SESSIONS:]
    for c in dict.fromkeys(c.lower() for c in o.concepts):
        lists["concepts"].bump(c, at)
    for f in dict.fromkeys(o.files):
        lists["files"].bump(f, at)
    if o.type == "command":
        lists["commands"].bump(command_head(command_of(o)), at)
    err = error_key(o)
    if err:
        lists["errors"].bump(err, at)


def conventions(p: ProjectProfile, weight: Callable[[ProfileTerm], float]) -> list[str]:
    """What the profile suggests about how the project works (upstream's rules, plus the
    toolchain and the test runner from the commands). The lists are in order of current
    weight; `weight` gives a file's, so the main language is the one of the files worked
    on now, not of the most files ever listed."""
    out: list[str] = []
    top = p.files[:SHOWN]
    files = [t.name for t in top]
    langs: dict[str, float] = {}
    for t in top:
        lang = _LANGUAGES.get(t.name.rpartition(".")[2]) if "." in t.name else None
        if lang is not None:
            langs[lang] = langs.get(lang, 0.0) + weight(t)
    if langs:
        lang = max(langs, key=langs.__getitem__)  # ties: the first listed
        if langs[lang] * 2 > sum(langs.values()):
            out.append(f"{lang} project")
    if files and sum("src/" in f for f in files) * 2 > len(files):
        out.append("Standard src/ directory structure")
    if any("test" in f or "spec" in f for f in files):
        out.append("Has test files")
    heads = [t.name for t in p.commands]
    runner = next((h for h in heads if h in _TEST_RUNNERS or h.endswith(" test")), "")
    if runner:
        out.append(f"Tests run with `{runner}`")
    tools = list(dict.fromkeys(h.split()[0] for h in heads if h.split()[0] in _TOOLCHAINS))
    if tools:
        out.append("Toolchain: " + ", ".join(f"`{t}`" for t in tools[:4]))
    out.extend(f"Frequently uses: {t.name}" for t in p.concepts[:5] if t.count >= 3)
    return out


class ProfileFeed:
    name = "profile"

    def __init__(self, state: Bucket, cfg: ProfileConfig) -> None:
        self.state = state
        self.cfg = cfg

    async def apply(self, batch: list[tuple[int, MemEvent]]) -> dict[str, int]:
        if not batch:
            return {"profiles": 0}
        hi = batch[-1][0]
        by_project: dict[str, list[tuple[int, Observation]]] = {}
        for seq, ev in feedable(batch):
            if isinstance(ev, ObservationAdded) and not ev.observation.revision:
                by_project.setdefault(ev.observation.project, []).append((seq, ev.observation))
        projects = list(by_project)
        entries: list[Entry[ProjectProfile] | None] = await asyncio.gather(
            *(self.state.entry(profile_key(p), ProjectProfile) for p in projects)
        )
        written = 0
        for project, cur in zip(projects, entries, strict=True):
            p = cur.value if cur else ProjectProfile(project=scrub(project))
            todo = [o for s, o in by_project[project] if s > p.seq]
            if not todo:
                continue
            clock_ = _Clock(p.epoch, self.cfg.half_life_days, self.cfg.session_half_life)
            lists = {
                name: _Terms(getattr(p, name), clock_, self.cfg.top)
                for name in ("concepts", "files", "commands", "errors")
            }
            for o in todo:
                _fold(p, lists, clock_, o)
            for name, terms in lists.items():
                setattr(p, name, terms.ranked(p.last_activity))
            p.conventions = conventions(
                p, functools.partial(lists["files"].score_at, at=p.last_activity)
            )
            p.updated_at = p.last_activity
            p.seq = hi
            if cur is None:
                await self.state.compare_and_set(profile_key(project), p, 0)
            else:
                await self.state.compare_and_set(profile_key(project), p, cur.revision)
            written += 1
        return {"profiles": written}


def profile_wire(p: ProjectProfile, cfg: ProfileConfig) -> dict[str, Any]:
    """The upstream `mem::profile` shape (topConcepts/topFiles with a frequency, conventions,
    commonErrors, sessionCount, totalObservations), plus commands and decayed scores."""
    terms = _Terms([], _Clock(p.epoch, cfg.half_life_days, cfg.session_half_life), 0)

    def listing(items: list[ProfileTerm], label: str, n: int = SHOWN) -> list[dict[str, Any]]:
        return [
            {
                label: t.name,
                "frequency": t.count,
                "score": round(terms.score_at(t, p.last_activity), 3),
            }
            for t in items[:n]
        ]

    return {
        "project": p.project,
        "updatedAt": p.updated_at,
        "lastActivity": p.last_activity,
        "topConcepts": listing(p.concepts, "concept"),
        "topFiles": listing(p.files, "file"),
        "topCommands": listing(p.commands, "command", 10),
        "conventions": p.conventions,
        "commonErrors": [t.name for t in p.errors[:10]],
        "recurringErrors": listing(p.errors, "error", 10),
        "sessionCount": p.sessions,
        "totalObservations": p.observations,
    }
