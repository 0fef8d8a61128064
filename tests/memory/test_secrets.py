"""One secret of every kind planted in observe, remember, import and session payloads:
afterwards no raw byte of the JetStream store (KV buckets, MEM_EVENTS, object stores) nor
of the capture inbox holds any of them. The same for the provider corpus (one sample per
provider shape, tests/memory/secret_corpus.py) through a worker with search on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.server import NatsServer
from tests.fixtures import eventually, rest_client
from tests.memory.samples import SECRETS, all_secrets_text
from tests.memory.secret_corpus import PROVIDERS, SAMPLES
from tests.memory.test_observe import payload


def _needles_in(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in root.rglob("*"):
        if not f.is_file():
            continue
        data = f.read_bytes()
        for s in SECRETS:
            if s.needle.encode() in data:
                found.setdefault(s.needle, []).append(str(f.relative_to(root)))
    return found


async def test_no_planted_secret_survives_in_stored_bytes(
    rest: httpx.AsyncClient, nats_server: NatsServer, tmp_path: Path
) -> None:
    text = all_secrets_text()
    as_dict: dict[str, Any] = {"command": text, "env": {"password": "hunter2-PlantedDict"}}
    for i, (hook, data) in enumerate(
        [
            ("prompt_submit", {"prompt": text}),
            ("post_tool_use", {"tool_name": "Bash", "tool_input": as_dict, "tool_output": text}),
            ("post_tool_failure", {"tool_name": "Bash", "tool_input": text, "error": text}),
            ("stop", {"assistant_response": text}),
        ]
    ):
        r = await rest.post(
            "/agentmemory/observe",
            json=payload(
                hookType=hook, data=data, eventId=f"ev{i}", cwd="/home/u/" + SECRETS[4].text
            ),
        )
        assert r.status_code == 201, r.text
    r = await rest.post(
        "/agentmemory/remember",
        json={
            "content": text,
            "title": SECRETS[9].text,
            "concepts": [SECRETS[15].text],
            "files": [SECRETS[3].text],
        },
    )
    assert r.status_code == 201
    doc = {
        "sessions": [{"id": "imp", "project": "p", "cwd": SECRETS[6].text}],
        "observations": {
            "imp": [
                {
                    "id": "obs_imp",
                    "sessionId": "imp",
                    "project": "p",
                    "hookType": "stop",
                    "timestamp": "2026-01-01T00:00:00Z",
                    "narrative": text,
                    "raw": text,
                }
            ]
        },
        "memories": [{"id": "mem_imp", "content": text, "title": SECRETS[0].text}],
        "summaries": [{"sessionId": "imp", "project": "p", "narrative": text}],
    }
    r = await rest.post("/agentmemory/import", json={"strategy": "merge", "data": doc})
    assert r.status_code == 200, r.text
    await rest.post(
        "/agentmemory/session/start", json={"sessionId": SECRETS[10].text, "project": "p"}
    )

    # the records are there (so the grep below is looking at real data) ...
    exported = (await rest.get("/agentmemory/export")).text
    assert "[REDACTED:" in exported and "obs_imp" in exported
    # ... and no secret is, in any stored byte
    leaks = _needles_in(nats_server.store_dir)
    assert "hunter2-PlantedDict" not in str(leaks)
    assert leaks == {}
    inbox = tmp_path / "inbox"
    if inbox.exists():
        assert _needles_in(inbox) == {}
    for s in SECRETS:
        assert s.needle not in exported


def _corpus_leaks(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in root.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for s in SAMPLES:
                if s.needle.encode() in data:
                    found.setdefault(f"{s.provider}: {s.kind}", []).append(str(f.relative_to(root)))
    return found


@pytest.fixture
async def rest_with_search(
    memory_worker: Any, http_trigger: Any
) -> AsyncIterator[httpx.AsyncClient]:
    memory_worker(AGENTMEMORY_SEARCH="on")
    c = await rest_client(http_trigger())
    yield c
    await c.aclose()


async def test_no_provider_secret_of_the_corpus_survives_in_any_raw_byte(
    rest_with_search: httpx.AsyncClient, nats_server: NatsServer, tmp_path: Path
) -> None:
    rest = rest_with_search
    assert len(PROVIDERS) >= 30
    texts = [s.text for s in SAMPLES]
    # each sample alone in a tool output, all of them in a prompt, an error and a reply,
    # and as the values of a tool input: every field of every hook the scrubber sees
    for i, text in enumerate(texts):
        r = await rest.post(
            "/agentmemory/observe",
            json=payload(
                hookType="post_tool_use",
                eventId=f"corpus-{i}",
                data={"tool_name": "Bash", "tool_input": {"command": text}, "tool_output": text},
            ),
        )
        assert r.status_code == 201, r.text
    joined = "\n".join(texts)
    for i, (hook, data) in enumerate(
        [
            ("prompt_submit", {"prompt": "zebracorn deploy notes:\n" + joined}),
            ("post_tool_failure", {"tool_name": "Bash", "tool_input": joined, "error": joined}),
            ("stop", {"assistant_response": joined}),
        ]
    ):
        r = await rest.post(
            "/agentmemory/observe", json=payload(hookType=hook, data=data, eventId=f"all-{i}")
        )
        assert r.status_code == 201, r.text
    r = await rest.post(
        "/agentmemory/remember",
        json={"content": "zebracorn rollout credentials\n" + joined, "title": texts[0]},
    )
    assert r.status_code == 201, r.text

    # the records are there and ordinary words still find them ...
    async def found() -> bool:
        res = await rest.post("/agentmemory/smart-search", json={"query": "zebracorn", "limit": 10})
        return res.status_code == 200 and len(res.json().get("results", [])) >= 1

    await eventually(found, timeout=20, what="smart-search finds the zebracorn records")
    exported = (await rest.get("/agentmemory/export")).text
    assert exported.count("[REDACTED:") >= len(SAMPLES)
    # ... and no sample is, in any byte of the JetStream store or of the capture inbox
    assert _corpus_leaks(nats_server.store_dir) == {}
    inbox = tmp_path / "inbox"
    if inbox.exists():
        assert _corpus_leaks(inbox) == {}
    assert [s.provider for s in SAMPLES if s.needle in exported] == []


async def test_a_zero_width_character_inside_a_key_does_not_hide_it_from_the_scrubber(
    rest: httpx.AsyncClient, nats_server: NatsServer
) -> None:
    # A model reads "sk-ant-api\u200b03-..." as the key; the secret patterns did not, so the
    # key was stored whole. Invisible characters are removed before scrubbing now.
    anthropic = "sk-ant-api03-" + "Zq7Xw2Vb9Nm4Lk8Jh3Gf6Ds1Ap5Oi0Uy"
    aws = "AKIA" + "IOSFODNN7ZQWERTY"
    hidden = f"{anthropic[:10]}\u200b{anthropic[10:]} and {aws[:4]}\u200c{aws[4:]}"
    r = await rest.post(
        "/agentmemory/observe",
        json=payload(hookType="prompt_submit", data={"prompt": "keys: " + hidden}),
    )
    assert r.status_code == 201, r.text
    r = await rest.post("/agentmemory/remember", json={"content": "deploy keys " + hidden})
    assert r.status_code == 201, r.text
    exported = (await rest.get("/agentmemory/export")).text
    assert exported.count("[REDACTED:") >= 4
    for tail in (anthropic[14:], aws[5:]):
        assert tail not in exported
        assert not [
            f
            for f in nats_server.store_dir.rglob("*")
            if f.is_file() and tail.encode() in f.read_bytes()
        ]
