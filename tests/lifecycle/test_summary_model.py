"""Session summaries written by a model (a provider configured), against the local stand-in
speaking the OpenAI chat format: the stored summary is the model's, parsed into the record
(our steps and counts kept); re-summarizing asks nothing; a planted secret in the session
never reaches the stand-in; a reply that does not decode leaves the keyless summary."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest

from engine import Client
from functions.kernel.records import SessionSummary
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import SummarizeIn
from tests.fixtures import wire
from tests.lifecycle._data import at, obs, put_obs, put_session
from tests.models.standin import StandIn, lifecycle_at, user_prompt

SECRET = "sk-ant-" + "Q1w2E3r4T5y6U7i8O9p0A"
REPLY = {
    "title": "Moved the token refresh into the auth middleware",
    "narrative": "The session fixed expired-token failures by refreshing in middleware. "
    "Tests for the refresh path were added and pass.",
    "decisions": ["Refresh tokens in middleware, not per handler"],
    "files": ["src/auth/middleware.py"],
    "concepts": ["jwt refresh", "auth middleware"],
}


@pytest.fixture
def standin() -> Iterator[StandIn]:
    s = StandIn(reply=lambda _: "Summary:\n" + json.dumps(REPLY))
    yield s
    s.close()


@pytest.fixture
async def svc(client: Client, standin: StandIn) -> AsyncIterator[LifecycleService]:
    async with lifecycle_at(client, standin.url) as s:
        yield wire(s)


async def session(store: MemoryStore) -> None:
    await put_session(store, "sess-auth", at(hours=1), status="ended")
    await put_obs(
        store,
        obs("sess-auth", 0, type="prompt", title="Prompt: fix the expired token errors"),
        obs("sess-auth", 1, files=["src/auth/middleware.py"], title=f"edit with {SECRET}"),
        obs("sess-auth", 2, type="command", title="Ran pytest tests/auth"),
    )


async def test_the_summary_is_the_models_and_stays_cached(
    store: MemoryStore, svc: LifecycleService, standin: StandIn
) -> None:
    await session(store)
    out = await svc.summarize(SummarizeIn(session_id="sess-auth", now=at(hours=2).isoformat()))
    s = out["summary"]
    assert s["title"] == REPLY["title"] and s["narrative"] == REPLY["narrative"]
    assert s["decisions"] == REPLY["decisions"] and s["concepts"] == REPLY["concepts"]
    assert s["observationCount"] == 3 and s["steps"]  # ours, kept
    stored = await store.get(store.summaries, "sess-auth", SessionSummary)
    assert stored is not None and stored.title == REPLY["title"]
    [seen] = standin.requests
    assert seen.path == "/v1/chat/completions"
    assert "fix the expired token errors" in user_prompt(seen)
    assert SECRET not in seen.text

    again = await svc.summarize(SummarizeIn(session_id="sess-auth", now=at(hours=3).isoformat()))
    assert again["written"] is False and len(standin.requests) == 1  # cached: no call


async def test_a_malformed_reply_keeps_the_keyless_summary(
    store: MemoryStore, svc: LifecycleService, standin: StandIn
) -> None:
    standin.reply = lambda _: "<summary><title>xml, not json</title></summary>"
    await session(store)
    out = await svc.summarize(SummarizeIn(session_id="sess-auth", now=at(hours=2).isoformat()))
    s = out["summary"]
    assert s["title"] == "fix the expired token errors"  # the keyless title: the first prompt
    assert s["narrative"].startswith("3 observations from")
    assert len(standin.requests) == 1
    standin.reply = lambda _: json.dumps(REPLY)  # the model is back: the next run words it
    later = await svc.summarize(SummarizeIn(session_id="sess-auth", now=at(hours=3).isoformat()))
    assert later["summary"]["title"] == REPLY["title"]


async def test_a_later_summary_gives_the_model_its_last_summary_and_only_the_steps_since(
    store: MemoryStore, svc: LifecycleService, standin: StandIn
) -> None:
    await session(store)
    await svc.summarize(SummarizeIn(session_id="sess-auth", now=at(hours=2).isoformat()))
    await put_obs(
        store,
        obs("sess-auth", 3, files=["src/auth/refresh_test.py"], title="Edited refresh_test.py"),
        obs("sess-auth", 4, type="command", title="Ran: pytest tests/auth/test_refresh.py"),
    )
    later = await svc.summarize(SummarizeIn(session_id="sess-auth", now=at(hours=3).isoformat()))
    assert later["read"] == 2
    _, second = standin.requests
    said = user_prompt(second)
    assert REPLY["title"] in said  # its last summary
    assert "src/auth/refresh_test.py" in said and "run pytest" in said  # what is new
    since = said.split("What the session did since")[1].split("Draft narrative")[0]
    assert since.count("\n") == 3, since  # its heading's end and the two new steps
    assert "edit src/auth/middleware.py" not in said  # the old steps are not sent again
    # nothing new: no call
    await svc.summarize(SummarizeIn(session_id="sess-auth", now=at(hours=4).isoformat()))
    assert len(standin.requests) == 2
