"""Claude Code transcripts for `agentmemory import-jsonl`: the parser is the memory
domain's (functions.memory.transcripts, also behind POST /agentmemory/replay/import-jsonl);
the project is named as this machine's hooks name it."""

from __future__ import annotations

from functions.memory.transcripts import TranscriptSession, find_transcripts, parse
from workers.hooks._hookcore import Settings, project_of

__all__ = ["TranscriptSession", "find_transcripts", "parse", "project_for"]


def project_for(cwd: str) -> str:
    return project_of(Settings(), cwd) if cwd else "imported"
