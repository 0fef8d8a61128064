"""Observation compression by a model (AGENTMEMORY_AUTO_COMPRESS=true, a provider at the
local stand-in): observe answers with the keyless record at once; the compress queue's
trigger then has the model rewrite it: the stored observation and a search return the
model's title and facts, once in the index; the planted secret never reaches the model; a
reply that does not decode (asked twice) keeps the keyless record; with the setting off no
request is made."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures import eventually, rest_client
from tests.models.standin import StandIn, user_prompt

A = "/agentmemory/"
SECRET = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
REPLY = {
    "type": "decision",
    "title": "Chose msgspec for the wire types",
    "subtitle": "over pydantic",
    "facts": ["msgspec decodes the hook bodies 6x faster than pydantic here"],
    "narrative": "Benchmarked both decoders on the hook bodies and kept msgspec.",
    "concepts": ["serialization", "performance"],
    "files": ["engine/_codec.py"],
    "importance": 8,
}


def answer(seen: Any) -> str:
    return "not json" if "MALFORMED" in user_prompt(seen) else json.dumps(REPLY)


@pytest.fixture
def standin() -> Iterator[StandIn]:
    s = StandIn(reply=answer)
    yield s
    s.close()


async def start(
    memory_worker: Any, http_trigger: Any, spawn: Any, standin: StandIn, tmp_path: Path, flag: str
) -> httpx.AsyncClient:
    env = {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": standin.url,
        "OPENAI_MODEL": "stand-in",
        "AGENTMEMORY_AUTO_COMPRESS": flag,
        "AGENTMEMORY_SEARCH": "on",
    }
    memory_worker(**env)
    spawn("workers.trigger_plugins", "queue")
    return await rest_client(http_trigger())


@pytest.fixture
async def rest(
    memory_worker: Any, http_trigger: Any, spawn: Any, standin: StandIn, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    c = await start(memory_worker, http_trigger, spawn, standin, tmp_path, "true")
    yield c
    await c.aclose()


async def observe(rest: httpx.AsyncClient, command: str, n: int) -> str:
    r = await rest.post(A + "observe", json={
        "hookType": "post_tool_use", "sessionId": "s-compress", "project": "wire",
        "timestamp": f"2026-12-01T10:0{n}:00Z",
        "data": {"tool_name": "Bash", "tool_input": {"command": command},
                 "tool_output": "msgspec 1.2 ms, pydantic 7.4 ms"},
    })  # fmt: skip
    assert r.status_code == 201, r.text
    return str(r.json()["observationId"])


async def stored(rest: httpx.AsyncClient, oid: str) -> dict[str, Any]:
    r = await rest.get(A + "observations", params={"sessionId": "s-compress"})
    assert r.status_code == 200, r.text
    (got,) = [o for o in r.json()["observations"] if o["id"] == oid]
    return got  # type: ignore[no-any-return]


async def test_the_model_rewrites_the_stored_and_indexed_observation(
    rest: httpx.AsyncClient, standin: StandIn
) -> None:
    oid = await observe(rest, f"python bench.py --token {SECRET}", 1)
    keyless = await stored(rest, oid)
    assert keyless["title"] != REPLY["title"]  # observe answered with the keyless record

    async def rewritten() -> dict[str, Any] | None:
        got = await stored(rest, oid)
        return got if got["title"].startswith(REPLY["title"]) else None

    got = await eventually(rewritten, timeout=30, what="the model's record stored")
    assert got["type"] == "decision" and got["facts"] == REPLY["facts"]
    assert got["narrative"] == REPLY["narrative"] and got["importance"] == 8

    async def found() -> list[dict[str, Any]] | None:
        r = await rest.post(A + "smart-search", json={"query": "pydantic decoders", "limit": 10})
        hits = [x for x in r.json()["results"] if x["obsId"] == oid]
        return hits if hits and hits[0]["title"].startswith(REPLY["title"]) else None

    hits = await eventually(found, timeout=30, what="search returns the model's record")
    assert len(hits) == 1  # replaced in the index, not added beside the first
    asked = [s for s in standin.requests if "compress one event" in s.text]
    assert asked and all(SECRET not in s.text for s in standin.requests)

    bad = await observe(rest, "echo MALFORMED output", 2)

    async def asked_twice() -> bool:
        return len([s for s in standin.requests if "MALFORMED" in s.text]) >= 2

    await eventually(asked_twice, timeout=30, what="asked twice")
    kept = await stored(rest, bad)
    assert kept["title"] != REPLY["title"] and not kept.get("revision")


async def test_with_the_setting_off_no_request_is_made(
    memory_worker: Any, http_trigger: Any, spawn: Any, standin: StandIn, tmp_path: Path
) -> None:
    rest = await start(memory_worker, http_trigger, spawn, standin, tmp_path, "false")
    try:
        oid = await observe(rest, "python bench.py", 1)
        await asyncio.sleep(3)
        assert not (await stored(rest, oid))["title"].startswith(REPLY["title"])
        assert not [s for s in standin.requests if "compress one event" in s.text]
    finally:
        await rest.aclose()
