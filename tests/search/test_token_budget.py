"""`token_budget`, under upstream's name, as its clients send it (the REST body of search
and memory_recall's argument): results are kept while they fit and the reply says how many
tokens they take and whether some were left out. (The field was read as `tokenBudget`, so
upstream's `token_budget` was dropped as an unknown field.)"""

from __future__ import annotations

from typing import Any

from engine import Client
from tests.fixtures import eventually
from tests.search.test_functions import ENV, observe


async def test_token_budget_trims_search_and_says_so(client: Client, spawn: Any) -> None:
    spawn("workers.memory", env=ENV)
    for i in range(6):
        await observe(client, f"s{i}", "alpha", f"tune the retry backoff of the uploader, take {i}")

    async def all_found() -> Any:
        out = await client.call("mem::search", {"query": "retry backoff uploader", "limit": 10})
        return out if out["total"] == 6 else None

    full = await eventually(all_found, timeout=15)
    assert "truncated" not in full and "tokens_used" not in full  # no budget: as before
    out = await client.call(
        "mem::search", {"query": "retry backoff uploader", "limit": 10, "token_budget": 300}
    )
    assert 1 <= out["total"] < 6 and out["truncated"] is True
    assert out["tokens_budget"] == 300 and 0 < out["tokens_used"] <= 300
    loose = await client.call(
        "mem::search", {"query": "retry backoff uploader", "token_budget": 1_000_000}
    )
    assert loose["total"] == 6 and loose["truncated"] is False
