"""Session end and the stale-session sweep: write the episodic tier (session summaries).

A summary pass reads a session's records from its project's log, after the position where
the session's last pass stopped (its kept fold, summarize.DigestState), one read per
project however many of its sessions the pass summarizes; a session summarized after every
turn costs reads in proportion to its records, not their square. Nothing is deleted here.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import aclosing
from datetime import datetime, timedelta

from functions.kernel import clock
from functions.kernel.ids import kv_key
from functions.kernel.models.client import ModelClient
from functions.kernel.records import (
    LIFECYCLE_BUCKET,
    Observation,
    Session,
    SessionSummary,
    SummaryAdded,
)
from functions.kernel.store import MemoryStore
from functions.lifecycle import summary_model
from functions.lifecycle.summarize import DigestState, SessionDigest, same_summary
from functions.quarantine.decisions import Decisions

START_MARGIN = 600.0
"""Seconds before a session's recorded start its first pass reads from: a start time is
the agent's clock, the records' positions the server's."""
GET_BATCH = 64


def state_key(session_id: str) -> str:
    return "sdig." + kv_key(session_id)


async def summarize_sessions(
    store: MemoryStore,
    session_ids: set[str],
    now: datetime,
    *,
    cap: int = 32,
    visit: Callable[[Observation], None] | None = None,
    model: ModelClient | None = None,
    stop: Callable[[], bool] | None = None,
    force: bool = False,
    reads: dict[str, int] | None = None,
) -> list[SessionSummary]:
    """Write (or refresh) the summary of each session; unchanged summaries are not rewritten.
    Returns the summaries written. Each session's fold (summarize.DigestState) resumes
    where its last pass stopped, so a pass reads only the records stored since, from its
    project's log (`force`: from the session's start); `reads` gets how many records each
    session's pass read. `visit` sees every observation of the store in one scan (a
    caller's own pass: consolidation) but the held ones (the quarantine's: neither summaries
    nor consolidation take them). With a `model`, the summary is the model's
    (summary_model.py), the keyless one its fallback. When `stop()` turns true (the worker
    drains) the pass ends and nothing is written: the next run does it again."""
    decisions = await Decisions.load(store.client)
    if visit is not None:
        async for obs in store.scan_observations():
            if stop is not None and stop():
                return []
            if not decisions.held(obs.id, obs.trust):
                visit(obs)
    if not session_ids:
        return []
    life = await store.client.bucket(LIFECYCLE_BUCKET)
    sessions: dict[str, Session | None] = {}
    digests: dict[str, SessionDigest] = {}
    resumed: set[str] = set()
    for sid in session_ids:
        sessions[sid] = await store.get(store.sessions, sid, Session)
        state: DigestState | None = None
        if not force:
            state = await life.get(state_key(sid), DigestState)
        if state is not None and await store.presence(store.summaries, sid) != "present":
            state = None  # the summary was forgotten: what it folded goes with it
        if state is not None:
            resumed.add(sid)
        digests[sid] = SessionDigest.resume(state, cap) if state else SessionDigest(sid, cap=cap)
    by_project: dict[str, list[SessionDigest]] = {}
    unplaced: list[SessionDigest] = []
    for sid, d in digests.items():
        s = sessions[sid]
        project = (s.project if s is not None else "") or d.project
        if project:
            by_project.setdefault(project, []).append(d)
        else:
            unplaced.append(d)
    for project, group in by_project.items():
        if not await _read_project(store, project, group, sessions, decisions, stop):
            return []
    if unplaced and not await _read_all(store, unplaced, decisions, stop):
        return []
    written: list[SessionSummary] = []
    for sid, digest in digests.items():
        if reads is not None:
            reads[sid] = digest.read
        session = sessions[sid]
        if session is None and digest.count == 0:
            continue
        summary = digest.summary(session, clock.iso(now))
        if model is not None and model.enabled:
            fresh = [step for _, step in sorted(digest.fresh_steps)] if sid in resumed else None
            summary = await summary_model.word(model, life, summary, since=fresh)
        old = await store.get(store.summaries, sid, SessionSummary)
        if old is None or not same_summary(old, summary):
            # msg id = session + content: a retried write does not index the summary twice.
            await store.publish(
                SummaryAdded(summary=summary), msg_id=f"summary:{sid}:{digest.count}"
            )
            await store.summaries.put(kv_key(sid), summary)
            written.append(summary)
        if digest.read or sid not in resumed:
            await life.put(state_key(sid), digest.state())
    return written


async def _read_project(
    store: MemoryStore,
    project: str,
    group: list[SessionDigest],
    sessions: dict[str, Session | None],
    decisions: Decisions,
    stop: Callable[[], bool] | None,
) -> bool:
    """Fold into each session of one project the records stored after its position, in
    one read of the project's log; False when `stop()` ended it."""
    mine = {d.session_id: d for d in group}
    fresh = [d for d in group if not d.position]
    if fresh:
        starts = [
            clock.parse(s.started_at).timestamp()
            for d in fresh
            if (s := sessions[d.session_id]) is not None and s.started_at
        ]
        since = min(starts) - START_MARGIN if len(starts) == len(fresh) else 0.0
        found = store.project_observations(project, since=max(since, 0.0) or None)
    else:
        found = store.project_observations(project, after=min(d.position for d in group))
    last = 0
    batch: list[tuple[SessionDigest, Observation]] = []
    async with aclosing(found) as records:
        async for seq, obs in records:
            if stop is not None and stop():
                return False
            last = seq
            d = mine.get(obs.session_id)
            if d is None or seq <= d.position:
                continue
            d.read += 1
            batch.append((d, obs))
            if len(batch) >= GET_BATCH:
                await _fold(store, batch, decisions)
    await _fold(store, batch, decisions)
    if last:
        for d in group:
            d.position = max(d.position, last)
    return True


async def _fold(
    store: MemoryStore, batch: list[tuple[SessionDigest, Observation]], decisions: Decisions
) -> None:
    """Fold each record as it is now (rewritten, held or forgotten since it was stored)."""
    current = await store.get_observations(o.id for _, o in batch)
    for d, o in batch:
        obs = current.get(o.id)
        if obs is not None and not decisions.held(obs.id, obs.trust):
            d.fold(obs)
    batch.clear()


async def _read_all(
    store: MemoryStore,
    group: list[SessionDigest],
    decisions: Decisions,
    stop: Callable[[], bool] | None,
) -> bool:
    """Sessions of no known project (no session record, no fold yet): one scan of the
    store, as every summary pass was before folds were kept."""
    mine = {d.session_id: d for d in group}
    async for obs in store.scan_observations():
        if stop is not None and stop():
            return False
        d = mine.get(obs.session_id)
        if d is not None and not decisions.held(obs.id, obs.trust):
            d.read += 1
            d.fold(obs)
    return True


class SweepResult:
    __slots__ = ("abandoned", "summarized")

    def __init__(self, abandoned: list[str], summarized: list[str]) -> None:
        self.abandoned = abandoned
        self.summarized = summarized


async def sweep(
    store: MemoryStore,
    now: datetime,
    stale_hours: float | None,
    *,
    cap: int = 32,
    visit: Callable[[Observation], None] | None = None,
    model: ModelClient | None = None,
    stop: Callable[[], bool] | None = None,
) -> SweepResult:
    """Abandon sessions idle past `stale_hours` (None: abandon none), then summarize every
    closed session that has no summary yet (abandoned now, ended since, or ended while
    summarizing failed) or whose summary covers less than it holds."""
    cutoff = now - timedelta(hours=stale_hours) if stale_hours is not None else clock.EPOCH
    stale: list[str] = []
    closed: dict[str, int] = {}
    async for sid, s in store.sessions.scan(">", Session):
        if s.status == "active" and clock.parse(s.last_seen or s.started_at) < cutoff:
            stale.append(sid)
        elif s.status in ("ended", "abandoned"):
            closed[sid] = s.observation_count
    # closed sessions whose summary is missing, or behind what the session holds (it went
    # on after a summary of its first turns): the pass folds in only what is new
    closed_unsummarized: set[str] = set()
    for sid, count in closed.items():
        summary = await store.get(store.summaries, sid, SessionSummary)
        if summary is None or summary.observation_count < count:
            closed_unsummarized.add(sid)
    abandoned: list[str] = []
    for sid in stale:

        def abandon(cur: Session | None) -> Session | None:
            # Re-check under compare-and-set: the agent may have come back meanwhile.
            if cur is None or cur.status != "active":
                return None
            if clock.parse(cur.last_seen or cur.started_at) >= cutoff:
                return None
            cur.status = "abandoned"
            cur.ended_at = clock.iso(now)
            return cur

        after = await store.sessions.update(sid, abandon, type=Session)
        if after is not None and after.status == "abandoned" and after.ended_at == clock.iso(now):
            abandoned.append(sid)
    todo = closed_unsummarized | set(abandoned)
    written = await summarize_sessions(
        store, todo, now, cap=cap, visit=visit, model=model, stop=stop
    )
    return SweepResult(abandoned, [s.session_id for s in written])
