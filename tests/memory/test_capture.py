"""When JetStream refuses writes: 202 from the durable inbox, retries, dead letters,
capture listing, capture/retry — and 503 once the inbox is full."""

from __future__ import annotations

from typing import Any

import httpx
from nats.js.api import DiscardPolicy, StreamConfig

from engine import Client
from functions.kernel.records import EVENTS_STREAM, EVENTS_SUBJECT
from tests.fixtures import eventually, rest_client
from tests.memory.test_observe import payload


async def _block_events(client: Client) -> None:
    """A full MEM_EVENTS stream that discards new messages: every publish fails."""
    js = client.nc.jetstream()
    await js.add_stream(
        StreamConfig(
            name=EVENTS_STREAM,
            subjects=[f"{EVENTS_SUBJECT}.>"],
            max_msgs=1,
            discard=DiscardPolicy.NEW,
            duplicate_window=600,
        )
    )
    await js.publish(f"{EVENTS_SUBJECT}.filler", b"{}")


async def _unblock_events(client: Client) -> None:
    js = client.nc.jetstream()
    info = await js.stream_info(EVENTS_STREAM)
    cfg = info.config
    cfg.max_msgs = -1
    await js.update_stream(cfg)


async def test_refused_write_is_accepted_202_dead_lettered_then_replayed(
    client: Client, memory_worker: Any, http_trigger: Any
) -> None:
    await _block_events(client)
    memory_worker(AGENTMEMORY_INBOX_ATTEMPTS="2")
    rest = await rest_client(http_trigger())
    try:
        r = await rest.post("/agentmemory/observe", json=payload(eventId="toolu_blocked"))
        assert r.status_code == 202, r.text
        body = r.json()
        assert body["status"] == "retrying" and body["durableAfterMs"] > 0
        oid = body["observationId"]

        async def dead() -> list[Any]:
            cap = (await rest.get("/agentmemory/capture", params={"status": "dead"})).json()
            return [d for d in cap["items"] if d["observationId"] == oid]

        letters = await eventually(dead, timeout=15, what="dead letter")
        item = letters[0]
        assert (item["status"], item["attempts"], item["eventId"]) == ("dead", 2, "toolu_blocked")
        assert item["eventSource"] == "client" and item["lastError"] and item["deadAt"]
        assert item["key"].startswith("cap_") and item["preview"].startswith("Edit: ")
        cap = (await rest.get("/agentmemory/capture")).json()["capture"]
        assert cap["inbox"]["dead"] == 1 and cap["sinceStart"]["deadLettered"] == 1
        st = (await rest.get("/agentmemory/status")).json()
        assert not {c["name"]: c for c in st["checks"]}["dead_letters"]["ok"]
        assert "capture-dead-letters" in {p["code"] for p in st["problems"]}

        await _unblock_events(client)
        retry = await rest.post("/agentmemory/capture/retry", json={"eventId": "toolu_blocked"})
        assert retry.json() == {"matched": 1, "recovered": 1, "dead": 0, "waiting": 0}
        got = await rest.get(f"/agentmemory/observations/{oid}")
        assert got.status_code == 200
        cap = (await rest.get("/agentmemory/capture")).json()
        assert cap["items"] == [] and cap["total"] == 0
    finally:
        await rest.aclose()


async def test_inbox_retry_loop_stores_once_the_store_recovers(
    client: Client, memory_worker: Any
) -> None:
    await _block_events(client)
    memory_worker()
    out = await client.call("mem::observe", payload(eventId="toolu_later"), timeout=10)
    assert out["status"] == "retrying"
    await _unblock_events(client)

    async def stored() -> bool:
        got = await client.call("mem::observation", {"id": out["observationId"]}, timeout=5)
        return bool(got["observation"])

    await eventually(stored, timeout=15, what="retried observation stored")


async def test_full_inbox_answers_503_retryable(
    client: Client, memory_worker: Any, http_trigger: Any
) -> None:
    await _block_events(client)
    memory_worker(AGENTMEMORY_INBOX_MAX="1")
    rest: httpx.AsyncClient = await rest_client(http_trigger())
    try:
        first = await rest.post("/agentmemory/observe", json=payload(eventId="a1"))
        second = await rest.post("/agentmemory/observe", json=payload(eventId="a2"))
        assert (first.status_code, second.status_code) == (202, 503)
        assert second.json()["error"]["retryable"] is True
    finally:
        await rest.aclose()


async def test_capture_drain_tries_what_waits_now(
    client: Client, memory_worker: Any, http_trigger: Any
) -> None:
    # Upstream's POST capture/drain (src/triggers/api.ts @48c1bb0c): {results: [DrainResult]}.
    await _block_events(client)
    memory_worker(AGENTMEMORY_INBOX_ATTEMPTS="50")
    rest: httpx.AsyncClient = await rest_client(http_trigger())
    try:
        r = await rest.post("/agentmemory/observe", json=payload(eventId="toolu_drained"))
        assert r.status_code == 202, r.text
        oid = r.json()["observationId"]
        waiting = (await rest.get("/agentmemory/capture", params={"status": "retrying"})).json()
        assert [i["observationId"] for i in waiting["items"]] == [oid]
        assert waiting["items"][0]["nextAttemptAt"]
        (blocked,) = (await rest.post("/agentmemory/capture/drain", json={})).json()["results"]
        assert (blocked["claimed"], blocked["delivered"], blocked["remaining"]) == (1, 0, 1)
        await _unblock_events(client)

        async def drained() -> bool:
            (res,) = (await rest.post("/agentmemory/capture/drain", json={})).json()["results"]
            return res["remaining"] == 0

        await eventually(drained, timeout=15, what="the inbox drained")
        assert (await rest.get(f"/agentmemory/observations/{oid}")).status_code == 200
    finally:
        await rest.aclose()
