"""`GET audit` in upstream's shape (0.9.30): entries newest first, filtered by operation,
date range and free text, each carrying upstream's names beside ours."""

from __future__ import annotations

import asyncio
from datetime import datetime

import msgspec

from engine import FunctionError
from functions.kernel import clock
from functions.kernel.records import AuditEntry
from functions.kernel.store import MemoryStore
from functions.memory.wire import AuditEntryOut, AuditIn, AuditOut

BATCH = 256


def entry_out(e: AuditEntry) -> AuditEntryOut:
    return AuditEntryOut(
        id=e.id,
        at=e.at,
        action=e.action,
        target_ids=e.target_ids,
        reason=e.reason,
        actor=e.actor,
        project=e.project,
        details=e.details,
        timestamp=e.at,
        operation=e.action,
        function_id=f"mem::{e.action}",
        user_id=e.actor,
    )


def _when(value: str | None, field: str) -> str:
    if not value:
        return ""
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise FunctionError("BAD_REQUEST", f"invalid date: {field}", field=field) from None
    return clock.iso(clock.parse(value))


def _wanted(req: AuditIn) -> tuple[str, str, str]:
    """The range as ISO times comparable with `at`, and the lower-cased text to find."""
    return _when(req.date_from, "dateFrom"), _when(req.date_to, "dateTo"), req.q.lower()


def _keeps(e: AuditEntry, req: AuditIn, lo: str, hi: str, q: str) -> bool:
    if req.operation and e.action != req.operation:
        return False
    if (lo and e.at < lo) or (hi and e.at > hi):
        return False
    if q:
        text = " ".join([e.action, e.reason, e.actor, e.project, *e.target_ids]).lower()
        if q not in text and q not in msgspec.json.encode(e.details).decode().lower():
            return False
    return True


async def read_audit(store: MemoryStore, req: AuditIn) -> AuditOut:
    lo, hi, q = _wanted(req)
    filtered = bool(req.operation or lo or hi or q)
    keys = sorted(await store.keys(store.audit_log), reverse=True)
    if lo:  # keys start with the entry's yyyymm: months before the range are skipped
        keys = [k for k in keys if k[:6] >= lo[:4] + lo[5:7]]
    if not filtered:
        keys = keys[req.offset : req.offset + req.limit]
    entries: list[AuditEntry] = []
    skip = req.offset if filtered else 0
    for at in range(0, len(keys), BATCH):  # newest first, until the page is full
        got = await asyncio.gather(
            *(store.get(store.audit_log, k, AuditEntry) for k in keys[at : at + BATCH])
        )
        for e in got:
            if e is None or not _keeps(e, req, lo, hi, q):
                continue
            if skip:
                skip -= 1
                continue
            entries.append(e)
        if len(entries) >= req.limit:
            break
    return AuditOut(entries=[entry_out(e) for e in entries[: req.limit]])
