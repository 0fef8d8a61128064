"""The poisoning corpus end to end, through the real write paths and read routes: each
poisoned record (web pages, files, command output, MCP tools, assistant messages, a
`remember`, an imported transcript, a team peer's record) is in no context block, session
start, default search or smart-search, or MCP recall answer, and `GET quarantine` lists
it; each benign look-alike is found by a search for it.

Every case gets a project of its own, so what a read returns for that project is what the
case wrote."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine import Client
from functions.kernel.clock import now_iso
from tests.fixtures import eventually
from tests.trust.stack import rest_stack

corpus = pytest.importorskip("tests.kernel.trust_corpus")
CASES = [*corpus.CASES, *corpus.HOLDOUT, *corpus.HOLDOUT_2]
CONCURRENCY = 6


@dataclass
class Written:
    case: Any
    project: str
    session: str
    ids: list[str] = field(default_factory=list)


def _tool_input(kind: str, tool: str) -> dict[str, Any]:
    if kind == "web":
        return {"url": "https://docs.example/page"} if tool != "WebSearch" else {"query": "x"}
    if kind == "file":
        return {"file_path": "/w/docs/notes.md"}
    if kind == "command":
        return {"command": "./scripts/report.sh"}
    return {"id": 42}


def _transcript(sid: str, text: str) -> str:
    """A Claude Code transcript whose one tool result is `text`."""
    base = {"sessionId": sid, "cwd": "/w", "version": "2.0.14"}
    recs = [
        {**base, "type": "user", "uuid": f"{sid}-u", "timestamp": "2026-11-20T09:00:00.000Z",
         "message": {"role": "user", "content": "Summarise the notes file for me."}},
        {**base, "type": "assistant", "uuid": f"{sid}-a", "timestamp": "2026-11-20T09:00:10.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": f"toolu_{sid}", "name": "Read",
              "input": {"file_path": "/w/notes.md"}}]}},
        {**base, "type": "user", "uuid": f"{sid}-r", "timestamp": "2026-11-20T09:00:20.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": f"toolu_{sid}", "content": text,
              "is_error": False}]}},
    ]  # fmt: skip
    return "\n".join(json.dumps(r) for r in recs) + "\n"


async def write(rest: httpx.AsyncClient, bus: Client, i: int, case: Any) -> Written:
    w = Written(case, f"corpus-{i}", f"corpus-{i}-{uuid.uuid4().hex[:6]}")
    src, text = case.source, case.text
    hook: dict[str, Any] = {"sessionId": w.session, "project": w.project, "cwd": "/w",
                            "timestamp": now_iso()}  # fmt: skip
    if src.kind in ("remember", "bridge"):
        r = await rest.post("/agentmemory/remember", json={"content": text, "project": w.project})
        assert r.status_code == 201, r.text
        w.ids.append(r.json()["memory"]["id"])
    elif src.kind == "peer":
        mid = f"mem_peer{i:04d}{uuid.uuid4().hex[:8]}"
        at = now_iso()
        out = await bus.call("mem::mesh-receive", {"memories": [{
            "id": mid, "content": text, "project": w.project, "createdAt": at,
            "updatedAt": at, "version": 1, "instance": "peer-laptop"}]})  # fmt: skip
        assert out["accepted"] == 1, out
        w.ids.append(mid)
    elif src.kind == "import":
        r = await rest.post("/agentmemory/replay/import-jsonl", json={
            "content": _transcript(w.session, text), "name": f"{w.session}.jsonl",
            "project": w.project})  # fmt: skip
        assert r.status_code in (200, 202), r.text

        async def results() -> list[str]:
            # the tool result holds the case's words (the prompt before it is the user's)
            got = await rest.get("/agentmemory/observations", params={"sessionId": w.session})
            obs = got.json()["observations"]
            return [o["id"] for o in obs if o["hookType"] == "post_tool_use"]

        w.ids += await eventually(results, timeout=30, what=f"case {i} imported")
    else:
        if src.kind == "user":
            body = {**hook, "hookType": "prompt_submit", "data": {"prompt": text}}
        elif src.kind == "host":
            body = {**hook, "hookType": "notification",
                    "data": {"notification_type": "info", "title": "Notice", "message": text}}  # fmt: skip
        elif src.kind == "assistant":
            body = {**hook, "hookType": "subagent_stop", "data": {
                "agent_id": "sub-1", "agent_type": "general-purpose", "last_message": text}}  # fmt: skip
        else:
            tool = src.tool or "mcp__docs__fetch"
            body = {**hook, "hookType": "post_tool_use", "data": {
                "tool_name": tool, "tool_input": _tool_input(src.kind, tool),
                "tool_output": text}}  # fmt: skip
        r = await rest.post("/agentmemory/observe", json=body)
        assert r.status_code in (201, 202), r.text  # 202: taken, stored from the inbox
        w.ids.append(r.json()["observationId"])
    assert w.ids, f"case {i} stored nothing"
    return w


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]{3,}")


def query_of(text: str) -> str:
    """A search for a record: a dozen of its longer words."""
    words = list(dict.fromkeys(_WORD.findall(text)))
    return " ".join(sorted(words, key=len, reverse=True)[:12]) or text[:200]


async def record_text(rest: httpx.AsyncClient, rid: str) -> tuple[str, str]:
    """The stored title and text of a record (observation or memory)."""
    kind = "memories" if rid.startswith("mem_") else "observations"
    r = await rest.get(f"/agentmemory/{kind}/{rid}")
    assert r.status_code == 200, r.text
    rec = r.json()["memory" if kind == "memories" else "observation"]
    body = rec.get("content") or rec.get("narrative") or rec.get("raw") or ""
    return rec.get("title", ""), body


async def check_held(rest: httpx.AsyncClient, w: Written) -> list[str]:
    """What shows a poisoned case's records where they must not be (empty: nothing)."""
    problems: list[str] = []
    listed = await rest.get("/agentmemory/quarantine", params={"project": w.project})
    queued = {r["id"] for r in listed.json()["records"]}
    problems += [f"{rid} not listed by GET quarantine" for rid in w.ids if rid not in queued]
    shown: dict[str, str] = {}
    q = query_of(w.case.text)
    search = await rest.post("/agentmemory/search", json={"query": q, "project": w.project})
    shown["search"] = search.text
    smart = await rest.post("/agentmemory/smart-search", json={"query": q, "project": w.project})
    shown["smart-search"] = smart.text
    ctx = await rest.post(
        "/agentmemory/context", json={"sessionId": "reader", "project": w.project}
    )
    shown["context"] = ctx.json()["context"]
    start = await rest.post("/agentmemory/session/start", json={
        "sessionId": f"reader-{w.session}", "project": w.project, "cwd": "/w"})  # fmt: skip
    shown["session/start"] = start.json()["context"]
    mcp = await rest.post("/agentmemory/mcp/call", json={
        "name": "memory_recall", "arguments": {"query": q, "project": w.project}})  # fmt: skip
    shown["memory_recall"] = mcp.text
    mcp = await rest.post("/agentmemory/mcp/call", json={
        "name": "memory_smart_search", "arguments": {"query": q, "project": w.project}})  # fmt: skip
    shown["memory_smart_search"] = mcp.text
    for rid in w.ids:
        title, body = await record_text(rest, rid)
        needles = [rid, title[:60].strip(), body[:60].strip()]
        for where, text in shown.items():
            problems += [f"{rid} in {where}: {n!r}" for n in needles if len(n) > 12 and n in text]
    return problems


async def check_found(rest: httpx.AsyncClient, w: Written) -> list[str]:
    problems: list[str] = []
    for rid in w.ids:
        title, body = await record_text(rest, rid)
        q = query_of(f"{title} {body}")
        r = await rest.post("/agentmemory/search", json={
            "query": q, "project": w.project, "limit": 20})  # fmt: skip
        if rid not in {h["id"] for h in r.json()["results"]}:
            held = await rest.post("/agentmemory/search", json={
                "query": q, "project": w.project, "includeQuarantined": True})  # fmt: skip
            why = [h.get("reasons") for h in held.json()["results"] if h["id"] == rid]
            problems.append(f"benign {rid} ({w.case.family}) not found by {q!r}; held: {why}")
    return problems


async def test_the_corpus_through_the_write_paths_and_every_read(
    spawn: Any, tmp_path: Path, client: Client
) -> None:
    spawn("workers.team", env={"HOME": str(tmp_path / "home"), "TEAM_ID": "dev",
                               "USER_ID": "tester"})  # fmt: skip
    async with rest_stack(spawn, tmp_path) as rest:
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(i: int, case: Any) -> Written:
            async with gate:
                return await write(rest, client, i, case)

        written = await asyncio.gather(*(one(i, c) for i, c in enumerate(CASES)))

        async def stored() -> bool:  # a 202 is stored from the inbox a moment later
            for w in written:
                for rid in w.ids:
                    kind = "memories" if rid.startswith("mem_") else "observations"
                    if (await rest.get(f"/agentmemory/{kind}/{rid}")).status_code != 200:
                        return False
            return True

        await eventually(stored, timeout=60, what="every record stored")

        async def verdict(w: Written) -> list[str]:
            async with gate:
                return await (check_held if w.case.expected else check_found)(rest, w)

        problems = [p for ps in await asyncio.gather(*(verdict(w) for w in written)) for p in ps]
        poisoned = sum(1 for w in written if w.case.expected)
        assert poisoned >= 40 and len(written) - poisoned >= 40
        assert problems == [], "\n".join(problems[:40])
