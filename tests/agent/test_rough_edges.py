"""The rough edges a new user met (issue 27), each shown fixed against the real service."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from functions.kernel.text import clip
from tests.agent.cli_stack import CLI, CliStack
from tests.fixtures import wait_until


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_mcp_saves_land_in_the_callers_project_and_numbers_may_be_strings(
    running_stack: CliStack,
) -> None:
    st = running_stack
    params = StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "mcp"],
        env={**st.env, "AGENTMEMORY_URL": st.url},
        cwd=str(st.project_dir),  # the agent starts its MCP server in the project it works in
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        saved = await s.call_tool("memory_save", {"content": "Payments retry with jitter"})
        assert not saved.is_error, _text(saved)
        assert saved.structured_content["memory"]["project"] == "payments-svc"
        named = await s.call_tool("memory_save", {"content": "elsewhere", "project": "other"})
        assert named.structured_content["memory"]["project"] == "other"  # an explicit one wins
        found = await s.call_tool("memory_smart_search", {"query": "jitter", "limit": "3"})
        assert not found.is_error, _text(found)
        sessions = await s.call_tool("memory_sessions", {"limit": "2"})
        assert not sessions.is_error, _text(sessions)


def test_head_livez_one_boot_id_and_one_error_shape(running_stack: CliStack) -> None:
    url = f"{running_stack.url}/agentmemory"
    with httpx.Client(timeout=10) as http:
        head = http.head(f"{url}/livez")
        assert head.status_code == 200 and head.content == b""
        assert int(head.headers["content-length"]) > 0  # the GET's, as HEAD promises
        # Both memory replicas answer on the port (SO_REUSEPORT): fresh connections reach both.
        boots = set()
        for _ in range(30):
            with httpx.Client(timeout=10) as fresh:
                boots.add(fresh.get(f"{url}/livez").json()["bootId"])
        assert len(boots) == 1
        refused = http.get(f"{url}/sessions", headers={"Authorization": "Bearer wrong"})
        bad = http.post(
            f"{url}/remember",
            json={"content": ""},
            headers={"Authorization": f"Bearer {running_stack.secret()}"},
        )
    assert refused.status_code == 401 and bad.status_code == 400
    for r in (refused, bad):
        assert set(r.json()) == {"error"} and {"code", "message"} <= set(r.json()["error"])


def test_importing_a_file_that_is_no_export_is_an_error_naming_what_is_wrong(
    running_stack: CliStack,
) -> None:
    bad = running_stack.home / "bad.json"
    bad.write_text(json.dumps({"bad": 1}))
    res = running_stack.cli("import", str(bad), "--url", running_stack.url, check=False)
    assert res.returncode == 1
    assert "not an agentmemory export" in res.stderr and "bad" in res.stderr
    assert "`data`" in res.stderr or "data" in res.stderr


def test_lessons_from_an_imported_transcript_say_where_they_came_from(
    running_stack: CliStack,
) -> None:
    st = running_stack
    line = {
        "type": "user",
        "uuid": "u1",
        "sessionId": "imported-lesson-1",
        "timestamp": "2026-11-30T10:00:00Z",
        "cwd": str(st.project_dir),
        "message": {
            "role": "user",
            "content": "note: always run the migrations before the seed script",
        },
    }
    with st.rest() as c:
        r = c.post(
            "/agentmemory/replay/import-jsonl",
            json={"content": json.dumps(line) + "\n", "name": "lesson.jsonl"},
        )
        assert r.status_code in (200, 202), r.text

        def lesson() -> Any:
            found = c.get("/agentmemory/lessons").json().get("lessons", [])
            return [x for x in found if "migrations before the seed" in x["content"]]

        (saved,) = wait_until(lesson, timeout=30, what="the imported lesson")
    assert saved["source"] == "import"


@pytest.mark.unit
def test_a_cut_title_ends_with_an_ellipsis() -> None:
    assert clip("short", 80) == "short"
    long = "word " * 40
    cut = clip(long, 80)
    assert len(cut) <= 80 and cut.endswith("…") and not cut.endswith(" …")


def test_instance_in_either_position_reaches_the_same_server(running_stack: CliStack) -> None:
    st = running_stack
    where = ["--data-dir", str(st.data_dir), "--port", str(st.port)]
    for args in (["status", "--json", *where], [*where, "status", "--json"]):
        res = subprocess.run(
            [*CLI, *args], env=st.env, cwd=st.home, capture_output=True, text=True, timeout=60
        )
        assert res.returncode == 0, res.stdout + res.stderr
        assert json.loads(res.stdout)["ports"]["rest"] == st.port
