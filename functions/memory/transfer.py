"""Export and import: one JSON document with sessions, observations (by session),
memories and summaries. Import judges the words of every record as third-party text
(functions/kernel/trust), sanitizes and scrubs every string before anything is stored, and
applies a strategy: merge (imported records win), skip (existing records win), replace
(delete everything visible first; audited)."""

from __future__ import annotations

from typing import Any

import msgspec

from engine import FunctionError
from functions.kernel.clock import now_iso
from functions.kernel.ids import kv_key
from functions.kernel.records import (
    Memory,
    MemoryAdded,
    Observation,
    RecordsRemoved,
    Session,
    SessionSummary,
    SummaryAdded,
)
from functions.kernel.store import MemoryStore
from functions.kernel.trust import write_path as trust
from functions.kernel.views import MemoryView, ObservationView, SessionView, SummaryView, as_view
from functions.memory.wire import (
    EXPORT_LIMIT_BYTES,
    ExportIn,
    ExportOut,
    ImportCounts,
    ImportIn,
    ImportOut,
    Pagination,
    from_wire,
)

FORMAT = "agentmemory-nats/1"


async def export(store: MemoryStore, req: ExportIn) -> ExportOut:
    def keep(agent: str, project: str) -> bool:
        return store.visible(agent, req.agent_id) and (not req.project or project == req.project)

    sessions = [
        s for s in await store.load_all(store.sessions, Session) if keep(s.agent_id, s.project)
    ]
    sessions.sort(key=lambda s: (s.started_at, s.id))
    page = sessions[req.offset : req.offset + req.max_sessions]
    wanted = {s.id for s in page}
    by_session: dict[str, list[Observation]] = {}
    async for o in store.scan_observations(req.project):
        if o.session_id in wanted and keep(o.agent_id, o.project):
            by_session.setdefault(o.session_id, []).append(o)
    for lst in by_session.values():
        lst.sort(key=lambda o: o.timestamp)
    first = req.offset == 0
    memories = (
        [m for m in await store.load_all(store.memories, Memory) if keep(m.agent_id, m.project)]
        if first
        else []
    )
    summaries = [
        s
        for s in await store.load_all(store.summaries, SessionSummary)
        if s.session_id in wanted and keep(s.agent_id, s.project)
    ]
    nxt = req.offset + len(page)
    out = ExportOut(
        version=FORMAT,
        exported_at=now_iso(),
        sessions=as_view(page, list[SessionView]),
        observations=as_view(by_session, dict[str, list[ObservationView]]),
        memories=as_view(memories, list[MemoryView]),
        summaries=as_view(summaries, list[SummaryView]),
        total_sessions=len(sessions),
        offset=req.offset,
        next_offset=nxt if nxt < len(sessions) else None,
        pagination=Pagination(
            offset=req.offset,
            limit=req.max_sessions,
            total=len(sessions),
            has_more=nxt < len(sessions),
        ),
    )
    return oversized(out) or out


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def oversized(doc: ExportOut) -> ExportOut | None:
    """Upstream's 413 body when `doc` would be over EXPORT_LIMIT_BYTES: measured collection
    by collection (the one that crossed the limit is `stoppedAt`), then as a whole."""
    total, stopped = 0, ""
    parts: list[tuple[str, object]] = [
        ("sessions", doc.sessions),
        ("memories", doc.memories),
        ("summaries", doc.summaries),
    ]
    if isinstance(doc.observations, dict):
        parts += [("observations", lst) for lst in doc.observations.values()]
    for name, part in parts:
        total += len(msgspec.json.encode(part))
        if total > EXPORT_LIMIT_BYTES:
            stopped = name
            break
    if not stopped:
        total = len(msgspec.json.encode(doc))
        if total <= EXPORT_LIMIT_BYTES:
            return None
    out = ExportOut(
        success=False,
        error=f"Response is {_mib(total)}, over the ~{_mib(EXPORT_LIMIT_BYTES)} limit of one "
        "reply; narrow the range with ?maxSessions / ?offset (or ?project).",
        oversized=True,
        bytes=total,
        limit_bytes=EXPORT_LIMIT_BYTES,
    )
    if stopped:
        out.stopped_at = stopped
    return out


def _records(doc: dict[str, Any], name: str, type_: Any) -> list[Any]:
    raw = doc.get(name) or []
    if name == "observations" and isinstance(raw, dict):
        raw = [o for lst in raw.values() if isinstance(lst, list) for o in lst]
    if not isinstance(raw, list):
        raise FunctionError("UNPROCESSABLE", f"{name} must be a list", field=f"data.{name}")
    out: list[Any] = []
    for i, item in enumerate(raw):
        try:
            out.append(from_wire(item, type_))
        except (msgspec.ValidationError, TypeError) as exc:
            raise FunctionError(
                "UNPROCESSABLE",
                f"{name}[{i}] is not a valid record: {exc}",
                field=f"data.{name}[{i}]",
            ) from None
    return out


async def import_(store: MemoryStore, req: ImportIn) -> ImportOut:
    doc = req.data if req.data is not None else req.export_data
    if doc is None:
        # 422, not 400: the request has the declared shape, it only names nothing to import
        raise FunctionError("UNPROCESSABLE", "the export document goes in `data`", field="data")
    sections = ("sessions", "observations", "memories", "summaries")
    if not isinstance(doc, dict) or not any(k in doc for k in (*sections, "version")):
        found = ", ".join(sorted(doc)[:10]) if isinstance(doc, dict) else type(doc).__name__
        raise FunctionError(
            "UNPROCESSABLE",
            f"not an agentmemory export: it holds none of {', '.join(sections)} "
            f"(found: {found or 'nothing'}); `agentmemory export` writes one",
            field="data",
        )
    # The words of each record are judged first (an export file is third-party text, and
    # its `trust` may hold a record, never clear one); every string is sanitized and scrubbed
    # before anything is hashed or stored.
    sessions = [trust.stored_record(s) for s in _records(doc, "sessions", Session)]
    observations = [trust.vet(o, trust.IMPORT) for o in _records(doc, "observations", Observation)]
    memories = [trust.vet(m, trust.IMPORT) for m in _records(doc, "memories", Memory)]
    summaries = [trust.vet(s, trust.IMPORT) for s in _records(doc, "summaries", SessionSummary)]
    if store.isolated:
        agent = store.default_agent(req.agent_id)
        every: list[Any] = [*sessions, *observations, *memories, *summaries]
        for rec in every:
            rec.agent_id = agent

    if req.strategy == "replace":
        await _wipe(store, req.agent_id)

    counts = {"sessions": 0, "observations": 0, "memories": 0, "summaries": 0}
    skipped = 0
    merge = req.strategy != "skip"

    async def write(state: Any, key: str, value: Any) -> bool:
        if merge:
            await state.put(kv_key(key), value)
            return True
        return await state.create(kv_key(key), value) is not None

    for s in sessions:
        if await write(store.sessions, s.id, s):
            counts["sessions"] += 1
        else:
            skipped += 1
    for o in observations:
        # One write: the record is its event. Over a forgotten id too, as the KV put of an
        # import always did (an import is the owner's say-so).
        if not await store.put_observation(o, replace=merge, revive=True):
            skipped += 1
            continue
        trust.count(store.client, o.trust)
        counts["observations"] += 1
    for m in memories:
        if not await write(store.memories, m.id, m):
            skipped += 1
            continue
        if not m.superseded_by:
            await store.publish(MemoryAdded(memory=m))
        trust.count(store.client, m.trust)
        counts["memories"] += 1
    for sm in summaries:
        if not await write(store.summaries, sm.session_id, sm):
            skipped += 1
            continue
        await store.publish(SummaryAdded(summary=sm))
        trust.count(store.client, sm.trust)
        counts["summaries"] += 1
    return ImportOut(
        success=True, strategy=req.strategy, imported=ImportCounts(**counts), skipped=skipped
    )


async def _wipe(store: MemoryStore, agent_id: str) -> None:
    removed: list[str] = []
    visible = [o.id async for o in store.scan_observations() if store.visible(o.agent_id, agent_id)]
    removed.extend(o.id for o in await store.forget_observations(visible))
    kinds: tuple[tuple[Any, Any], ...] = (
        (store.memories, Memory),
        (store.sessions, Session),
    )
    for state, type_ in kinds:
        for rec in await store.load_all(state, type_):
            if store.visible(rec.agent_id, agent_id):
                await state.delete(kv_key(rec.id))
                removed.append(rec.id)
    for sm in await store.load_all(store.summaries, SessionSummary):
        if store.visible(sm.agent_id, agent_id):
            await store.summaries.delete(kv_key(sm.session_id))
    if removed:
        await store.publish(RecordsRemoved(ids=removed, reason="import-replace"))
    await store.audit(
        "import-replace", removed, reason="POST import strategy=replace", actor=agent_id
    )
