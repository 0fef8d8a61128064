"""Session end and the stale-session sweep, with a driven clock."""

from __future__ import annotations

from functions.kernel.records import Session, SessionSummary
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import SummarizeIn, SweepIn
from tests.lifecycle._data import at, obs, put_obs, put_session


async def test_stale_session_is_abandoned_and_summarized(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await put_session(store, "crashed", at(hours=0))
    await put_session(store, "busy", at(hours=9))
    await put_obs(
        store,
        obs("crashed", 1, type="prompt", title="Prompt: fix the login bug"),
        obs("crashed", 2, files=["src/auth.py"], concepts=["auth"]),
        obs("crashed", 3, type="command", title="Ran: pytest -q tests/test_auth.py"),
        obs("busy", 1, files=["src/db.py"]),
    )
    # Stale after 4 h: ten hours on, the crashed session (last seen 10 h ago) is stale, the
    # busy one (last seen 1 h ago) is not.
    out = await lifecycle.sweep(SweepIn(now=at(hours=10).isoformat(), stale_hours=4))
    assert out["abandoned"] == ["crashed"]
    assert out["summarized"] == ["crashed"]

    crashed = await store.get(store.sessions, "crashed", Session)
    busy = await store.get(store.sessions, "busy", Session)
    assert crashed is not None and crashed.status == "abandoned"
    assert busy is not None and busy.status == "active"
    summary = await store.get(store.summaries, "crashed", SessionSummary)
    assert summary is not None
    assert summary.status == "abandoned"
    assert summary.title == "fix the login bug"
    assert summary.files == ["src/auth.py"]
    assert summary.steps == ["edit src/auth.py", "run pytest"]
    assert await store.get(store.summaries, "busy", SessionSummary) is None
    # deletes nothing
    assert len(await store.load_observations()) == 4

    again = await lifecycle.sweep(SweepIn(now=at(hours=11).isoformat(), stale_hours=4))
    assert again == {"abandoned": [], "summarized": []}


async def test_summarize_writes_title_narrative_decisions_files_and_concepts(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await put_session(store, "s1", at(hours=1), status="ended")
    await put_obs(
        store,
        obs("s1", 1, type="prompt", title="Prompt: add rate limiting"),
        obs("s1", 2, type="decision", title="Use a token bucket per API key"),
        obs("s1", 3, files=["api/limits.py"], concepts=["rate-limit", "redis"]),
        obs("s1", 4, files=["api/limits.py"], concepts=["rate-limit"]),
        obs("s1", 5, type="error", title="Bash failed: ImportError: redis"),
    )
    out = await lifecycle.summarize(SummarizeIn(session_id="s1", now=at(hours=2).isoformat()))
    s = out["summary"]
    assert out["written"] is True
    assert s["title"] == "add rate limiting"
    assert s["decisions"] == ["Use a token bucket per API key"]
    assert s["files"] == ["api/limits.py"]
    assert s["concepts"][0] == "rate-limit"
    assert "5 observations" in s["narrative"] and "1 error(s)" in s["narrative"]
    assert len(s["sourceIds"]) == 5

    again = await lifecycle.summarize(SummarizeIn(session_id="s1", now=at(hours=3).isoformat()))
    assert again["written"] is False  # unchanged observations: nothing rewritten


async def test_a_summary_folds_in_only_what_came_since_and_equals_a_full_pass(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await put_session(store, "inc", at(hours=1))
    await put_obs(
        store,
        obs("inc", 1, type="prompt", title="Prompt: speed up the nightly export"),
        obs("inc", 2, files=["export/job.py"], concepts=["export"]),
    )
    first = await lifecycle.summarize(SummarizeIn(session_id="inc", now=at(hours=2).isoformat()))
    assert first["read"] == 2 and first["summary"]["coveredThrough"] == obs("inc", 2).timestamp
    await put_obs(
        store,
        obs("inc", 3, type="command", title="Ran: pytest -q tests/test_export.py"),
        obs("inc", 4, files=["export/job.py", "export/batch.py"], concepts=["batching"]),
        obs("other", 1, files=["unrelated.py"]),  # another session of the project
    )
    second = await lifecycle.summarize(SummarizeIn(session_id="inc", now=at(hours=3).isoformat()))
    assert second["read"] == 2  # its two new records; nothing before them again
    assert second["summary"]["observationCount"] == 4
    assert second["summary"]["coveredThrough"] == obs("inc", 4).timestamp
    # a record stored again (a re-import publishes its event again) is not counted twice
    await put_obs(store, obs("inc", 3, type="command", title="Ran: pytest -q tests/test_export.py"))
    third = await lifecycle.summarize(SummarizeIn(session_id="inc", now=at(hours=3).isoformat()))
    assert third["written"] is False and third["summary"]["observationCount"] == 4
    full = await lifecycle.summarize(
        SummarizeIn(session_id="inc", now=at(hours=3).isoformat(), force=True)
    )
    assert full["read"] == 4
    keep = ("title", "narrative", "files", "concepts", "steps", "observationCount")
    assert {k: full["summary"][k] for k in keep} == {k: second["summary"][k] for k in keep}


async def test_a_forgotten_summary_is_folded_again_from_the_start(
    store: MemoryStore, lifecycle: LifecycleService
) -> None:
    await put_session(store, "gone", at(hours=1))
    await put_obs(store, obs("gone", 1, files=["a.py"]), obs("gone", 2, files=["b.py"]))
    await lifecycle.summarize(SummarizeIn(session_id="gone", now=at(hours=2).isoformat()))
    await store.summaries.delete("gone")
    await store.forget_observations([obs("gone", 1).id])  # forgotten with its summary
    again = await lifecycle.summarize(SummarizeIn(session_id="gone", now=at(hours=2).isoformat()))
    # from the start: the one record left (a forgotten one's message is erased from the log)
    assert again["read"] == 1 and again["summary"]["observationCount"] == 1
    assert again["summary"]["files"] == ["b.py"]
