"""diagnostics' categories beyond the write path's, as upstream's diagnostics.ts checks them:
lessons, semantic memories and insights with a confidence outside 0..1, procedural memories
without steps, summaries without a title (warnings); a category whose service does not
answer (the coordination layer here: no memory worker runs) is reported skipped, never
passed."""

from __future__ import annotations

from typing import Any

from functions.diagnostics.diagnostics_service import DiagnosticsService
from functions.diagnostics.wire import DiagnoseIn
from functions.kernel.records import (
    INSIGHTS_BUCKET,
    LESSONS_BUCKET,
    Insight,
    Lesson,
    Memory,
    SessionSummary,
)
from functions.kernel.store import MemoryStore
from tests.lifecycle._data import put_memory


async def test_tier_records_out_of_range_are_reported(store: MemoryStore, lifecycle: Any) -> None:
    await put_memory(store, Memory(id="mem_sem", content="HS256 signs tokens", type="semantic",
                                   confidence=1.7))  # fmt: skip
    await put_memory(store, Memory(id="mem_ok", content="fine", type="semantic", confidence=0.4))
    await put_memory(store, Memory(id="mem_proc", content="deploy", type="procedural"))
    await (await store.client.bucket(LESSONS_BUCKET)).put(
        "les_1", Lesson(id="les_1", content="pin versions", strength=2.5)
    )
    await (await store.client.bucket(INSIGHTS_BUCKET)).put(
        "ins_1", Insight(id="ins_1", title="t", content="c", confidence=-0.2)
    )
    await store.summaries.put("s1", SessionSummary(session_id="s1", project="p"))
    await store.sessions.put("s1", {"id": "s1", "project": "p"})

    diag = DiagnosticsService(lifecycle.svc)
    cats = ["lessons", "semantic", "procedural", "insights", "summaries", "actions"]
    out = await diag.diagnose(DiagnoseIn(categories=cats))
    warned = {c.name for c in out.checks if c.status == "warn"}
    assert warned == {
        "lessons-confidence:les_1", "semantic-confidence:mem_sem",
        "procedural-no-steps:mem_proc", "insights-confidence:ins_1", "summary-untitled:s1",
    }  # fmt: skip
    assert out.skipped == ["actions"]  # its service is not running here: not a pass
    assert not any(c.category == "actions" for c in out.checks)
    assert out.summary.warn == 5 and out.summary.fixable == 0
