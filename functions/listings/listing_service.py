"""Read-only views over stored records: the consolidated tiers (semantic facts, procedures)
and sessions by git branch and worktree. (A session's replay: functions/replay.)"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

import msgspec

from engine import FunctionError, operation
from functions.kernel.owned import OwnedService, routes
from functions.kernel.records import Memory, Session
from functions.kernel.store import StoreOwner
from functions.kernel.views import MemoryView, SessionView, as_view

Limit = Annotated[int, msgspec.Meta(ge=1, le=10_000)]


class TierIn(msgspec.Struct, rename="camel", kw_only=True):
    project: str = ""
    limit: Limit = 500


class SemanticOut(msgspec.Struct, kw_only=True):
    semantic: list[MemoryView]


class ProceduralOut(msgspec.Struct, kw_only=True):
    procedural: list[MemoryView]


class CwdIn(msgspec.Struct, rename="camel", kw_only=True):
    cwd: str = ""
    """A directory on the server's machine; default the server's working directory."""
    branch: str = ""


class Worktree(msgspec.Struct, kw_only=True):
    path: str
    head: str = ""
    branch: str = ""
    bare: bool = False


class WorktreeInfo(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    is_worktree: bool
    branch: str | None
    top_level: str
    main_repo_root: str
    git_dir: str | None
    common_dir: str | None


class WorktreesOut(msgspec.Struct, kw_only=True):
    success: bool
    worktrees: list[Worktree]


class BranchSessionsOut(msgspec.Struct, rename="camel", kw_only=True):
    success: bool
    sessions: list[SessionView]
    project_root: str
    branch: str | None
    is_worktree: bool


rest = routes("listings")


def _cwd(raw: str) -> Path:
    try:
        path = Path(raw or os.getcwd()).expanduser()
        found = path.is_dir()
    except (OSError, ValueError):  # a name the OS cannot even look up
        found = False
    if not found:
        raise FunctionError("NOT_FOUND", f"no directory {raw!r} on this machine", field="cwd")
    return path.resolve()


async def _git(cwd: Path, *args: str) -> str | None:
    try:
        proc = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:  # no git on this machine
        return None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=5)
    except TimeoutError:
        proc.kill()
        return None
    return out.decode(errors="replace").strip() if proc.returncode == 0 else None


async def worktree_info(cwd: Path) -> WorktreeInfo:
    git_dir = await _git(cwd, "rev-parse", "--git-dir")
    common = await _git(cwd, "rev-parse", "--git-common-dir")
    top = await _git(cwd, "rev-parse", "--show-toplevel")
    if git_dir is None or common is None or top is None:
        return WorktreeInfo(
            success=True,
            is_worktree=False,
            branch=None,
            top_level=str(cwd),
            main_repo_root=str(cwd),
            git_dir=None,
            common_dir=None,
        )
    branch = await _git(cwd, "rev-parse", "--abbrev-ref", "HEAD") or "detached"
    gd, cd = (cwd / git_dir).resolve(), (cwd / common).resolve()
    linked = gd != cd
    return WorktreeInfo(
        success=True,
        is_worktree=linked,
        branch=branch,
        top_level=top,
        main_repo_root=str(cd.parent) if linked else top,
        git_dir=str(gd),
        common_dir=str(cd),
    )


class ListingService(OwnedService[StoreOwner]):
    """Served beside the worker's main service, over its store."""

    async def _tier(self, type_: str, req: TierIn) -> list[Memory]:
        ms = [
            m
            for m in await self.store.load_all(self.store.memories, Memory)
            if m.type == type_
            and not m.superseded_by
            and (not req.project or m.project == req.project)
        ]
        ms.sort(key=lambda m: (-(m.confidence or 0.0), m.id))
        return ms[: req.limit]

    @operation(
        "mem::semantic-list",
        description="Semantic memories: facts consolidation found across sessions",
        http=rest("GET", "semantic"),
    )
    async def semantic(self, req: TierIn) -> SemanticOut:
        return SemanticOut(semantic=as_view(await self._tier("semantic", req), list[MemoryView]))

    @operation(
        "mem::procedural-list",
        description="Procedural memories: workflows consolidation found across sessions",
        http=rest("GET", "procedural"),
    )
    async def procedural(self, req: TierIn) -> ProceduralOut:
        got = await self._tier("procedural", req)
        return ProceduralOut(procedural=as_view(got, list[MemoryView]))

    @operation(
        "mem::detect-worktree",
        description="Whether a directory is a git worktree, its branch and main repository",
        http=rest("GET", "branch/detect"),
    )
    async def detect_worktree(self, req: CwdIn) -> WorktreeInfo:
        return await worktree_info(_cwd(req.cwd))

    @operation(
        "mem::list-worktrees",
        description="The git worktrees of a repository",
        http=rest("GET", "branch/worktrees"),
    )
    async def list_worktrees(self, req: CwdIn) -> WorktreesOut:
        raw = await _git(_cwd(req.cwd), "worktree", "list", "--porcelain") or ""
        out: list[Worktree] = []
        for block in filter(None, raw.split("\n\n")):
            wt = Worktree(path="")
            for line in block.splitlines():
                if line.startswith("worktree "):
                    wt.path = line[9:]
                elif line.startswith("HEAD "):
                    wt.head = line[5:]
                elif line.startswith("branch "):
                    wt.branch = line[7:].removeprefix("refs/heads/")
                elif line == "bare":
                    wt.bare = True
            if wt.path:
                out.append(wt)
        return WorktreesOut(success=True, worktrees=out)

    @operation(
        "mem::branch-sessions",
        description="Sessions of a repository and its worktrees (by cwd)",
        http=rest("GET", "branch/sessions"),
    )
    async def branch_sessions(self, req: CwdIn) -> BranchSessionsOut:
        info = await worktree_info(_cwd(req.cwd))
        root = info.main_repo_root
        ss = [
            s
            for s in await self.store.load_all(self.store.sessions, Session)
            if s.cwd == root or s.cwd.startswith(root + "/") or s.project == root
        ]
        ss.sort(key=lambda s: s.started_at, reverse=True)
        return BranchSessionsOut(
            success=True,
            sessions=as_view(ss, list[SessionView]),
            project_root=root,
            branch=req.branch or info.branch,
            is_worktree=info.is_worktree,
        )
