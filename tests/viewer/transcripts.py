"""Claude Code transcripts for the import tests."""

from __future__ import annotations

import json
from typing import Any


def transcript(sid: str, cwd: str, turns: int = 3) -> str:
    """A Claude Code transcript: a prompt, then per turn an assistant text with a tool use
    and its result; the texts state rules (lessons) a session import should learn."""
    base = {"sessionId": sid, "cwd": cwd, "version": "2.0.14", "gitBranch": "main"}
    recs: list[dict[str, Any]] = [
        {**base, "type": "summary", "summary": "export fix"},
        {**base, "type": "user", "uuid": f"{sid}-u0", "timestamp": "2026-11-20T09:00:00.000Z",
         "message": {"role": "user", "content": "The orders CSV export is missing the VAT column. "
                     "Always keep the column order stable for the accounting import."}},
    ]  # fmt: skip
    for i in range(turns):
        tid = f"toolu_{sid[-4:]}_{i}"
        recs.append(
            {**base, "type": "assistant", "uuid": f"{sid}-a{i}",
             "timestamp": f"2026-11-20T09:0{i + 1}:00.000Z",
             "message": {"role": "assistant", "content": [
                 {"type": "text", "text": f"Step {i}: checking the exporter. Never reorder the "
                  "existing columns, the accounting import reads them by position."},
                 {"type": "tool_use", "id": tid, "name": "Bash",
                  "input": {"command": f"pytest tests/export -k step{i}"}}]}}
        )  # fmt: skip
        recs.append(
            {**base, "type": "user", "uuid": f"{sid}-r{i}",
             "timestamp": f"2026-11-20T09:0{i + 1}:30.000Z",
             "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": tid, "content": f"{i + 2} passed",
                  "is_error": False}]}}
        )  # fmt: skip
    return "\n".join(json.dumps(r) for r in recs) + "\n{torn"
