"""`agentmemory import-jsonl`: Claude Code transcripts in, searchable sessions out, once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agent.cli_stack import CliStack
from workers.cli.transcripts import parse

TOPICS = {
    "a1b2c3d4-0000-4000-8000-000000000001": ("orders-api", "Why is the orders export CSV missing the VAT column?", "Edit", {"file_path": "src/export/csv.py"}, "Added vat_amount column to the CSV exporter", False),
    "a1b2c3d4-0000-4000-8000-000000000002": ("orders-api", "Run the migrations for the invoices table", "Bash", {"command": "alembic upgrade head"}, "sqlalchemy.exc.OperationalError: relation invoices_tmp already exists", True),
    "a1b2c3d4-0000-4000-8000-000000000003": ("mobile-app", "Fix the crash when the camera permission is denied", "Edit", {"file_path": "lib/camera/permission.dart"}, "Guarded PermissionStatus.denied before opening the camera preview", False),
}  # fmt: skip


def _transcript(
    sid: str, cwd: str, prompt: str, tool: str, tool_input: Any, result: str, failed: bool
) -> list[dict[str, Any]]:
    base = {"sessionId": sid, "cwd": cwd, "version": "2.0.14", "gitBranch": "main"}
    tid = f"toolu_{sid[-4:]}_1"
    return [
        {**base, "type": "summary", "summary": "imported"},
        {**base, "type": "user", "uuid": f"{sid}-u1", "parentUuid": None, "timestamp": "2026-11-20T09:00:00.000Z", "message": {"role": "user", "content": prompt}},
        {**base, "type": "assistant", "uuid": f"{sid}-a1", "parentUuid": f"{sid}-u1", "timestamp": "2026-11-20T09:00:05.000Z", "message": {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}, {"type": "tool_use", "id": tid, "name": tool, "input": tool_input}]}},
        {**base, "type": "user", "uuid": f"{sid}-u2", "parentUuid": f"{sid}-a1", "timestamp": "2026-11-20T09:00:09.000Z", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": result, "is_error": failed}]}},
        {**base, "type": "user", "uuid": f"{sid}-u3", "isMeta": True, "timestamp": "2026-11-20T09:00:10.000Z", "message": {"role": "user", "content": "<command-name>/clear</command-name>"}},
    ]  # fmt: skip


def _write_projects(home: Path) -> Path:
    root = home / ".claude" / "projects"
    for sid, (project, prompt, tool, tool_input, result, failed) in TOPICS.items():
        cwd = f"/home/dev/{project}"
        folder = root / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        lines = _transcript(sid, cwd, prompt, tool, tool_input, result, failed)
        (folder / f"{sid}.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n{torn")
    return root


@pytest.mark.unit
def test_transcript_parser_pairs_tool_use_with_its_result(tmp_path: Path) -> None:
    root = _write_projects(tmp_path)
    sid = "a1b2c3d4-0000-4000-8000-000000000002"
    (session,) = parse(next(root.rglob(f"{sid}.jsonl")))
    hooks = [e["hookType"] for e in session.events]
    assert hooks == ["prompt_submit", "stop", "post_tool_failure"]
    assert session.events[1]["data"] == {"assistant_response": "Let me look."}
    failure = session.events[2]
    assert failure["eventId"] == "toolu_0002_1" and "already exists" in failure["data"]["error"]
    assert session.cwd == "/home/dev/orders-api"


def test_import_jsonl_is_idempotent_and_sessions_are_searchable(stack: CliStack) -> None:
    stack.start()
    _write_projects(stack.home)
    first = stack.cli("import-jsonl")
    assert "imported 3 session(s), 9 event(s) from 3 file(s): 9 new" in first.stdout
    counts = {sid: len(stack.observations(sid)) for sid in TOPICS}
    assert counts == dict.fromkeys(TOPICS, 3)  # a prompt, a response, a tool call
    assert {o["origin"] for sid in TOPICS for o in stack.observations(sid)} == {"import"}

    again = stack.cli("import-jsonl", str(stack.home / ".claude" / "projects"))
    assert ": 0 new" in again.stdout
    assert {sid: len(stack.observations(sid)) for sid in TOPICS} == counts
    projects = {o["project"] for sid in TOPICS for o in stack.observations(sid)}
    assert projects == {"orders-api", "mobile-app"}

    found = json.loads(stack.cli("search", "camera permission denied crash", "--json").stdout)
    assert "a1b2c3d4-0000-4000-8000-000000000003" in json.dumps(found)


@pytest.mark.unit
def test_a_large_transcript_is_sent_in_pieces_that_keep_a_call_with_its_result(
    tmp_path: Path,
) -> None:
    from workers.cli.transcripts import chunks

    root = _write_projects(tmp_path)
    path = next(root.rglob("*.jsonl"))
    pieces = list(chunks(path, limit=1))  # cut wherever allowed
    assert "".join(pieces) == path.read_text()
    for piece in pieces:  # a tool_use never travels without its tool_result
        assert ('"type": "tool_use"' in piece) == ('"type": "tool_result"' in piece), piece
    assert len(pieces) >= 3
