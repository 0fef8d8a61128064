"""`mem::observe`: validate, judge the words (functions/kernel/trust), sanitize, scrub, dedup,
compress, store, publish — and reply only once JetStream has acknowledged the write. A
record held as suspect is stored and acknowledged like any other; the reply says it was
held.

Idempotency without losing anything, in one JetStream write: the observation id is derived
from the dedup key, so every replay of one event names the same record, and the record is
its `ObservationAdded` message on its project's subject of MEM_EVENTS, published with the
id as msg id (`MemoryStore.add_observation`): JetStream drops a replay within its duplicate
window, and the id index, folded behind the writes, answers for an older replay. A record
found stored (or forgotten: its id stays in the index) is a duplicate.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from datetime import datetime
from typing import Any, Literal, NamedTuple

import msgspec

from engine import FunctionError
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.records import Observation, Session
from functions.kernel.store import STORE_ERRORS, MemoryStore
from functions.kernel.trust import write_path as trust
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


class Built(NamedTuple):
    key: str
    """The dedup key (`dedup_key`)."""
    observation: Observation
    verdict: trust.Verdict
    """The classifier's verdict on the event's words, which `observation.trust` carries."""
    source: trust.Source
    data: dict[str, Any]
    """The event's data as stored (sanitized, scrubbed): what a second opinion reads."""


def build(
    req: ObserveIn, agent_id: str, source: trust.Source | None = None
) -> tuple[str, Observation]:
    """The dedup key and the observation an event makes (see `prepare`)."""
    built = prepare(req, agent_id, source)
    return built.key, built.observation


def prepare(req: ObserveIn, agent_id: str, source: trust.Source | None = None) -> Built:
    """The observation an event makes, its words judged (as `source`, else as its hook
    says), then sanitized and scrubbed: nothing stored holds an invisible character or a
    secret."""
    check_timestamp(req.timestamp)
    data, cut = bounded(req.data)
    source = source or trust.source_of_hook(req.hook_type, data)
    verdict = trust.classify_value(data, source)
    data = trust.stored_value(data)
    text = trust.stored_text
    session_id = text(req.session_id)
    event_id = text(_cap(req.event_id, "event_id")) if req.event_id else None
    project, agent = text(_cap(req.project, "project")), text(agent_id)
    cwd = text(_cap(req.cwd, "cwd"))
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
        trust=trust.trust_of(verdict, source),
    )
    return Built(key, obs, verdict, source, data)


async def reviewed(store: MemoryStore, built: Built) -> Observation:
    """The built observation, held too if the model's second opinion (off by default) says
    its borderline words instruct the agent."""
    obs = built.observation
    verdict = await trust.second_opinion(store.client, built.verdict, built.data, built.source)
    if verdict is not built.verdict:
        obs.trust = trust.trust_of(verdict, built.source)
    return obs


def held_fields(record: Any) -> dict[str, Any]:
    """A write reply's `held` and `reasons` when the record was held (else nothing)."""
    t = record.trust
    return {"held": True, "reasons": list(t.reasons)} if t is not None and t.held else {}


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
        if not await self.store.add_observation(obs):
            return "duplicate"  # stored already, or forgotten
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
        built = prepare(req, self.store.default_agent(req.agent_id))
        key, obs = built.key, await reviewed(self.store, built)
        accepted_at = now_iso()
        counts = self.inbox.counts
        full = self.inbox.disk_full()
        if full:
            # Before writing: nats-server would not answer a write it has no room for, and
            # would refuse that stream's writes until restarted.
            counts.rejected += 1
            raise FunctionError("UNAVAILABLE", full, retryable=True)
        trust.count(self.store.client, obs.trust)
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
                **held_fields(obs),
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
            **held_fields(obs),
        )
