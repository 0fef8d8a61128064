"""`mem::observe`: validate, scrub, dedup, compress, store, publish — and reply only once
JetStream has acknowledged the write.

Idempotency without losing anything, in two JetStream writes: the observation id is
derived from the dedup key, so every replay of one event names the same record, and the
record's own KV create (expected last subject sequence 0) is the dedup claim. Its event goes
to its project's subject with the observation id as msg id, so JetStream drops a second copy
within its duplicate window, and a replay of an older record first reads whether its event
is there (`MemoryStore.publish_once`): neither write can happen twice. A replay whose create
finds the record present re-sends the event (the first attempt may have died between the
two writes: then the replay completes it and is "accepted"); a record found deleted
(forgotten, tombstone kept) stays deleted.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from datetime import datetime
from typing import Any, Literal

import msgspec

from engine import FunctionError
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.records import Observation, ObservationAdded, Session
from functions.kernel.scrub import scrub, scrub_value
from functions.kernel.store import STORE_ERRORS, MemoryStore
from functions.memory.compress import compress
from functions.memory.inbox import DiskFull, Inbox, Pending
from functions.memory.wire import ObserveIn, ObserveOut

_hash_encoder = msgspec.json.Encoder(order="sorted")

FIELD_MAX = 32_000
"""Characters kept of one string of an event's `data` (hook bodies may reach 16 MiB)."""
DATA_MAX = 256_000
"""Characters kept of all of an event's `data` strings together."""
ITEMS_MAX = 1000
"""Items kept of one list or object in `data`."""
ID_MAX = {"project": 512, "cwd": 4096, "event_id": 512}


class _Budget:
    def __init__(self) -> None:
        self.left = DATA_MAX
        self.cut: list[str] = []


def _bound(value: Any, path: str, budget: _Budget) -> Any:
    if isinstance(value, str):
        keep = min(FIELD_MAX, budget.left)
        if len(value) <= keep:
            budget.left -= len(value)
            return value
        budget.left -= keep
        if len(budget.cut) < 50:
            budget.cut.append(f"{path} ({len(value)} chars)")
        return value[:keep] + f"\n…[truncated {len(value) - keep} chars]"
    if isinstance(value, dict):
        items = list(value.items())
        out = {k: _bound(v, f"{path}.{k}", budget) for k, v in items[:ITEMS_MAX]}
        if len(items) > ITEMS_MAX:
            budget.cut.append(f"{path} ({len(items)} keys)")
        return out
    if isinstance(value, list):
        kept = [_bound(v, f"{path}[{i}]", budget) for i, v in enumerate(value[:ITEMS_MAX])]
        if len(value) > ITEMS_MAX:
            budget.cut.append(f"{path} ({len(value)} items)")
        return kept
    return value


def bounded(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`data` with oversize strings, lists and objects cut and marked (`…[truncated N
    chars]` in the text), and the paths that were cut: a hook body of any size becomes an
    observation of bounded size, stored and indexed, never refused."""
    budget = _Budget()
    out = _bound(data, "data", budget)
    return out, budget.cut


def _cap(value: str, name: str) -> str:
    limit = ID_MAX[name]
    return value if len(value) <= limit else value[:limit]


class DedupRecord(msgspec.Struct, kw_only=True):
    obs_id: str
    at: str


# Events of these hooks whose `data` holds exactly these fields were already keyed by
# everything they carry under the first fallback key (session, hook, tool, input, output,
# timestamp): they keep it, so the ids of records stored before the whole-event key stay
# the ids their replays name. Every other event is keyed by all of itself.
_COMPLETE_UNDER_V1 = {
    "post_tool_use": ("tool_name", "tool_input", "tool_output"),
    "post_tool_failure": ("tool_name", "tool_input", "error"),
}


def _v1_complete(hook_type: str, data: dict[str, Any]) -> bool:
    fields = _COMPLETE_UNDER_V1.get(hook_type)
    if fields is None or len(data) != 3 or not all(f in data for f in fields):
        return False
    # v1 read the tool as `tool_name or ""`: only a non-empty string maps back one to one.
    name = data["tool_name"]
    return isinstance(name, str) and bool(name)


def event_id_key(event_id: str) -> str:
    return hashlib.sha256(b"event\0" + event_id.encode()).hexdigest()


def dedup_key(
    event_id: str | None,
    *,
    session_id: str,
    hook_type: str,
    timestamp: str,
    data: dict[str, Any],
    agent_id: str = "",
    project: str = "",
    cwd: str = "",
) -> str:
    """sha256 of the eventId; else of the whole (scrubbed) event, canonical JSON with
    sorted keys, so only a replay of the same event is a duplicate. Arguments are the
    scrubbed values, as stored."""
    if event_id:
        return event_id_key(event_id)
    h = hashlib.sha256()
    if _v1_complete(hook_type, data):
        output = data.get("tool_output", data.get("error"))
        h.update(
            _hash_encoder.encode(
                [
                    "content",
                    session_id,
                    hook_type,
                    data["tool_name"],
                    data["tool_input"],
                    output,
                    timestamp,
                ]
            )
        )
    else:
        h.update(
            _hash_encoder.encode(
                ["event-v2", session_id, hook_type, timestamp, agent_id, project, cwd, data]
            )
        )
    return h.hexdigest()


def observation_id(key: str) -> str:
    return "obs_" + key[:24]


def check_timestamp(value: str) -> None:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise FunctionError(
            "UNPROCESSABLE",
            f"timestamp must be an ISO-8601 date-time, got {value[:40]!r}",
            field="timestamp",
        ) from None


def build(req: ObserveIn, agent_id: str) -> tuple[str, Observation]:
    check_timestamp(req.timestamp)
    data, cut = bounded(req.data)
    data = scrub_value(data)
    session_id = scrub(req.session_id)
    event_id = scrub(_cap(req.event_id, "event_id")) if req.event_id else None
    project, agent = scrub(_cap(req.project, "project")), scrub(agent_id)
    cwd = scrub(_cap(req.cwd, "cwd"))
    key = dedup_key(
        event_id,
        session_id=session_id,
        hook_type=req.hook_type,
        timestamp=req.timestamp,
        data=data,
        agent_id=agent,
        project=project,
        cwd=cwd,
    )
    c = compress(req.hook_type, data)
    if cut:
        c.facts.append("truncated: " + ", ".join(cut[:5]))
    obs = Observation(
        id=observation_id(key),
        session_id=session_id,
        project=project,
        agent_id=agent,
        hook_type=req.hook_type,
        timestamp=req.timestamp,
        type=c.type,
        title=c.title,
        narrative=c.narrative,
        facts=c.facts,
        concepts=c.concepts,
        files=c.files,
        tool_name=c.tool_name,
        importance=c.importance,
        cwd=cwd,
        event_id=event_id or "",
        raw=c.raw,
        truncated=cut,
    )
    return key, obs


class Observer:
    """The write path of one process: the store, its inbox, and sessions it has seen."""

    def __init__(self, store: MemoryStore, inbox: Inbox) -> None:
        self.store = store
        self.inbox = inbox
        self._known_sessions: set[str] = set()
        self.session_counts: Counter[str] = Counter()

    async def store_observation(
        self, key: str, obs: Observation
    ) -> Literal["accepted", "duplicate"]:
        st = self.store
        if await st.kv_create_fast(st.observations, obs.id, obs) is None:
            stored = await st.get(st.observations, obs.id, Observation)
            if stored is None:  # forgotten
                return "duplicate"
            if not await st.publish_once(ObservationAdded(observation=stored)):
                return "duplicate"
        else:
            await st.publish_new(ObservationAdded(observation=obs))
        await self._touch_session(obs)
        return "accepted"

    async def store_pending(self, p: Pending) -> object:
        return await self.store_observation(p.dedup_key, p.observation)

    async def _touch_session(self, obs: Observation) -> None:
        self.session_counts[obs.session_id] += 1
        if obs.session_id in self._known_sessions:
            return
        self._known_sessions.add(obs.session_id)
        await self.store.sessions.create(
            kv_key(obs.session_id),
            Session(
                id=obs.session_id,
                project=obs.project,
                agent_id=obs.agent_id,
                cwd=obs.cwd,
                started_at=obs.timestamp,
                last_seen=obs.timestamp,
            ),
        )

    async def observe(self, req: ObserveIn) -> ObserveOut:
        started = time.monotonic()
        key, obs = build(req, self.store.default_agent(req.agent_id))
        accepted_at = now_iso()
        counts = self.inbox.counts
        full = self.inbox.disk_full()
        if full:
            # Before writing: nats-server would not answer a write it has no room for, and
            # would refuse that stream's writes until restarted.
            counts.rejected += 1
            raise FunctionError("UNAVAILABLE", full, retryable=True)
        try:
            status = await self.store_observation(key, obs)
        except STORE_ERRORS as exc:
            entry = Pending(
                dedup_key=key,
                observation=obs,
                attempts=1,
                last_error=f"{type(exc).__name__}: {exc}"[:300],
                next_at=time.time() + self.inbox.delay(1),
                accepted_at=accepted_at,
            )
            try:
                spooled = self.inbox.put(entry)
            except DiskFull as full_exc:
                counts.rejected += 1
                raise FunctionError("UNAVAILABLE", str(full_exc), retryable=True) from None
            if not spooled:
                counts.rejected += 1
                raise FunctionError(
                    "UNAVAILABLE",
                    "the capture inbox is full and the store is failing; retry later "
                    "(see GET /agentmemory/status)",
                    retryable=True,
                ) from None
            counts.accepted += 1
            return ObserveOut(
                status="retrying",
                observation_id=obs.id,
                boot_id=self.store.boot_id,
                accepted_at=accepted_at,
                durable_after_ms=int(self.inbox.delay(1) * 1000),
            )
        if status == "duplicate":
            counts.duplicates += 1
        else:
            counts.accepted += 1
            counts.completed += 1
        return ObserveOut(
            status=status,
            observation_id=obs.id,
            boot_id=self.store.boot_id,
            accepted_at=accepted_at,
            durable_after_ms=0
            if status == "duplicate"
            else int((time.monotonic() - started) * 1000),
        )
