"""`claude-bridge/read` and `claude-bridge/sync`, upstream's settings: CLAUDE_MEMORY_BRIDGE=true
turns the bridge on, CLAUDE_PROJECT_PATH names the project (its file is
`~/.claude/projects/<path with / as ->/memory/MEMORY.md`), CLAUDE_MEMORY_LINE_BUDGET caps
the file (200 lines).

Reading imports what was edited in the file: a block whose text differs from the memory it
names becomes a new version of that memory (superseding the current one), a new block a
new memory (unless a live memory already says exactly that). Writing puts the live
memories back, each with its id, and keeps the file's other sections as they were. Sync
reads, then writes, so an edit in the file is never overwritten unread. Removing a block
from the file does not forget its memory (use memory_forget): the next write puts it back."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from engine import FunctionError, Tool, operation
from functions.bridge import markdown
from functions.bridge.settings import bridge_settings
from functions.kernel.clock import now_iso
from functions.kernel.ids import new_id
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import Memory, Trust
from functions.kernel.store import StoreOwner
from functions.kernel.text import clip
from functions.kernel.trust import write_path as trust
from functions.memory.remember import remember
from functions.memory.wire import RememberIn

SETTING = "CLAUDE_MEMORY_BRIDGE"
NAME_MAX = 255
"""Bytes of a file name (the project's folder is one)."""


def _on() -> bool:
    return bridge_settings().enabled


def _budget() -> int:
    return bridge_settings().line_budget


class BridgeIn(msgspec.Struct, rename="camel", kw_only=True):
    project_path: Annotated[str, msgspec.Meta(max_length=4096)] = ""
    """The project whose MEMORY.md to use; default CLAUDE_PROJECT_PATH."""


class SyncIn(BridgeIn, kw_only=True):
    direction: Literal["read", "write", "both"] = "both"
    """read: import the file's edits; write: write the memories to the file; both (default):
    read, then write."""


class ReadOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    path: str
    content: str
    sections: dict[str, str]
    imported: int
    """New memories from blocks added in the file."""
    updated: int
    """Memories given a new version by an edit in the file."""


class SyncOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    path: str
    imported: int
    updated: int
    written: int
    """Memories written to the file."""
    lines: int


rest = routes("bridge")


class BridgeService(OwnedService[StoreOwner]):
    """Served beside the team service, over its store."""

    def __init__(self, owner: StoreOwner) -> None:
        super().__init__(owner)
        self._lock = asyncio.Lock()

    def _target(self, req: BridgeIn) -> tuple[Path, str]:
        if not _on():
            raise FunctionError(
                "NOT_FOUND",
                f"the Claude bridge is not enabled: set {SETTING}=true and CLAUDE_PROJECT_PATH",
                field=SETTING,
            )
        project = req.project_path or bridge_settings().project_path
        if not project:
            raise FunctionError(
                "UNPROCESSABLE",
                "say which project: projectPath, or CLAUDE_PROJECT_PATH",
                field="projectPath",
            )
        safe = project.replace("/", "-").replace("\\", "-")
        if safe in (".", "..") or "\0" in safe or len(safe.encode()) > NAME_MAX:
            raise FunctionError(
                "UNPROCESSABLE",
                f"projectPath cannot name a folder under ~/.claude/projects: {project[:100]!r}",
                field="projectPath",
            )
        path = Path.home() / ".claude" / "projects" / safe / "memory" / "MEMORY.md"
        return path, project

    @operation(
        "mem::claude-bridge-read",
        description="Read Claude Code's MEMORY.md and import what was edited there",
        http=rest("GET", "claude-bridge/read"),
    )
    async def read(self, req: BridgeIn) -> ReadOut:
        path, project = self._target(req)
        async with self._lock:
            text, imported, updated = await self._import(path, project)
        parsed = markdown.parse(text)
        sections = {name: body for name, body in parsed.others}
        if parsed.blocks:
            sections[markdown.KEY] = "\n\n".join(f"{b.title}\n{b.content}" for b in parsed.blocks)
        return ReadOut(
            success=True,
            path=str(path),
            content=text,
            sections=sections,
            imported=imported,
            updated=updated,
        )

    @operation(
        "mem::claude-bridge-sync",
        description="Sync memory state to/from Claude Code's native MEMORY.md file.",
        http=rest("POST", "claude-bridge/sync"),
        tool=Tool("memory_claude_bridge_sync"),
    )
    async def sync(self, req: SyncIn) -> SyncOut:
        path, project = self._target(req)
        imported = updated = written = lines = 0
        async with self._lock:
            text = await asyncio.to_thread(_read, path)
            if req.direction in ("read", "both"):
                text, imported, updated = await self._import(path, project)
            if req.direction in ("write", "both"):
                written, lines = await self._write(path, project, text)
        await self.store.audit(
            "claude-bridge-sync",
            [],
            reason=f"{path}: {imported} imported, {updated} updated, {written} written",
        )
        return SyncOut(
            success=True,
            path=str(path),
            imported=imported,
            updated=updated,
            written=written,
            lines=lines,
        )

    # ---- the two directions ----------------------------------------------------------
    async def _live(self, project: str) -> list[Memory]:
        names = {"", project, os.path.basename(project.rstrip("/"))}
        out = [
            m
            async for _, m in self.store.memories.scan(">", Memory)
            if not m.superseded_by and m.project in names
        ]
        out.sort(key=lambda m: (m.updated_at, m.id), reverse=True)  # newest first...
        out.sort(key=lambda m: m.strength, reverse=True)  # ...within the strongest first
        return out

    async def _import(self, path: Path, project: str) -> tuple[str, int, int]:
        text = await asyncio.to_thread(_read, path)
        if not text:
            return text, 0, 0
        st = self.store
        imported = updated = 0
        known = [m.content for m in await self._live(project)]
        for block in markdown.parse(text).blocks:
            # judged before the words are sanitized and scrubbed: hidden characters count
            words = {"content": block.content, "title": block.title}
            body = trust.stored_text(block.content)
            if not body.strip():
                continue
            m = await st.get(st.memories, block.id, Memory) if block.id else None
            if m is not None:
                head = await self._head(m)
                if markdown.same_text(body, m.content) or markdown.same_text(body, head.content):
                    continue  # as written (or the store moved on since): no edit here
                verdict = trust.classify_value(words, trust.BRIDGE)
                verdict = await trust.second_opinion(
                    st.client, verdict, trust.stored_value(words), trust.BRIDGE
                )
                judged = trust.trust_of(verdict, trust.BRIDGE)
                await self._new_version(head, body, trust.stored_text(block.title), judged)
                updated += 1
                continue
            if any(markdown.same_text(body, x) for x in known):
                continue
            name = os.path.basename(project.rstrip("/"))
            req = RememberIn(content=block.content, title=block.title, project=name)
            await remember(st, req, source=trust.BRIDGE)
            known.append(body)
            imported += 1
        return text, imported, updated

    async def _head(self, m: Memory) -> Memory:
        seen = 0
        while m.superseded_by and seen < 100:
            nxt = await self.store.get(self.store.memories, m.superseded_by, Memory)
            if nxt is None:
                break
            m, seen = nxt, seen + 1
        return m

    async def _new_version(self, head: Memory, content: str, title: str, judged: Trust) -> Memory:
        st = self.store
        now = now_iso()
        new = msgspec.structs.replace(
            head,
            id=new_id("mem"),
            content=content,
            title=title or head.title,
            created_at=now,
            updated_at=now,
            version=head.version + 1,
            supersedes=head.id,
            superseded_by=None,
            instance="",
            source_ids=[],
            trust=judged,  # the new words' verdict, not the version it replaces
        )
        await st.save_memory(new, supersedes=head.id, reason="edited in MEMORY.md")
        trust.count(st.client, judged)
        await st.audit("supersede", [head.id, new.id], reason="edited in MEMORY.md")
        return new

    async def _write(self, path: Path, project: str, text: str) -> tuple[int, int]:
        live = await self._live(project)
        blocks = [
            markdown.Block(title=m.title or clip(m.content, 80), content=m.content, id=m.id)
            for m in live
        ]
        parsed = markdown.parse(text)
        out = markdown.render(blocks, parsed.others, _budget())
        written = sum(1 for b in markdown.parse(out).blocks if b.id)
        if out != text:
            await asyncio.to_thread(_write_file, path, out)
        return written, out.count("\n")


def _unusable(path: Path, exc: OSError, doing: str) -> FunctionError:
    return FunctionError(
        "UNPROCESSABLE", f"cannot {doing} {path}: {exc.strerror or exc}", field="projectPath"
    )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError as exc:  # a directory, no permission...
        raise _unusable(path, exc, "read") from None


def _write_file(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".md.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise _unusable(path, exc, "write") from None
