"""Sessions: start (returns context for the agent) and end (after every assistant turn,
so it must be idempotent), and the lists the REST API serves."""

from __future__ import annotations

import logging
from collections import Counter

from engine import FunctionError
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.records import Observation, Session
from functions.kernel.scrub import scrub
from functions.kernel.store import MemoryStore
from functions.kernel.views import SessionView, as_view
from functions.memory.wire import ListIn, SessionEndIn, SessionStartIn, SessionStartOut, Success

log = logging.getLogger("functions.memory.sessions")

CONTEXT_FUNCTION = "mem::context"
CONTEXT_TIMEOUT = 2.0


async def start_session(store: MemoryStore, req: SessionStartIn) -> SessionStartOut:
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

    session = await store.sessions.update(kv_key(sid), upsert, type=Session)
    context = await _context(store, sid, scrub(req.project), agent)
    return SessionStartOut(session=as_view(session, SessionView), context=context)


async def _context(store: MemoryStore, sid: str, project: str, agent: str) -> str:
    """The retrieval worker's context block, when it runs; a session start never waits
    long for it and never fails because of it."""
    try:
        out = await store.client.call(
            CONTEXT_FUNCTION,
            {"sessionId": sid, "project": project, "agentId": agent},
            timeout=CONTEXT_TIMEOUT,
        )
    except FunctionError as err:
        log.debug("no context for session %s: %s", sid, err)
        return ""
    if isinstance(out, dict):
        return str(out.get("context", ""))
    return out if isinstance(out, str) else ""


async def end_session(store: MemoryStore, req: SessionEndIn, counts: Counter[str]) -> Success:
    sid = scrub(req.session_id)
    now = now_iso()
    added = counts.pop(sid, 0)

    def finish(cur: Session | None) -> Session:
        if cur is None:
            cur = Session(id=sid, project="", started_at=now)
        cur.status, cur.ended_at, cur.last_seen = "ended", now, now
        cur.observation_count += added
        return cur

    try:
        await store.sessions.update(kv_key(sid), finish, type=Session)
    except Exception:
        counts[sid] += added  # keep the delta for the next end
        raise
    return Success()


async def flush_counts(store: MemoryStore, counts: Counter[str]) -> None:
    """Observation counts are kept in memory per process and added on session end, every
    few seconds, and when the process stops. What is taken out is put back if a write fails,
    and observations counted meanwhile stay in `counts` for the next flush."""
    taken = dict(counts)
    counts.clear()
    try:
        for sid, n in list(taken.items()):

            def add(cur: Session | None, n: int = n) -> Session | None:
                if cur is None:
                    return None
                cur.observation_count += n
                return cur

            await store.sessions.update(kv_key(sid), add, type=Session)
            del taken[sid]
    finally:
        counts.update(taken)


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
