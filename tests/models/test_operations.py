"""Model-backed operations with a provider configured at the local stand-in (OpenAI chat
format): the stored result is the model's, parsed into the record; a planted secret never
appears in any request the stand-in received; a reply that does not decode gives the keyless
result. (Summaries: tests/lifecycle/test_summary_model.py; consolidation wording:
tests/lifecycle/test_llm.py; crystals: tests/coordination/test_crystals_llm.py.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine import Client
from functions.insights.insight_service import InsightService, ReflectIn
from functions.kernel.records import INSIGHTS_BUCKET, Insight
from functions.kernel.store import MemoryStore
from tests.coordination.test_actions import make
from tests.fixtures import eventually, rest_client, wire
from tests.lifecycle._data import at, obs, put_obs
from tests.models.standin import Seen, StandIn, lifecycle_at

A = "/agentmemory/"
SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
FLOW = {
    "goal": "Cut the importer's run time",
    "outcome": "Imports run 4x faster",
    "steps": ["profile the importer", "batch the inserts"],
    "discoveries": "single-row inserts dominated",
    "lesson": "profile before optimizing",
}
REFLECT = {
    "insights": [
        {"title": "Billing changes travel in pairs", "content": "invoice.py and tax_rules.py "
         "change together; edit both.", "confidence": 0.8},
        {"title": "Rounding is the recurring bug", "content": "Every billing session fixed "
         "rounding; use quantize.", "confidence": 0.6},
    ]
}  # fmt: skip
MARKDOWN = "# Guide\n\nShort.\n\n## Setup\n\nRun it: https://example.com/docs\n"


def system(seen: Seen) -> str:
    return str(seen.body["messages"][0]["content"])


def replies(seen: Seen) -> str:
    s = system(seen)
    if "completed chain of a coding agent's actions" in s:
        return json.dumps(FLOW)
    if "cross-cutting insights" in s:
        return "Insights:\n" + json.dumps(REFLECT)
    if "shorten a markdown document" in s:
        return "```markdown\n" + MARKDOWN + "```"
    return "{}"


@pytest.fixture
def standin() -> Iterator[StandIn]:
    s = StandIn(reply=replies)
    yield s
    s.close()


def model_env(standin: StandIn, tmp_path: Path) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": standin.url,
        "OPENAI_MODEL": "stand-in",
        "HOME": str(tmp_path / "home"),
        "AGENTMEMORY_INBOX_DIR": str(tmp_path / "inbox"),
        "AGENTMEMORY_SEARCH": "off",
    }


# ---- reflect -----------------------------------------------------------------------------
@pytest.fixture
async def insights(client: Client, standin: StandIn) -> AsyncIterator[Any]:
    async with lifecycle_at(client, standin.url) as svc:
        yield wire(InsightService(svc))


async def billing_sessions(store: MemoryStore) -> None:
    for s in range(3):
        await put_obs(
            store,
            *(
                obs(f"bill-{s}", n, files=[f], title=f"Edit {f}: rounding {SECRET}",
                    concepts=["billing", "rounding"], when=at(days=s))
                for n, f in enumerate(("src/billing/invoice.py", "src/billing/tax_rules.py"))
            ),
        )  # fmt: skip


async def test_reflect_stores_the_models_insights_and_asks_once_per_evidence(
    store: MemoryStore, insights: Any, standin: StandIn, client: Client
) -> None:
    await billing_sessions(store)
    out = await insights.reflect(ReflectIn())
    titles = {i["title"] for i in out["insights"]}
    assert {"Billing changes travel in pairs", "Rounding is the recurring bug"} <= titles
    stored = {
        i.title: i async for _, i in (await client.bucket(INSIGHTS_BUCKET)).scan(">", Insight)
    }
    assert stored["Billing changes travel in pairs"].confidence == 0.8
    assert stored["Billing changes travel in pairs"].sessions == 3  # our evidence, kept
    calls = len(standin.requests)
    assert calls >= 1 and all(SECRET not in r.text for r in standin.requests)
    again = await insights.reflect(ReflectIn())
    assert again["newInsights"] == 0 and len(standin.requests) == calls  # cached


async def test_reflect_with_a_malformed_reply_keeps_the_keyless_insight(
    store: MemoryStore, insights: Any, standin: StandIn
) -> None:
    standin.reply = lambda _: "<insights><insight>xml</insight></insights>"
    await billing_sessions(store)
    out = await insights.reflect(ReflectIn())
    assert out["insights"] and all(i["title"].startswith("Recurring: ") for i in out["insights"])


# ---- compress-file and flow/compress over REST ----------------------------------------------
@pytest.fixture
async def rest(
    memory_worker: Any, http_trigger: Any, spawn: Any, standin: StandIn, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    env = model_env(standin, tmp_path)
    # the files compress-file reads and writes live in the test's tmp dir: an allowed root
    memory_worker(**env, AGENTMEMORY_IMPORT_ROOT=str(tmp_path))
    spawn("workers.lifecycle", env=env)
    c = await rest_client(http_trigger())
    yield c
    await c.aclose()


async def test_compress_file_writes_the_models_markdown_when_it_keeps_the_structure(
    rest: httpx.AsyncClient, standin: StandIn, tmp_path: Path
) -> None:
    doc = tmp_path / "guide.md"
    long = "# Guide\n\n" + "This paragraph is long and says little. " * 20
    doc.write_text(long + "\n\n## Setup\n\nRun it: https://example.com/docs\n")
    r = await rest.post(A + "compress-file", json={"filePath": str(doc)})
    assert r.status_code == 200, r.text
    assert r.json()["method"] == "llm" and doc.read_text() == MARKDOWN.strip()
    assert (tmp_path / "guide.original.md").read_text().startswith(long)

    standin.reply = lambda _: "# Guide\n\nThe setup section is gone."  # loses a heading, a URL
    other = tmp_path / "notes.md"
    other.write_text(long + "\n\n## Setup\n\nRun it: https://example.com/docs\n")
    r = await rest.post(A + "compress-file", json={"filePath": str(other)})
    assert r.json()["method"] == "synthetic" and "## Setup" in other.read_text()

    before = len(standin.requests)
    secret = tmp_path / "keys.md"
    secret.write_text(long + f"\n\nDeploy with {SECRET}\n")
    r = await rest.post(A + "compress-file", json={"filePath": str(secret)})
    assert r.json()["method"] == "synthetic" and SECRET in secret.read_text()
    assert len(standin.requests) == before  # a file holding a secret is never sent


async def done(rest: httpx.AsyncClient, title: str, **kw: object) -> str:
    a = await make(rest, title, **kw)
    r = await rest.post(A + "actions/update", json={"actionId": a["id"], "status": "done"})
    assert r.status_code == 200, r.text
    return str(a["id"])


async def flow(rest: httpx.AsyncClient, ids: list[str]) -> dict[str, Any]:
    async def compressed() -> dict[str, Any] | None:
        r = await rest.post(A + "flow/compress", json={"actionIds": ids})
        return r.json() if r.status_code == 200 and r.json().get("compressed") else None

    return await eventually(compressed, timeout=20, what="flow/compress served")


async def test_flow_compress_writes_the_models_workflow_and_falls_back(
    rest: httpx.AsyncClient, standin: StandIn
) -> None:
    ids = [
        await done(rest, "profile the importer", description=f"token {SECRET}"),
        await done(rest, "batch the inserts"),
    ]
    out = await flow(rest, ids)
    m = out["memory"]
    assert m["title"] == "Workflow: Cut the importer's run time"
    assert "Lesson: profile before optimizing" in m["content"]
    assert "2. batch the inserts" in m["content"]
    flows = [r for r in standin.requests if "completed chain" in system(r)]
    assert flows and all(SECRET not in r.text for r in standin.requests)

    standin.reply = lambda _: "not json at all"
    out = await flow(rest, [await done(rest, "write the docs")])
    assert out["memory"]["title"] == "Workflow: write the docs"  # the keyless workflow
