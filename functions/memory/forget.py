"""`forget`: by memory id, observation ids or a whole session. Records are deleted (an
observation's bytes erased; its id stays in the index as forgotten, so a replayed event
does not bring it back), every index is told through a `RecordsRemoved` event, and an
audit entry is written. As upstream (0.9.30) the reply says what was asked for but not
found (`notFound`) and what could not be deleted (`failed`, `failures`); only real
deletions are counted and audited."""

from __future__ import annotations

import logging

from engine import Bucket, FunctionError
from functions.kernel.ids import kv_key
from functions.kernel.records import Memory, RecordsRemoved, Session
from functions.kernel.store import STORE_ERRORS, MemoryStore, write_audit
from functions.memory.wire import DeleteFailure, ForgetIn, ForgetOut

log = logging.getLogger("functions.memory.forget")


async def _deleted(state: Bucket, key: str, failures: list[DeleteFailure]) -> bool:
    try:
        await state.delete(kv_key(key))
    except STORE_ERRORS as exc:
        log.warning("could not delete %s: %s", key, exc)
        failures.append(DeleteFailure(id=key))
        return False
    return True


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
    not_found: list[str] = []
    failures: list[DeleteFailure] = []
    project = ""
    asked = list(dict.fromkeys(memory_ids))
    for mid in asked:
        m = await store.get(store.memories, mid, Memory)
        if m is None or not store.visible(m.agent_id, agent_id):
            not_found.append(mid)
            continue
        if await _deleted(store.memories, mid, failures):
            removed.append(mid)
            project = project or m.project
    named = list(dict.fromkeys(req.observation_ids))
    asked += named
    obs_ids = list(named)
    if req.session_id:
        have = set(obs_ids)
        obs_ids += [
            o.id
            async for o in store.scan_observations()
            if o.session_id == req.session_id and o.id not in have
        ]
    try:
        gone = await store.forget_observations(
            obs_ids, keep=lambda o: store.visible(o.agent_id, agent_id)
        )
    except STORE_ERRORS as exc:
        log.warning("could not delete observations %s: %s", obs_ids, exc)
        failures += [DeleteFailure(id=oid) for oid in obs_ids]
        gone = []
    failed = {f.id for f in failures}
    by_id = {o.id: o for o in gone}
    for oid in obs_ids:  # in the order asked
        o = by_id.pop(oid, None)
        if o is None:
            if oid in named and oid not in failed:
                not_found.append(oid)
            continue
        removed.append(oid)
        project = project or o.project
    if req.session_id:
        asked.append(req.session_id)
        s = await store.get(store.sessions, req.session_id, Session)
        if s is None or not store.visible(s.agent_id, agent_id):
            not_found.append(req.session_id)
        elif await _deleted(store.sessions, req.session_id, failures):
            await _deleted(store.summaries, req.session_id, failures)
            removed.append(req.session_id)
            project = project or s.project
    if removed:
        await store.publish(RecordsRemoved(ids=removed, reason=req.reason or action, action=action))
        await write_audit(
            store.audit_log,
            action,
            removed,
            reason=req.reason,
            actor=agent_id,
            project=project,
            details={"notFound": len(not_found)} if not_found else None,
        )
    return ForgetOut(
        success=not failures,
        deleted=len(removed),
        ids=removed,
        not_found=not_found,
        failed=len(failures),
        total=len(asked),
        failures=failures or None,
    )
