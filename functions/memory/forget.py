"""`forget`: by memory id, observation ids or a whole session. Records are deleted (an
observation's bytes erased; its id stays in the index as forgotten, so a replayed event
does not bring it back), every index is told through a `RecordsRemoved` event, and an
audit entry is written."""

from __future__ import annotations

from engine import FunctionError
from functions.kernel.ids import kv_key
from functions.kernel.records import Memory, RecordsRemoved, Session
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
        have = set(obs_ids)
        obs_ids += [
            o.id
            async for o in store.scan_observations()
            if o.session_id == req.session_id and o.id not in have
        ]
    gone = await store.forget_observations(
        obs_ids, keep=lambda o: store.visible(o.agent_id, agent_id)
    )
    by_id = {o.id: o for o in gone}
    for oid in obs_ids:  # in the order asked
        o = by_id.pop(oid, None)
        if o is not None:
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
