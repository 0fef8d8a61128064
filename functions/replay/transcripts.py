"""Claude Code transcripts (`~/.claude/projects/<cwd>/<session>.jsonl`) → observe calls.

A user's text becomes `prompt_submit`; an assistant's text becomes `stop` with its
`assistant_response`; an assistant `tool_use` paired with its `tool_result` becomes
`post_tool_use` (or `post_tool_failure` when `is_error`). Event ids are the record's `uuid`
and the tool's `id`, so importing twice stores everything once.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUTPUT_MAX = 8000
"""Characters kept of a prompt, tool input string or output (the hooks' own cap)."""


def truncate(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n…[truncated {len(text) - limit} chars]"


def cap(value: Any, limit: int) -> Any:
    """The same JSON value with every long string cut."""
    if isinstance(value, str):
        return truncate(value, limit)
    if isinstance(value, dict):
        return {k: cap(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [cap(v, limit) for v in value]
    return value


@dataclass
class TranscriptSession:
    session_id: str
    cwd: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)


def find_transcripts(root: Path, limit: int | None = None, visit: int | None = None) -> list[Path]:
    """The .jsonl files under `root`, sorted; with `limit`, at most that many, and at most
    `visit` directory entries looked at (a root like `/` must not walk the whole disk)."""
    if root.is_file():
        return [root]
    found: list[Path] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        seen += len(dirnames) + len(filenames)
        found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".jsonl")]
        if (limit is not None and len(found) > limit) or (visit is not None and seen > visit):
            break
    return sorted(p for p in found if p.is_file())


def _records(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8", errors="replace") as f:
        yield from _lines(f)


def _blocks(rec: dict[str, Any]) -> list[Any]:
    content = (rec.get("message") or {}).get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


# Claude Code appends its own notes to what a tool returned ("<system-reminder>Whenever you
# read a file ..."): the host's words to the model, not the tool's output. Kept, they would
# read as a forged system block in every imported tool result.
_HOST_NOTE = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.S)


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        text = "\n".join(
            str(c.get("text", ""))
            for c in content
            if isinstance(c, dict) and c.get("type") == "text"
        )
    else:
        text = str(content or "")
    return _HOST_NOTE.sub("\n", text).strip() if "<system-reminder>" in text else text


def parse(path: Path) -> list[TranscriptSession]:
    """One file usually holds one session; resumed sessions may mix ids, so group by id."""
    return parse_records(_records(path), path.stem)


def parse_text(text: str, name: str) -> list[TranscriptSession]:
    """The sessions of a transcript's text (an upload); `name` stands in for a missing
    session id, as the file name does."""
    return parse_records(_lines(text.splitlines()), name)


def _lines(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a torn last line of a live session
        if isinstance(rec, dict):
            yield rec


def parse_records(records: Iterable[dict[str, Any]], name: str) -> list[TranscriptSession]:
    sessions: dict[str, TranscriptSession] = {}
    pending: dict[str, tuple[dict[str, Any], str]] = {}
    for rec in records:
        sid = str(rec.get("sessionId") or name)
        sess = sessions.setdefault(sid, TranscriptSession(sid))
        sess.cwd = sess.cwd or str(rec.get("cwd") or "")
        ts = str(rec.get("timestamp") or "")
        kind = rec.get("type")
        if kind not in ("user", "assistant") or rec.get("isMeta"):
            continue
        said = [
            str(b.get("text") or "").strip()
            for b in _blocks(rec)
            if kind == "assistant" and isinstance(b, dict) and b.get("type") == "text"
        ]
        if any(said):
            response = "\n\n".join(t for t in said if t)
            said_data = {"assistant_response": response[:OUTPUT_MAX]}
            sess.events.append(_event(sid, "stop", ts, said_data, str(rec.get("uuid") or "")))
        for block in _blocks(rec):
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if kind == "user" and btype == "text":
                text = str(block.get("text") or "").strip()
                if text and not text.startswith("<"):  # skip command/system wrappers
                    sess.events.append(
                        _event(
                            sid,
                            "prompt_submit",
                            ts,
                            {"prompt": text[:OUTPUT_MAX]},
                            str(rec.get("uuid") or ""),
                        )
                    )
            elif kind == "assistant" and btype == "tool_use":
                pending[str(block.get("id"))] = (block, ts)
            elif kind == "user" and btype == "tool_result":
                tool_id = str(block.get("tool_use_id") or "")
                use, _ = pending.pop(tool_id, ({}, ts))
                name = str(use.get("name") or "unknown")
                tool_input = use.get("input") or {}
                output = _result_text(block)
                data: dict[str, Any]
                if block.get("is_error"):
                    data = {
                        "tool_name": name,
                        "tool_input": truncate(tool_input, OUTPUT_MAX),
                        "error": output[:OUTPUT_MAX] or "failed",
                    }
                    sess.events.append(_event(sid, "post_tool_failure", ts, data, tool_id))
                else:
                    data = {
                        "tool_name": name,
                        "tool_input": cap(tool_input, OUTPUT_MAX),
                        "tool_output": truncate(output, OUTPUT_MAX),
                    }
                    sess.events.append(_event(sid, "post_tool_use", ts, data, tool_id))
    return [s for s in sessions.values() if s.events]


def _event(sid: str, hook: str, ts: str, data: dict[str, Any], event_id: str) -> dict[str, Any]:
    return {"sessionId": sid, "hookType": hook, "timestamp": ts, "data": data, "eventId": event_id}


def project_of_cwd(cwd: str) -> str:
    """The folder name of the git root above `cwd` (else of `cwd`), as the hooks name it."""
    path = Path(cwd).absolute()
    for probe in (path, *path.parents):
        if (probe / ".git").exists():
            return probe.name or str(probe)
    return path.name or "default"
