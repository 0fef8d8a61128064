"""Model usage in `/agentmemory/status`: calls and tokens per provider, summed over the
processes that call models, a check per provider that fails while its breaker is open, and
a keyless install saying it is keyless. Real memory worker and http trigger; the model is
the local stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.coordination.test_actions import make
from tests.fixtures import eventually, rest_client
from tests.models.standin import StandIn, fail

A = "/agentmemory/"
DIGEST = '{"narrative": "Batched the inserts.", "keyOutcomes": ["4x faster"]}'


@pytest.fixture
def standin() -> Iterator[StandIn]:
    s = StandIn(reply=lambda _: DIGEST)
    yield s
    s.close()


async def crystal(rest: httpx.AsyncClient, title: str) -> dict[str, Any]:
    a = await make(rest, title)
    await rest.post(A + "actions/update", json={"actionId": a["id"], "status": "done"})
    r = await rest.post(A + "crystals/create", json={"actionIds": a["id"]})
    assert r.status_code == 201, r.text
    return r.json()["crystal"]  # type: ignore[no-any-return]


async def test_status_counts_calls_and_tokens_and_fails_a_check_while_the_breaker_is_open(
    memory_worker: Any, http_trigger: Any, standin: StandIn
) -> None:
    memory_worker(
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=standin.url,
        OPENAI_MODEL="stand-in",
        AGENTMEMORY_LLM_BREAKER_FAILURES="1",
    )
    rest = await rest_client(http_trigger())
    try:
        assert (await crystal(rest, "batch the inserts"))["method"] == "llm"

        async def counted() -> dict[str, Any] | None:
            doc = (await rest.get(A + "status")).json()
            m = doc.get("models") or {}
            ps = m.get("providers") or []
            return doc if ps and ps[0]["calls"] >= 1 else None

        doc = await eventually(counted, timeout=15, what="usage in status")
        m = doc["models"]
        assert m["provider"] == "openai" and m["chain"] == ["openai"]
        [p] = m["providers"]
        assert (p["name"], p["model"], p["ok"], p["failed"]) == ("openai", "stand-in", 1, 0)
        assert (p["tokensIn"], p["tokensOut"]) == (11, 5)
        assert m["tasks"]["crystals"]["calls"] == 1
        check = next(c for c in doc["checks"] if c["name"] == "model:openai")
        assert check["ok"] and "1 calls, 1 ok" in check["detail"]

        standin.routes["/v1/chat/completions"] = fail(503)
        assert (await crystal(rest, "write the docs"))["method"] == "synthetic"

        async def opened() -> dict[str, Any] | None:
            doc = (await rest.get(A + "status")).json()
            check = next(c for c in doc["checks"] if c["name"] == "model:openai")
            return doc if not check["ok"] else None

        doc = await eventually(opened, timeout=15, what="the breaker in status")
        assert doc["status"] == "warn"  # upstream's level (0.9.30): a provider's breaker open
        check = next(c for c in doc["checks"] if c["name"] == "model:openai")
        assert "breaker open" in check["detail"] and "503" in check["fix"]
    finally:
        await rest.aclose()


async def test_a_keyless_install_says_so(memory_worker: Any, http_trigger: Any) -> None:
    memory_worker()
    rest = await rest_client(http_trigger())
    try:
        doc = (await rest.get(A + "status")).json()
        check = next(c for c in doc["checks"] if c["name"] == "models")
        assert check["ok"] and "keyless" in check["detail"]
        assert doc.get("models") is None
    finally:
        await rest.aclose()
