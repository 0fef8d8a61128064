"""One secret of every kind planted in observe, remember, import and session payloads:
afterwards no raw byte of the JetStream store (KV buckets, MEM_EVENTS, object stores) nor
of the capture inbox holds any of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from engine._nats_server import NatsServer
from tests.memory.samples import SECRETS, all_secrets_text
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
