"""Consolidation's extraction by a model (CONSOLIDATION_ENABLED, a provider at the local
stand-in), upstream's three passes: a memory per concept group (a same-titled stored memory
gets a new version), facts from the newest summaries, procedures from recurring patterns.
The stored records are the model's, parsed; a second run asks nothing and stages nothing;
a planted secret never reaches the stand-in; a reply that does not decode leaves the keyless
tiers; calls stop at CONSOLIDATION_LLM_MAX_CALLS."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from engine import Client
from functions.kernel.clock import iso
from functions.kernel.records import Memory, SessionSummary, SummaryAdded
from functions.kernel.store import MemoryStore
from functions.lifecycle.lifecycle_service import LifecycleService
from functions.lifecycle.wire import ConsolidateIn
from tests.fixtures import wire
from tests.lifecycle._data import at, obs, put_memory, put_obs
from tests.models.standin import Seen, StandIn, lifecycle_at, user_prompt

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
RETRY = {"type": "pattern", "title": "Retry payments with a budget",
         "content": "Payment calls retry with a shared budget so outages do not cascade.",
         "concepts": ["retry budget"], "files": ["src/pay/retry.py"], "strength": 8}  # fmt: skip
LEDGER = {"type": "pattern", "title": "Refunds go through the ledger",
          "content": "Every refund is written to the ledger before the provider is called.",
          "concepts": ["ledger"], "files": ["src/pay/refund.py"], "strength": 6}  # fmt: skip
FACTS = {"facts": [{"fact": "Payments are retried with a shared budget", "confidence": 0.9},
                   {"fact": "Refunds are ledgered first", "confidence": 0.7}]}  # fmt: skip
PROCEDURES = {"procedures": [{"name": "Ship a payment change", "trigger": "editing src/pay",
                              "steps": ["write the ledger entry", "run pytest tests/pay"]}]}  # fmt: skip


def system(seen: Seen) -> str:
    return str(seen.body["messages"][0]["content"])


def answer(seen: Seen) -> str:
    s, u = system(seen), user_prompt(seen)
    if "single long-term memory" in s:
        return json.dumps(RETRY if '"retry budget"' in u else LEDGER)
    if "stable factual knowledge" in s:
        return json.dumps(FACTS)
    if "procedural memory extractor" in s:
        return json.dumps(PROCEDURES)
    return "no rewording"  # the planner's wording pass: falls back


@pytest.fixture
def standin() -> Iterator[StandIn]:
    s = StandIn(reply=answer)
    yield s
    s.close()


@pytest.fixture
async def svc(client: Client, standin: StandIn) -> AsyncIterator[Any]:
    async with lifecycle_at(client, standin.url) as s:
        s.config = dataclasses.replace(s.config, consolidation_llm=True)
        yield wire(s)


async def evidence(store: MemoryStore) -> None:
    items = []
    for i, sess in enumerate(["s1", "s2", "s3"]):
        retry = obs(sess, 1, concepts=["retry budget"], title=f"Retried payment, key {SECRET}")
        ledger = obs(sess, 2, concepts=["Ledger"], files=["src/pay/refund.py"], importance=7)
        low = obs(sess, 3, concepts=["noise"], importance=2)  # below importance 5: not sent
        items += [retry, ledger, low]
        items.append(obs(sess, 4, concepts=["solo"] if i == 0 else []))
    items.append(obs("s4", 1, title="the tenth of importance >= 5"))  # upstream's minimum: 10
    await put_obs(store, *items)
    for i in range(6):
        s = SessionSummary(session_id=f"sum{i}", project="proj", title=f"Session {i}",
                           narrative=f"Retried payments; token {SECRET}", concepts=["retry"],
                           created_at=iso(at(hours=i)), source_ids=[f"obs_{i}"])  # fmt: skip
        await store.publish(SummaryAdded(summary=s), msg_id=s.session_id)
        await store.summaries.put(s.session_id, s)
    await put_memory(store, Memory(id="mem_user", content="old wording", project="proj",
                                   title="Refunds go through the LEDGER", type="fact"))  # fmt: skip


async def stored(store: MemoryStore) -> dict[str, Memory]:
    return {m.id: m async for _, m in store.memories.scan(">", Memory)}


async def test_the_models_memories_facts_and_procedures_are_stored(
    store: MemoryStore, svc: Any, standin: StandIn
) -> None:
    await evidence(store)
    out = await svc.consolidate(ConsolidateIn(now=at(days=1).isoformat()))
    assert out["consolidated"] == 2
    mems = await stored(store)
    by_title = {m.title: m for m in mems.values()}
    retry = by_title[RETRY["title"]]
    assert (retry.type, retry.content, retry.files, retry.strength) == (
        "pattern", RETRY["content"], RETRY["files"], 0.8)  # fmt: skip
    assert len(retry.source_ids) == 3
    ledger = by_title[LEDGER["title"]]
    assert ledger.supersedes == "mem_user" and ledger.version == 2
    assert mems["mem_user"].superseded_by == ledger.id  # the same-titled memory: a new version
    facts = {m.content: m for m in mems.values() if m.type == "semantic"}
    assert facts[FACTS["facts"][0]["fact"]].confidence == 0.9
    assert "Refunds are ledgered first" in facts
    (proc,) = [m for m in mems.values() if m.title == "Ship a payment change"]
    assert proc.type == "procedural" and proc.steps == PROCEDURES["procedures"][0]["steps"]

    sent = [r for r in standin.requests if "consolidation engine" in system(r)]
    assert len(sent) == 3  # two concept groups and one facts call (noise, solo: too few)
    assert not any(SECRET in r.text for r in standin.requests)
    assert not any("noise" in user_prompt(r) for r in sent)  # importance 2: left out

    calls = len(standin.requests)
    again = await svc.consolidate(ConsolidateIn(now=at(days=2).isoformat()))
    asked = [r for r in standin.requests[calls:] if "no rewording" not in answer(r)]
    assert asked == []  # cached answers: no extraction call
    assert again["consolidated"] == 0
    assert again["semantic"]["created"] == again["semantic"]["updated"] == 0
    assert again["procedural"]["created"] == again["procedural"]["updated"] == 0
    assert await stored(store) == mems


async def test_a_malformed_reply_keeps_the_keyless_tiers(
    store: MemoryStore, svc: Any, standin: StandIn
) -> None:
    standin.reply = lambda _: "<memory><type>pattern</type><title>xml</title></memory>"
    await evidence(store)
    out = await svc.consolidate(ConsolidateIn(now=at(days=1).isoformat()))
    assert out["consolidated"] == 0 and out["extractFailed"] == out["extractCalls"] > 0
    mems = await stored(store)
    assert mems["mem_user"].superseded_by is None
    assert {m.type for m in mems.values()} == {"semantic", "fact"}
    titles = {m.title for m in mems.values() if m.type == "semantic"}
    assert titles == {"Recurring concept: retry budget", "Recurring concept: ledger",
                      "Recurring concept: noise", "src/pay/refund.py is a hot spot"}  # fmt: skip


async def test_calls_stop_at_the_runs_budget(
    store: MemoryStore, svc: Any, standin: StandIn
) -> None:
    inner: LifecycleService = svc.svc
    llm = dataclasses.replace(inner.config.llm, max_calls=1)
    inner.config = dataclasses.replace(inner.config, llm=llm)
    await evidence(store)
    await svc.consolidate(ConsolidateIn(now=at(days=1).isoformat()))
    assert len(standin.requests) == 1


async def test_a_fact_stated_again_reinforces_the_stored_one(
    store: MemoryStore, svc: Any, standin: StandIn
) -> None:
    await evidence(store)
    await svc.consolidate(ConsolidateIn(now=at(days=1).isoformat()))
    before = {m.id: m for m in (await stored(store)).values() if m.type == "semantic"}
    late = SessionSummary(session_id="sum9", project="proj", title="Session 9",
                          created_at=iso(at(hours=9)))  # fmt: skip
    await store.summaries.put(late.session_id, late)  # a new episode: the facts are asked again
    again = {"facts": [{"fact": "payments are retried with a shared BUDGET", "confidence": 0.4}]}
    standin.reply = lambda seen: json.dumps(again) if "factual" in system(seen) else answer(seen)
    await svc.consolidate(ConsolidateIn(now=at(days=2).isoformat()))
    after = {m.id: m for m in (await stored(store)).values() if m.type == "semantic"}
    assert set(after) == set(before)  # the same text (any case): no second fact
    fact = after[next(i for i, m in before.items() if m.content == FACTS["facts"][0]["fact"])]
    assert fact.content == FACTS["facts"][0]["fact"]  # its wording stays
    assert fact.confidence == 0.9  # the larger confidence stays
