"""Claude Code transcripts for `agentmemory import-jsonl`: each file goes to the server's
import (POST /agentmemory/replay/import-jsonl, which parses, stores, marks origin `import`
and learns lessons; the parser is functions.replay.transcripts), in pieces when it is large.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from functions.replay.transcripts import TranscriptSession, find_transcripts, parse

__all__ = ["TranscriptSession", "chunks", "find_transcripts", "parse"]

CHUNK = 8 * 1024 * 1024
"""Bytes of transcript per request (the route takes 16 MiB of text)."""


def _tool_ids(line: str) -> tuple[set[str], set[str]]:
    """Tool uses a record opens and tool results it closes."""
    try:
        rec = json.loads(line)
        content = rec.get("message", {}).get("content")
    except (ValueError, AttributeError):
        return set(), set()
    opened, closed = set(), set()
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_use":
            opened.add(str(b.get("id")))
        elif isinstance(b, dict) and b.get("type") == "tool_result":
            closed.add(str(b.get("tool_use_id")))
    return opened, closed


def chunks(path: Path, limit: int = CHUNK) -> Iterator[str]:
    """The file's text in pieces of about `limit` bytes, cut only between records and where
    no tool use waits for its result (a call and its result must travel together)."""
    piece: list[str] = []
    size = 0
    waiting: set[str] = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            opened, closed = _tool_ids(line)
            waiting = (waiting | opened) - closed
            piece.append(line)
            size += len(line.encode())
            if size >= limit and not waiting:
                yield "".join(piece)
                piece, size = [], 0
    if piece:
        yield "".join(piece)
