"""The `git` binary, run on the snapshot repository with a fixed identity and no user or
system configuration (so a user's hooks, signing or templates never get in the way)."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from engine import FunctionError
from engine.settings import environ

TIMEOUT = 120.0
_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "agentmemory",
    "GIT_AUTHOR_EMAIL": "agentmemory@local",
    "GIT_COMMITTER_NAME": "agentmemory",
    "GIT_COMMITTER_EMAIL": "agentmemory@local",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}


class GitError(FunctionError):
    def __init__(self, args: list[str], code: int, stderr: str) -> None:
        super().__init__(
            "UNAVAILABLE", f"git {' '.join(args[:2])} failed ({code}): {stderr.strip()[:300]}"
        )
        self.exit_code = code


def binary() -> str:
    found = shutil.which("git")
    if found is None:
        raise FunctionError(
            "UNAVAILABLE", "snapshots need the git binary: install git", field="git"
        )
    return found


async def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run `git <args>` in `repo`; its stdout as text. A non-zero exit is a GitError when
    `check`."""
    return (await run(repo, *args, check=check)).decode(errors="replace")


async def run(repo: Path, *args: str, check: bool = True) -> bytes:
    """Run `git <args>` in `repo`; its stdout as bytes."""
    proc = await asyncio.create_subprocess_exec(
        binary(),
        *args,
        cwd=repo,
        env=environ(**_ENV),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise FunctionError("UNAVAILABLE", f"git {args[0]} took over {TIMEOUT:.0f}s") from None
    if check and proc.returncode != 0:
        raise GitError(list(args), proc.returncode or 0, err.decode(errors="replace"))
    return out


async def ensure_repo(repo: Path) -> None:
    if (repo / ".git").is_dir():
        return
    await asyncio.to_thread(_make_private_dir, repo)
    await git(repo, "init", "-q", "-b", "main")


def _make_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)  # memory state: the owner's only
