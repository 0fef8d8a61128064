"""The quarantine's routes: `GET quarantine` (the queue), `POST quarantine/release` and
`POST quarantine/hold` (an owner's decisions, audited, followed by every read model).

The listing and the release are the owner's (REST and the viewer): no MCP tool lists held
text into an agent's context or lets it back in; an agent may hold a record
(`memory_quarantine_hold`), the safe direction.

A hold by hand holds the record and, by chain, what was derived from it; a release lets
it back in, frees what its hold held (unless something else holds them), and hands a
record the feeds skipped when it was written held to them now (`QuarantineChanged`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from engine import FunctionError, Tool, operation
from functions.kernel.clock import now_iso
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import (
    LESSONS_BUCKET,
    Lesson,
    Memory,
    Observation,
    QuarantineChanged,
    SessionSummary,
    Trust,
)
from functions.kernel.store import StoreOwner, write_audit
from functions.kernel.text import clip
from functions.quarantine.chain import Provenance
from functions.quarantine.decisions import (
    CHAIN,
    Decision,
    Decisions,
    Kind,
    bucket,
    is_held,
    key,
    reasons_of,
)
from functions.quarantine.wire import (
    DecideIn,
    DecideOut,
    DecisionView,
    QuarantinedRecord,
    QuarantineIn,
    QuarantineOut,
)

rest = routes("quarantine", headers={"x-agent-id": "agentId"})
EXCERPT = 600
"""Characters of a record's text a listing shows."""
HELD_FUNCTION = "mem::quarantine-held"

Record = Observation | Memory | SessionSummary | Lesson


@dataclass
class Found:
    id: str
    kind: Kind
    record: Record

    @property
    def trust(self) -> Trust | None:
        return self.record.trust

    @property
    def project(self) -> str:
        return self.record.project


def _text(r: Record) -> tuple[str, str]:
    """A record's title and its text, as stored."""
    if isinstance(r, Observation):
        body = r.narrative or r.raw
        return r.title, "\n".join(x for x in (r.title, body, *r.facts) if x)
    if isinstance(r, Memory):
        return r.title, "\n".join(x for x in (r.title, r.content) if x)
    if isinstance(r, SessionSummary):
        return r.title, "\n".join(x for x in (r.title, r.narrative, *r.decisions) if x)
    return clip(r.content, 80), "\n".join(x for x in (r.content, r.context) if x)


def _provenance(r: Record) -> dict[str, str]:
    fields: dict[str, str] = {}
    if isinstance(r, Observation):
        fields = {"hookType": r.hook_type, "tool": r.tool_name, "sessionId": r.session_id,
                  "origin": r.origin, "instance": r.instance, "agentId": r.agent_id}  # fmt: skip
    elif isinstance(r, Memory):
        fields = {"type": r.type, "instance": r.instance, "agentId": r.agent_id,
                  "sources": ", ".join(r.source_ids[:5])}  # fmt: skip
    elif isinstance(r, SessionSummary):
        fields = {"sessionId": r.session_id, "agentId": r.agent_id}
    else:
        fields = {"source": r.source, "agentId": r.agent_id}
    return {k: v for k, v in fields.items() if v}


def _when(r: Record) -> str:
    if isinstance(r, Observation):
        return r.timestamp
    if isinstance(r, Memory | Lesson):
        return r.updated_at or r.created_at
    return r.created_at


class QuarantineService(OwnedService[StoreOwner]):
    """Served beside the memory worker's main service, over its store."""

    # ---- reading records by id ---------------------------------------------------------
    async def find(self, record_id: str) -> Found | None:
        st = self.store
        if record_id.startswith("summary:"):
            s = await st.get(st.summaries, record_id.removeprefix("summary:"), SessionSummary)
            return Found(record_id, "summary", s) if s is not None else None
        lessons = await st.client.bucket(LESSONS_BUCKET)
        order: list[tuple[Kind, Callable[[], Any]]] = [
            ("observation", lambda: st.get_observation(record_id)),
            ("memory", lambda: st.get(st.memories, record_id, Memory)),
            ("lesson", lambda: st.get(lessons, record_id, Lesson)),
        ]
        if record_id.startswith("mem_"):
            order.insert(0, order.pop(1))
        elif record_id.startswith("lsn_"):
            order.insert(0, order.pop(2))
        for kind, get in order:
            got = await get()
            if got is not None and not (isinstance(got, Lesson) and got.deleted):
                return Found(record_id, kind, got)
        return None

    async def _need(self, record_id: str) -> Found:
        found = await self.find(record_id)
        if found is None:
            raise FunctionError("NOT_FOUND", f"no record {record_id}", field="id")
        return found

    # ---- the queue -------------------------------------------------------------------
    @operation(
        "mem::quarantine-list",
        description="Records kept out of every agent's context: why (the write check's "
        "reasons, a hold by hand, a chain), where they came from, when",
        http=rest("GET", "quarantine"),
    )
    async def listing(self, req: QuarantineIn) -> QuarantineOut:
        st = self.store
        decisions = await Decisions.load(st.client)
        body = {"project": req.project, "since": req.since, "limit": req.limit}
        indexed = await st.client.call(HELD_FUNCTION, body, timeout=30)
        rows: list[tuple[str, str, Kind]] = [
            (r["timestamp"], r["id"], r["kind"]) for r in indexed.get("records", [])
        ]
        total = int(indexed.get("total", 0))
        lessons = await st.client.bucket(LESSONS_BUCKET)
        async for _, lesson in lessons.scan(">", Lesson):
            if lesson.deleted or not decisions.held(lesson.id, lesson.trust):
                continue
            if req.project and lesson.project != req.project:
                continue
            at = lesson.updated_at or lesson.created_at
            if not req.since or at >= req.since:
                rows.append((at, lesson.id, "lesson"))
                total += 1
        rows.sort(reverse=True)
        rows = rows[: req.limit]
        if req.include_released:
            released = sorted(
                ((d.at, d.id, d.kind) for d in decisions.by_id.values() if d.state == "released"
                 and (not req.project or d.project == req.project)
                 and (not req.since or d.at >= req.since)),
                reverse=True,
            )  # fmt: skip
            rows += released[: req.limit]
        out: list[QuarantinedRecord] = []
        for _, rid, _kind in rows:
            found = await self.find(rid)
            if found is not None:
                out.append(self._row(found, decisions.get(rid)))
        return QuarantineOut(records=out, total=total)

    def _row(self, found: Found, decision: Decision | None) -> QuarantinedRecord:
        r = found.record
        title, text = _text(r)
        trust = found.trust
        return QuarantinedRecord(
            id=found.id,
            kind=found.kind,
            project=r.project,
            session_id=getattr(r, "session_id", ""),
            timestamp=_when(r),
            title=title,
            excerpt=clip(text, EXCERPT),
            held=is_held(trust, decision),
            reasons=reasons_of(trust, decision),
            source=trust.source if trust is not None else "",
            provenance=_provenance(r),
            decision=DecisionView(state=decision.state, by=decision.by, at=decision.at,
                                  reason=decision.reason)
            if decision is not None and decision.state else None,
            chain=list(decision.chain) if decision is not None else [],
            derived=list(decision.derived) if decision is not None else [],
        )  # fmt: skip

    # ---- decisions -------------------------------------------------------------------
    async def _update(
        self, record_id: str, kind: Kind, project: str, change: Callable[[Decision], None]
    ) -> Decision:
        state = await bucket(self.store.client)

        def apply(cur: Decision | None) -> Decision:
            d = cur or Decision(id=record_id, kind=kind, project=project)
            change(d)
            return d

        out: Decision | None = await state.update(key(record_id), apply, type=Decision)
        assert out is not None  # `apply` always returns a value
        return out

    @operation(
        "mem::quarantine-hold",
        description="Quarantine a record by hand: kept out of every agent's context, with "
        "what was derived from it (audited)",
        http=rest("POST", "quarantine/hold"),
        tool=Tool("memory_quarantine_hold"),
    )
    async def hold(self, req: DecideIn) -> DecideOut:
        found = await self._need(req.id)
        by, at = req.agent_id or "owner", now_iso()
        provenance = await Provenance.read(self.store.client)
        derived, cut = provenance.derived(found.id)
        ids = [d.id for d in derived]

        def mine(d: Decision) -> None:
            d.state, d.by, d.at, d.reason = "held", by, at, req.reason
            d.derived = list(dict.fromkeys([*d.derived, *ids]))

        root = await self._update(found.id, found.kind, found.project, mine)
        for d in derived:

            def chained(cur: Decision) -> None:
                if found.id not in cur.chain:
                    cur.chain.append(found.id)
                if cur.state == "released":  # a new hold upstream outranks an old release
                    cur.state = ""

            await self._update(d.id, d.kind, d.project, chained)
        held = {found.id: reasons_of(found.trust, root), **{i: [CHAIN] for i in ids}}
        await self.store.publish(QuarantineChanged(held=held))
        await write_audit(
            self.store.audit_log, "quarantine-hold", [found.id], reason=req.reason, actor=by,
            project=found.project, details={"kind": found.kind, "derived": ids, "cut": cut},
        )  # fmt: skip
        return DecideOut(success=True, id=found.id, kind=found.kind, held=True,
                         held_now=list(held), chain_cut=cut)  # fmt: skip

    @operation(
        "mem::quarantine-release",
        description="Release a quarantined record: it flows into context and search again, "
        "with what its hold held (audited)",
        http=rest("POST", "quarantine/release"),
    )
    async def release(self, req: DecideIn) -> DecideOut:
        found = await self._need(req.id)
        by, at = req.agent_id or "owner", now_iso()
        before = await self._decision(found.id)
        refeed = found.trust is not None and found.trust.held and not (before and before.refed)

        def mine(d: Decision) -> None:
            d.state, d.by, d.at, d.reason = "released", by, at, req.reason
            d.refed = d.refed or refeed
            d.derived = []

        root = await self._update(found.id, found.kind, found.project, mine)
        released = [found.id]
        for rid in before.derived if before is not None else []:
            d = await self._decision(rid)
            if d is None:
                continue

            def unchained(cur: Decision) -> None:
                cur.chain = [c for c in cur.chain if c != found.id]

            after = await self._update(rid, d.kind, d.project, unchained)
            other = await self.find(rid)
            if other is not None and not is_held(other.trust, after):
                released.append(rid)
        event = QuarantineChanged(released=released)
        if refeed and isinstance(found.record, Observation):
            event.observations = [found.record]
        elif refeed and isinstance(found.record, Memory):
            event.memories = [found.record]
        await self.store.publish(event)
        await write_audit(
            self.store.audit_log, "quarantine-release", [found.id], reason=req.reason, actor=by,
            project=found.project,
            details={"kind": found.kind, "released": released[1:],
                     "verdict": msgspec.to_builtins(found.trust) if found.trust else {}},
        )  # fmt: skip
        return DecideOut(success=True, id=found.id, kind=found.kind,
                         held=is_held(found.trust, root), released_now=released)  # fmt: skip

    async def _decision(self, record_id: str) -> Decision | None:
        state = await bucket(self.store.client)
        got: Decision | None = await state.get(key(record_id), Decision)
        return got
