"""Slots over REST: seeded defaults, create / append / replace / delete, size caps, scopes."""

from __future__ import annotations

import httpx

from tests.fixtures import eventually


async def test_default_slots_are_seeded_and_listed(rest: httpx.AsyncClient) -> None:
    async def seeded() -> list[str]:
        r = await rest.get("/agentmemory/slots")
        return [s["label"] for s in r.json()["slots"]] if r.status_code == 200 else []

    labels = await eventually(seeded, timeout=10, what="default slots")
    assert {"persona", "project_context", "pending_items", "user_preferences"} <= set(labels)
    assert labels == sorted(labels)


async def test_slot_lifecycle_and_its_refusals(rest: httpx.AsyncClient) -> None:
    r = await rest.post(
        "/agentmemory/slot",
        json={"label": "deploy_notes", "content": "staging first", "sizeLimit": 40},
    )
    assert r.status_code == 201, r.text
    assert r.json()["slot"]["sizeLimit"] == 40
    again = await rest.post("/agentmemory/slot", json={"label": "deploy_notes"})
    assert again.status_code == 409
    r = await rest.post(
        "/agentmemory/slot/append", json={"label": "deploy_notes", "text": "then prod"}
    )
    assert r.status_code == 200 and r.json()["slot"]["content"] == "staging first\nthen prod"
    r = await rest.post(
        "/agentmemory/slot/append", json={"label": "deploy_notes", "text": "x" * 40}
    )
    assert r.status_code == 413 and "sizeLimit" in r.json()["error"]["message"]
    r = await rest.post(
        "/agentmemory/slot/replace", json={"label": "deploy_notes", "content": "prod"}
    )
    assert r.status_code == 200 and r.json()["size"] == 4
    got = await rest.get("/agentmemory/slot", params={"label": "deploy_notes"})
    assert got.json()["slot"]["content"] == "prod"
    bad = await rest.post("/agentmemory/slot", json={"label": "Bad Label"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "label"
    gone = await rest.request("DELETE", "/agentmemory/slot", params={"label": "deploy_notes"})
    assert gone.status_code == 200
    missing = await rest.get("/agentmemory/slot", params={"label": "deploy_notes"})
    assert missing.status_code == 404


async def test_a_project_slot_wins_over_the_default_and_secrets_are_scrubbed(
    rest: httpx.AsyncClient,
) -> None:
    await rest.post("/agentmemory/slot", json={"label": "build", "content": "make all"})
    r = await rest.post(
        "/agentmemory/slot",
        json={"label": "build", "content": "pnpm build", "project": "web"},
    )
    assert r.status_code == 201
    web = await rest.get("/agentmemory/slot", params={"label": "build", "project": "web"})
    other = await rest.get("/agentmemory/slot", params={"label": "build", "project": "api"})
    assert web.json()["slot"]["content"] == "pnpm build"
    assert other.json()["slot"]["content"] == "make all"
    secret = "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsT"
    r = await rest.post(
        "/agentmemory/slot/append", json={"label": "build", "text": f"key {secret}"}
    )
    assert secret not in r.text and "REDACTED" in r.json()["slot"]["content"]
