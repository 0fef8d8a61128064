"""Sessions: start (returns context for the agent), end (a turn's, deferred to the idle
finaliser, or the session's), and the lists the REST API serves."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter

from engine import FunctionError
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.records import Observation, Session
from functions.kernel.store import MemoryStore
from functions.kernel.trust.verdicts import stored_text as scrub  # sanitize, then scrub
from functions.kernel.views import SessionView, as_view
from functions.memory.session_idle import SessionIdle
from functions.memory.settings import memory_settings
from functions.memory.wire import (
    ListIn,
    SessionEndIn,
    SessionEndOut,
    SessionStartIn,
    SessionStartOut,
)

log = logging.getLogger("functions.memory.sessions")

CONTEXT_FUNCTION = "mem::context"
NOT_READY = (
    "(agentmemory: the memory context was not ready within {wait:g} s; memory_recall and "
    "memory_smart_search search the memory)"
)
"""The context a session starts with when none came in time: the agent learns it has a
memory to ask, not that it has none."""


async def start_session(store: MemoryStore, req: SessionStartIn) -> SessionStartOut:
    """The session's record, and the context within AGENTMEMORY_SESSION_START_WAIT of the
    call: both at once, the record written whatever the context does; a context not ready
    by then is left out and the reply says so (a hook waits a bounded time, and an agent
    that gets nothing cannot tell an empty memory from a slow one)."""
    wait = memory_settings().session_start_wait
    started = time.monotonic()
    sid = scrub(req.session_id)
    now = now_iso()
    agent = store.default_agent(req.agent_id)

    def upsert(cur: Session | None) -> Session:
        if cur is None:
            return Session(
                id=sid,
                project=scrub(req.project),
                agent_id=scrub(agent),
                cwd=scrub(req.cwd),
                started_at=now,
                last_seen=now,
            )
        cur.status, cur.ended_at, cur.last_seen = "active", None, now
        if req.project and not cur.project:
            cur.project = scrub(req.project)
        return cur

    context = asyncio.create_task(_context(store, sid, scrub(req.project), agent, wait))
    try:
        session = await store.sessions.update(kv_key(sid), upsert, type=Session)
    except BaseException:
        context.cancel()
        raise
    text, left_out = await context
    log.debug("session %s started in %.3f s", sid, time.monotonic() - started)
    return SessionStartOut(session=as_view(session, SessionView), context=text, left_out=left_out)


async def _context(
    store: MemoryStore, sid: str, project: str, agent: str, wait: float
) -> tuple[str, list[str]]:
    """The retrieval worker's context block and what it left out, within `wait` seconds;
    when it did not answer in time (or no retrieval worker runs), no context and the reply
    says why. Never an error: a session starts without its context."""
    try:
        out = await store.client.call(
            CONTEXT_FUNCTION,
            {"sessionId": sid, "project": project, "agentId": agent},
            timeout=wait,
        )
    except FunctionError as err:
        log.info("no context for session %s: %s", sid, err)
        if err.code == "DEADLINE_EXCEEDED":
            return NOT_READY.format(wait=wait), [f"context (not ready within {wait:g} s)"]
        return "", [f"context ({err.message})"]
    if isinstance(out, dict):
        return str(out.get("context", "")), [str(x) for x in out.get("leftOut", [])]
    return (out, []) if isinstance(out, str) else ("", [])


async def end_session(
    store: MemoryStore, req: SessionEndIn, counts: Counter[str], idle: SessionIdle
) -> SessionEndOut:
    """End a session (`final`, the default: SessionEnd, an explicit end) or a turn of it
    (`final: false`, a Stop hook: the session stays active and ends after its idle period
    of silence, `idle`). An unknown session, or one already ended with nothing new since,
    answers `ended: false` and writes nothing (upstream 0.9.30)."""
    sid = scrub(req.session_id)
    now = now_iso()
    added = counts.pop(sid, 0)
    deferred = not req.final and idle.deferring
    found: dict[str, str] = {}  # what the last attempt of `finish` found (CAS retries)

    def finish(cur: Session | None) -> Session | None:
        found.clear()
        if cur is None:
            found["reason"] = "not_found"
            return None
        if cur.status == "ended" and not added:
            found["reason"] = "already_completed"
            return None
        cur.observation_count += added
        cur.last_seen = now
        if deferred:
            # a turn of a session the sweep abandoned, or that ended before this turn's
            # observations were counted: it is alive again
            cur.status, cur.ended_at = "active", None
        else:
            cur.status, cur.ended_at = "ended", now
        return cur

    try:
        await store.sessions.update(kv_key(sid), finish, type=Session)
    except Exception:
        counts[sid] += added  # keep the delta for the next end
        raise
    if "reason" in found:
        counts[sid] += added  # nothing written: the next flush adds them
        return SessionEndOut(success=True, ended=False, reason=found["reason"])
    if deferred:
        due = await idle.schedule(sid)
        return SessionEndOut(success=True, ended=False, reason="deferred", finalize_at=due)
    return SessionEndOut(success=True, ended=True)


async def flush_counts(
    store: MemoryStore, counts: Counter[str], idle: SessionIdle | None = None
) -> None:
    """Observation counts are kept in memory per process and added on session end, every
    few seconds, and when the process stops. What is taken out is put back if a write fails,
    and observations counted meanwhile stay in `counts` for the next flush. A flush is also
    the sessions' sign of life: `last_seen` moves to now, and a session that had ended
    (the idle finaliser, or the sweep) opens again, to end after its own idle period (when
    `idle` defers ends; upstream reopens a completed session on a new observation)."""
    taken = dict(counts)
    counts.clear()
    reopened: list[str] = []
    now = now_iso()
    try:
        for sid, n in list(taken.items()):

            def add(cur: Session | None, n: int = n, sid: str = sid) -> Session | None:
                if sid in reopened:
                    reopened.remove(sid)
                if cur is None:
                    return None
                cur.observation_count += n
                cur.last_seen = max(cur.last_seen, now)
                if idle is not None and idle.deferring and cur.status != "active":
                    cur.status, cur.ended_at = "active", None
                    reopened.append(sid)
                return cur

            await store.sessions.update(kv_key(sid), add, type=Session)
            del taken[sid]
    finally:
        counts.update(taken)
    if idle is not None:
        for sid in reopened:
            await idle.schedule(sid)


async def list_sessions(store: MemoryStore, req: ListIn) -> list[Session]:
    sessions = await store.load_all(store.sessions, Session)
    sessions = [
        s
        for s in sessions
        if store.visible(s.agent_id, req.agent_id) and (not req.project or s.project == req.project)
    ]
    sessions.sort(key=lambda s: s.last_seen or s.started_at, reverse=True)
    return sessions[req.offset : req.offset + req.limit]


async def list_observations(store: MemoryStore, req: ListIn) -> list[Observation]:
    obs = [
        o
        async for o in store.scan_observations(req.project)
        if store.visible(o.agent_id, req.agent_id)
        and (not req.session_id or o.session_id == req.session_id)
        and (not req.project or o.project == req.project)
    ]
    obs.sort(key=lambda o: o.timestamp)
    return obs[req.offset : req.offset + req.limit]
