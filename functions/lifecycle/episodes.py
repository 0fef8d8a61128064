"""Session end and the stale-session sweep: write the episodic tier (session summaries).

One KV scan of the observations serves every session being summarized in a run, so the
sweep costs one pass however many sessions it closes. Nothing is deleted here.
"""

from __future__ import annotations

from collections.abc import Callable
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
from functions.lifecycle.summarize import SessionDigest, same_summary
from functions.quarantine.decisions import Decisions


async def summarize_sessions(
    store: MemoryStore,
    session_ids: set[str],
    now: datetime,
    *,
    cap: int = 32,
    visit: Callable[[Observation], None] | None = None,
    model: ModelClient | None = None,
    stop: Callable[[], bool] | None = None,
) -> list[SessionSummary]:
    """Write (or refresh) the summary of each session; unchanged summaries are not rewritten.
    Returns the summaries written. `visit` sees every observation of the scan but the held ones
    (the quarantine's: neither summaries nor consolidation take them), so a caller
    needing its own pass (consolidation) shares this one. With a `model`, the summary is the
    model's (summary_model.py), the keyless one its fallback. When `stop()` turns true (the
    worker drains) the scan ends and nothing is written: the next run does it all again (the
    scan reads every observation, a minute at a million: a stop must not wait for it)."""
    if not session_ids and visit is None:
        return []
    digests = {sid: SessionDigest(sid, cap=cap) for sid in session_ids}
    decisions = await Decisions.load(store.client)
    async for obs in store.scan_observations():
        if stop is not None and stop():
            return []
        if decisions.held(obs.id, obs.trust):
            continue  # quarantined: nothing derived from it (functions/quarantine)
        if visit is not None:
            visit(obs)
        d = digests.get(obs.session_id)
        if d is not None:
            d.add(obs)
    written: list[SessionSummary] = []
    for sid, digest in digests.items():
        session = await store.get(store.sessions, sid, Session)
        if session is None and digest.count == 0:
            continue
        summary = digest.summary(session, clock.iso(now))
        if model is not None and model.enabled:
            life = await store.client.bucket(LIFECYCLE_BUCKET)
            summary = await summary_model.word(model, life, summary)
        old = await store.get(store.summaries, sid, SessionSummary)
        if old is not None and same_summary(old, summary):
            continue
        # msg id = session + content: a retried write does not index the summary twice.
        await store.publish(SummaryAdded(summary=summary), msg_id=f"summary:{sid}:{digest.count}")
        await store.summaries.put(kv_key(sid), summary)
        written.append(summary)
    return written


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
    closed session that has no summary yet (abandoned now, or ended while summarizing
    failed)."""
    cutoff = now - timedelta(hours=stale_hours) if stale_hours is not None else clock.EPOCH
    stale: list[str] = []
    closed_unsummarized: set[str] = set()
    async for sid, s in store.sessions.scan(">", Session):
        if s.status == "active" and clock.parse(s.last_seen or s.started_at) < cutoff:
            stale.append(sid)
        elif s.status in ("ended", "abandoned"):
            closed_unsummarized.add(sid)
    if closed_unsummarized:
        have = {
            sid
            for sid in closed_unsummarized
            if await store.presence(store.summaries, sid) == "present"
        }
        closed_unsummarized -= have
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
