"""A hook's requests delivered: sent now, or kept in the offline spool when the server cannot
take them, and replayed when it is back. The whole policy is here: which replies are worth
keeping, when a drain starts, how long the spool holds what.

The spool is one private JSONL file (0600, in a 0700 folder), scrubbed, bounded in bytes
and in age. Writers lock the file and check they still hold the live inode, so a drain that
renamed it away never loses a line appended at the same moment. Every spooled request
carries its `eventId`, so a replay the server already saw is stored once.
"""

from __future__ import annotations

import os
import time

# `typing` costs ~4 ms of start-up; annotations are strings here, so only mypy needs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Imported as workers.hooks.* (CLI, tests) or run as a script, whose folder is sys.path[0]:
# the script never imports the package (its __init__ would load pathlib and more). mypy
# reads the package form; at run time TYPE_CHECKING is False and `__package__` decides.
if TYPE_CHECKING or __package__:
    from workers.hooks import _hookcore as core
    from workers.hooks import _wire
else:
    import _hookcore as core
    import _wire


def _scrubbed(body: Any) -> Any:
    # Importing _scrub is free; its needle test runs on the lower-cased text without `re`,
    # which (with the rule set's patterns) loads only for a body that might hold a secret.
    if TYPE_CHECKING or __package__:
        from workers.hooks import _scrub
    else:
        import _scrub
    if not _scrub.might_hold_secret(_wire.dumps(body).lower()):
        return body
    return _scrub.scrub(body)


# ---- send or spool -------------------------------------------------------------------
def retryable(reply: core.Reply | None) -> bool:
    """Worth keeping for later: unreachable, 5xx, 408, 429, and 401/404 too: a server still
    starting has no routes yet, and a rotated secret is fixed by the user, not by waiting
    less. The spool's bounds decide how long "later" may be. Other 4xx will never pass."""
    return reply is None or reply.status >= 500 or reply.status in (401, 404, 408, 429)


def deliver(
    settings: core.Settings, method: str, path: str, body: Any, timeout: float | None = None
) -> core.Reply | None:
    """Send now; keep in the spool when the server cannot take it. Never raises."""
    reply = core.request(settings, method, path, body, timeout)
    if retryable(reply):
        append(settings, method, path, body)
        return None
    if reply is not None and reply.status < 300:
        drain_in_background(settings)
    return reply


def drain_in_background(settings: core.Settings) -> None:
    """The server answered: let a detached child replay what earlier hooks spooled."""
    spool = spool_path(settings)
    if not any(_nonempty(spool + suffix) for suffix in ("", ".draining")):
        return
    if not hasattr(os, "fork"):
        return
    try:
        if os.fork() != 0:
            return
    except OSError:
        return
    # The child: detach from the agent's pipes first so the host never waits on it.
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        drain(settings)
    finally:
        os._exit(0)


def _nonempty(path: str) -> bool:
    try:
        return os.stat(path).st_size > 0
    except OSError:
        return False


# ---- the spool -----------------------------------------------------------------------
SPOOL_NAME = "hooks.jsonl"


def spool_path(settings: core.Settings) -> str:
    return os.path.join(settings.spool_dir, SPOOL_NAME)


def _open_live(path: str) -> int:
    """Open and lock the spool at `path`, retrying if a drain renamed it under us."""
    import fcntl  # a hook whose request went through never locks the spool

    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def append(
    settings: core.Settings, method: str, path: str, body: Any, at: float | None = None
) -> None:
    entry = {"at": at or time.time(), "method": method, "path": path, "body": _scrubbed(body)}
    line = (_wire.dumps(entry) + "\n").encode()
    if len(line) > settings.spool_max_bytes:
        return
    target = spool_path(settings)
    fd = _open_live(target)
    try:
        os.fchmod(fd, 0o600)
        if os.fstat(fd).st_size + len(line) > settings.spool_max_bytes:
            _compact(fd, target, settings, room=len(line))
        os.write(fd, line)
    finally:
        os.close(fd)


def _compact(fd: int, path: str, settings: core.Settings, room: int) -> None:
    """Drop expired and then the oldest entries until `room` more bytes fit."""
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    fresh = [ln for ln in lines if _fresh(ln, settings)]
    budget = settings.spool_max_bytes - room
    total = sum(len(ln) for ln in fresh)
    while fresh and total > budget:
        total -= len(fresh.pop(0))
    os.ftruncate(fd, 0)
    os.write(fd, b"".join(fresh))


def _fresh(line: bytes, settings: core.Settings) -> bool:
    try:
        at = float(_wire.loads(line)["at"])
    except (ValueError, KeyError, TypeError):
        return False
    return time.time() - at <= settings.spool_max_age


def read(settings: core.Settings) -> list[dict[str, Any]]:
    """The spooled entries, oldest first (for tests and `agentmemory doctor`)."""
    try:
        with open(spool_path(settings), "rb") as f:
            raw = f.read().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for ln in raw:
        try:
            out.append(_wire.loads(ln))
        except ValueError:
            continue
    return out


def drain(settings: core.Settings, timeout: float = 3.0) -> tuple[int, int]:
    """Replay the spool; returns (delivered, kept). One drain at a time per spool."""
    import fcntl

    target = spool_path(settings)
    os.makedirs(settings.spool_dir, mode=0o700, exist_ok=True)
    lock = os.open(target + ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return (0, 0)  # another process is draining
        working = target + ".draining"
        delivered = kept = 0
        # A leftover from a drain that died is replayed first, then the live spool.
        for _ in range(2):
            if not os.path.exists(working):
                try:
                    os.rename(target, working)
                except FileNotFoundError:
                    break
            fd = os.open(working, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits for a writer still on the old inode
            with os.fdopen(fd, "rb") as f:
                lines = f.read().splitlines()
            done, keep = _replay(settings, lines, timeout)
            for entry in keep:
                append(settings, entry["method"], entry["path"], entry["body"], entry["at"])
            os.unlink(working)
            delivered, kept = delivered + done, kept + len(keep)
            if keep:
                break  # the server is away again: what is left waits for the next drain
        return delivered, kept
    finally:
        os.close(lock)


def _replay(
    settings: core.Settings, lines: list[bytes], timeout: float
) -> tuple[int, list[dict[str, Any]]]:
    delivered = 0
    keep: list[dict[str, Any]] = []
    down = False
    for ln in lines:
        try:
            entry = _wire.loads(ln)
            at = float(entry["at"])
        except (ValueError, KeyError, TypeError):
            continue
        if time.time() - at > settings.spool_max_age:
            continue
        if down:
            keep.append(entry)
            continue
        reply = core.request(settings, entry["method"], entry["path"], entry["body"], timeout)
        if retryable(reply):
            down = True  # stop hammering a server that is still away; keep the rest
            keep.append(entry)
        else:
            delivered += 1
    return delivered, keep
