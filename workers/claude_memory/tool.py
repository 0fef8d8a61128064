"""`AgentMemoryTool`: the anthropic SDK's abstract memory tool, backed by agentmemory.

The model's commands (view, create, str_replace, insert, delete, rename) act on the
files of `MemoryFiles` (store.py); what the model reads back follows the SDK's own
filesystem backend, so a model that knows one knows the other. `AsyncAgentMemoryTool` runs
the same in a worker thread for the SDK's async runner."""

from __future__ import annotations

from anthropic.lib.tools import (
    BetaAbstractMemoryTool,
    BetaAsyncAbstractMemoryTool,
    ToolError,
)
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from anyio.to_thread import run_sync

from workers.claude_memory import text
from workers.claude_memory.paths import ROOT, human_size, memory_path, under
from workers.claude_memory.store import MemoryFile, MemoryFiles

DEPTH = 2
"""Levels a folder's view goes down, as the SDK's backend shows them."""


class AgentMemoryTool(BetaAbstractMemoryTool):
    def __init__(
        self,
        *,
        project: str = "claude-memory",
        agent_id: str = "claude-api",
        url: str | None = None,
        secret: str | None = None,
        files: MemoryFiles | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        """`project` and `agent_id`: where the files are kept and whose they are; `url` and
        `secret`: the server (default AGENTMEMORY_URL or this machine's, and its secret)."""
        super().__init__(cache_control=cache_control)
        self.files = files or MemoryFiles(
            project=project, agent_id=agent_id, url=url, secret=secret
        )

    def _file(self, path: str) -> MemoryFile:
        found = self.files.files().get(path)
        if found is None:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return found

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        path = memory_path(command.path)
        every = self.files.files()
        if path in every:
            return text.view(path, every[path].text, command.view_range)
        inside = {p: f for p, f in every.items() if under(p, path)}
        if not inside and path != ROOT:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        lines = [f"{human_size(sum(f.size for f in inside.values()))}\t{path}"]
        base = path.rstrip("/") + "/"
        folders: dict[str, int] = {}
        for p, f in inside.items():
            parts = p[len(base) :].split("/")
            for depth in range(1, min(len(parts), DEPTH)):
                folder = base + "/".join(parts[:depth]) + "/"
                folders[folder] = folders.get(folder, 0) + f.size
        entries = {p: f.size for p, f in inside.items() if p[len(base) :].count("/") < DEPTH}
        entries.update(folders)
        lines += [f"{human_size(size)}\t{p}" for p, size in sorted(entries.items())]
        return (
            f"Here're the files and directories up to {DEPTH} levels deep in {path}, excluding "
            "hidden items:\n" + "\n".join(lines)
        )

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        path = memory_path(command.path)
        if path == ROOT:
            raise ToolError(f"{ROOT} is the directory itself: name a file in it")
        every = self.files.files()
        if any(under(p, path) and p != path for p in every):
            raise ToolError(f"{path} is a directory: name a file in it")
        saved = self.files.write(path, command.file_text, every.get(path))
        verb = "created" if saved.version == 1 else f"overwritten (version {saved.version})"
        return f"File {verb} successfully at: {path}"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        path = memory_path(command.path)
        f = self._file(path)
        new, said = text.replace_once(path, f.text, command.old_str, command.new_str)
        self.files.write(path, new, f)
        return said

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        path = memory_path(command.path)
        f = self._file(path)
        self.files.write(path, text.insert_at(f.text, command.insert_line, command.insert_text), f)
        return f"The file {path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        path = memory_path(command.path)
        if path == ROOT:
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        gone = [f for p, f in self.files.files().items() if under(p, path)]
        if not gone:
            raise ToolError(f"The path {path} does not exist")
        for f in gone:
            self.files.delete(f)
        return f"Successfully deleted {path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        old, new = memory_path(command.old_path), memory_path(command.new_path)
        if ROOT in (old, new):
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        every = self.files.files()
        if any(under(p, new) for p in every):
            raise ToolError(f"The destination {new} already exists")
        moving = {p: f for p, f in every.items() if under(p, old)}
        if not moving:
            raise ToolError(f"The path {old} does not exist")
        for p, f in moving.items():
            # the next version of the same memory, under its new path: its history stays
            self.files.write(new + p[len(old) :], f.text, f)
        return f"Successfully renamed {old} to {new}"


class AsyncAgentMemoryTool(BetaAsyncAbstractMemoryTool):
    """The same backend for `AsyncAnthropic`'s tool runner (each command in a thread)."""

    def __init__(
        self,
        *,
        project: str = "claude-memory",
        agent_id: str = "claude-api",
        url: str | None = None,
        secret: str | None = None,
        files: MemoryFiles | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.sync = AgentMemoryTool(
            project=project, agent_id=agent_id, url=url, secret=secret, files=files
        )

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await run_sync(self.sync.view, command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await run_sync(self.sync.create, command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await run_sync(self.sync.str_replace, command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await run_sync(self.sync.insert, command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await run_sync(self.sync.delete, command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await run_sync(self.sync.rename, command)
