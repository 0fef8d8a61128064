"""MEMORY.md as the bridge writes and reads it: a header, `## Key Memories` with one
`### <title>` block per memory (its id in an HTML comment under the heading, which renders
as nothing), and any other section kept as it was."""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec

HEADER = "# Agent Memory (auto-synced by agentmemory)"
KEY = "Key Memories"
_MARK = re.compile(r"^<!--\s*agentmemory:id=([^\s>]+)\s*-->$")


class Block(msgspec.Struct, kw_only=True):
    title: str
    content: str
    id: str = ""
    """The memory it was written from; empty for a block added in the file."""


class Parsed(msgspec.Struct, kw_only=True):
    blocks: list[Block]
    """The `### ` blocks of `## Key Memories`."""
    others: list[tuple[str, str]]
    """Every other `## ` section (name, text), in order."""


def mark(memory_id: str) -> str:
    return f"<!-- agentmemory:id={memory_id} -->"


def parse(text: str) -> Parsed:
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
    blocks: list[Block] = []
    others: list[tuple[str, str]] = []
    for name, lines in sections:
        if name != KEY:
            others.append((name, "\n".join(lines).strip()))
            continue
        cur: list[str] | None = None
        for line in lines:
            if line.startswith("### "):
                cur = []
                blocks.append(Block(title=line[4:].strip(), content=""))
                continue
            if cur is None:
                continue  # text before the first block: not a memory
            m = _MARK.match(line.strip())
            if m and not blocks[-1].id and not cur:
                blocks[-1].id = m.group(1)
                continue
            cur.append(line)
            blocks[-1].content = "\n".join(cur).strip()
    return Parsed(blocks=[b for b in blocks if b.content or b.title], others=others)


def render(blocks: Iterable[Block], others: list[tuple[str, str]], line_budget: int) -> str:
    """The file: our blocks until `line_budget` lines, then the other sections whole."""
    tail: list[str] = []
    for name, body in others:
        tail += [f"## {name}", *([body] if body else []), ""]
    lines = [HEADER, "", f"## {KEY}", ""]
    for b in blocks:
        chunk = [f"### {b.title}", mark(b.id), *b.content.splitlines(), ""]
        if len(lines) + len(chunk) + len(tail) > line_budget and len(lines) > 4:
            break
        lines += chunk
    return "\n".join(lines + tail).rstrip("\n") + "\n"


def same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())
