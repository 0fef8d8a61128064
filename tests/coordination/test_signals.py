"""Signals over REST against a real memory worker: delivered to an agent that was offline
when sent and read once with a receipt, broadcasts reaching every agent, threads, TTL."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.fixtures import eventually

A = "/agentmemory/"


async def send(rest: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await rest.post(A + "signals/send", json=body)
    assert r.status_code == 201, r.text
    return r.json()["signal"]  # type: ignore[no-any-return]


async def read(rest: httpx.AsyncClient, agent: str, **q: str) -> list[dict[str, Any]]:
    r = await rest.get(A + "signals", params={"agentId": agent, **q})
    assert r.status_code == 200, r.text
    return r.json()["signals"]  # type: ignore[no-any-return]


async def test_an_offline_agent_reads_its_signal_once_with_a_receipt(
    rest: httpx.AsyncClient, memory_worker: Any
) -> None:
    sig = await send(
        rest, **{"from": "lead", "to": "reviewer", "content": "review PR 12", "type": "request"}
    )
    assert sig["from"] == "lead" and sig["readAt"] == ""
    others = [
        (await send(rest, **{"from": "lead", "to": "reviewer", "content": f"also {n}"}))["id"]
        for n in range(5)
    ]
    # The reviewer comes online later, in several sessions at once, over two replicas.
    memory_worker()
    reads = await asyncio.gather(*(read(rest, "reviewer", unreadOnly="true") for _ in range(12)))
    delivered = sorted(s["id"] for batch in reads for s in batch)
    assert delivered == sorted([sig["id"], *others])  # each read once, however many ask
    got = next(s for batch in reads for s in batch if s["id"] == sig["id"])
    assert got["readAt"]
    assert await read(rest, "reviewer", unreadOnly="true") == []
    again = {s["id"]: s for s in await read(rest, "reviewer")}
    assert again[sig["id"]]["readAt"] == got["readAt"]  # still there, marked read
    sent = {s["id"]: s for s in await read(rest, "lead")}
    assert sent[sig["id"]]["readAt"] == got["readAt"]  # the sender sees the receipt
    audit = (await rest.get(A + "audit")).json()["entries"]
    receipts = [e for e in audit if e["action"] == "signal-read"]
    assert sorted(e["targetIds"][0] for e in receipts) == sorted([sig["id"], *others])
    assert {e["actor"] for e in receipts} == {"reviewer"}


async def test_a_broadcast_reaches_every_agent(rest: httpx.AsyncClient) -> None:
    sig = await send(rest, **{"from": "ci", "content": "main is red", "type": "alert"})
    for agent in ("a", "b", "c"):
        got = await read(rest, agent, unreadOnly="true")
        assert [s["id"] for s in got] == [sig["id"]]
        assert await read(rest, agent, unreadOnly="true") == []
    assert [s["id"] for s in await read(rest, "ci")] == [sig["id"]]
    assert await read(rest, "d", type="handoff") == []


async def test_replies_thread_and_direct_signals_stay_private(rest: httpx.AsyncClient) -> None:
    q = await send(rest, **{"from": "a", "to": "b", "content": "which branch?"})
    ans = await send(
        rest, **{"from": "b", "to": "a", "content": "main", "replyTo": q["id"], "type": "response"}
    )
    assert ans["threadId"] == q["threadId"] and ans["replyTo"] == q["id"]
    thread = await read(rest, "a", threadId=q["threadId"])
    assert {s["id"] for s in thread} == {q["id"], ans["id"]}
    assert await read(rest, "eve") == []


async def test_a_signal_with_a_ttl_expires(rest: httpx.AsyncClient) -> None:
    await send(rest, **{"from": "a", "to": "b", "content": "short lived", "expiresInMs": 1000})

    async def gone() -> bool:
        return await read(rest, "b") == []

    await eventually(gone, timeout=5, what="the signal's TTL")


async def test_bad_signals_are_refused_naming_the_field(rest: httpx.AsyncClient) -> None:
    for body, field in [
        ({"content": "x"}, "from"),
        ({"from": "a", "content": " "}, "content"),
        ({"from": "a", "content": "x", "type": "shout"}, "type"),
    ]:
        r = await rest.post(A + "signals/send", json=body)
        assert r.status_code == 400 and r.json()["error"]["field"] == field, r.text
    r = await rest.get(A + "signals")
    assert r.status_code == 400 and r.json()["error"]["field"] == "agentId"
