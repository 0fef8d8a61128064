"""`forget`: by memory id, observation ids or a whole session. Records are deleted (the KV
tombstone keeps a replayed observation from coming back), every index is told through a
`RecordsRemoved` event, and an audit entry is written."""

from __future__ import annotations

from engine import FunctionError
from functions.kernel.ids import kv_key
from functions.kernel.records import Memory, Observation, RecordsRemoved, Session
from functions.kernel.store import MemoryStore
from functions.memory.wire import ForgetIn, ForgetOut


async def forget(
    store: MemoryStore, req: ForgetIn, *, agent_id: str = "", action: str = "forget"
) -> ForgetOut:
    memory_ids = [*([req.memory_id] if req.memory_id else []), *req.memory_ids]
    if not memory_ids and not req.observation_ids and not req.session_id:
        raise FunctionError(
            "BAD_REQUEST",
            "say what to forget: memoryId, memoryIds, observationIds or sessionId",
            field="memoryId",
        )
    removed: list[str] = []
    project = ""
    for mid in dict.fromkeys(memory_ids):
        m = await store.get(store.memories, mid, Memory)
        if m is None or not store.visible(m.agent_id, agent_id):
            continue
        await store.memories.delete(kv_key(mid))
        removed.append(mid)
        project = project or m.project
    obs_ids = list(dict.fromkeys(req.observation_ids))
    if req.session_id:
        obs_ids += [
            o.id
            for o in await store.load_all(store.observations, Observation)
            if o.session_id == req.session_id and o.id not in obs_ids
        ]
    for oid in obs_ids:
        o = await store.get(store.observations, oid, Observation)
        if o is None or not store.visible(o.agent_id, agent_id):
            continue
        await store.observations.delete(kv_key(oid))
        removed.append(oid)
        project = project or o.project
    if req.session_id:
        s = await store.get(store.sessions, req.session_id, Session)
        if s is not None and store.visible(s.agent_id, agent_id):
            await store.sessions.delete(kv_key(req.session_id))
            await store.summaries.delete(kv_key(req.session_id))
            removed.append(req.session_id)
            project = project or s.project
    if removed:
        await store.publish(RecordsRemoved(ids=removed, reason=req.reason or action, action=action))
        await store.audit(action, removed, reason=req.reason, actor=agent_id, project=project)
    return ForgetOut(success=True, deleted=len(removed), ids=removed)
