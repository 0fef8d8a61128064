"""One HTTP request → function → nested call in another process → KV write is one trace."""

from __future__ import annotations

import asyncio
import secrets

import httpx
import msgspec

from engine.tracing import TRACES_STREAM, SpanRecord
from tests.fixtures import eventually

CONFIG = """
env:
  AGENTMEMORY_SECRET: trace-test-secret
  ENGINE_TRACE_SAMPLING: "1.0"
workers:
  - name: triggers
    command: ["{python}", "-m", "workers.trigger_plugins", "http"]
  - name: front
    module: tests.trace_worker
    env: {CHAIN_ROLE: front}
  - name: store
    module: tests.trace_worker
    env: {CHAIN_ROLE: store}
"""


async def test_http_request_nested_call_and_kv_write_form_one_trace(engine_factory) -> None:
    eng = engine_factory(CONFIG).start()
    client = await eng.client()
    trace_id = secrets.token_hex(16)
    caller_span = secrets.token_hex(8)
    headers = {
        "authorization": "Bearer trace-test-secret",
        "traceparent": f"00-{trace_id}-{caller_span}-01",
    }
    async with httpx.AsyncClient() as http:

        async def post() -> httpx.Response | None:
            r = await http.post(
                f"http://127.0.0.1:{eng.anchor}/chain",
                headers=headers,
                json={"key": "k1", "value": "v1"},
            )
            return r if r.status_code == 201 else None  # 404 until the route is live

        resp = await eventually(post, timeout=10, what="route /chain answers")
    assert resp.json()["stored"] == "k1"

    js = client.nc.jetstream()
    spans: dict[str, SpanRecord] = {}

    async def collected() -> bool:
        sub = await js.subscribe("engine.traces.>", stream=TRACES_STREAM, ordered_consumer=True)
        try:
            while True:
                try:
                    msg = await sub.next_msg(timeout=0.3)
                except Exception:
                    break
                for s in msgspec.json.decode(msg.data, type=list[SpanRecord]):
                    if s.trace_id == trace_id:
                        spans[s.span_id] = s
        finally:
            await sub.unsubscribe()
        return len(spans) >= 6

    await eventually(collected, timeout=10, interval=0.3, what="six spans of the trace")
    by_name = {s.name: s for s in spans.values()}
    http_span = by_name["POST /chain"]
    call_front = by_name["call chain::front"]
    front = by_name["chain::front"]
    call_store = by_name["call chain::store"]
    store = by_name["chain::store"]
    kv = by_name["kv.put chain"]
    # parent/child links, rooted at the caller's own span
    assert http_span.parent_id == caller_span
    assert call_front.parent_id == http_span.span_id
    assert front.parent_id == call_front.span_id
    assert call_store.parent_id == front.span_id
    assert store.parent_id == call_store.span_id
    assert kv.parent_id == store.span_id
    # across three processes
    assert http_span.service == call_front.service == "triggers-http"
    assert front.service == call_store.service == "chain-front"
    assert store.service == kv.service == "chain-store"
    assert http_span.kind == "SERVER" and call_front.kind == "CLIENT" and front.kind == "SERVER"
    assert front.attributes["faas.trigger"] == "http"
    assert http_span.attributes["http.response.status_code"] == 201
    assert kv.attributes["db.operation.name"] == "put"
    await client.nc.close()
    await asyncio.sleep(0)
