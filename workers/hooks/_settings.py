"""The hooks' settings: standard library only (a hook runs in the agent's Python, without
the project), with engine.settings' spellings (tests/agent/test_hook_settings.py holds them
equal).

`DECLARED` is the one list of the variables a hook reads; workers/hooks/declared.py turns
it into an engine.settings area, so docs/CONFIG.md lists them and `engine run` checks them
where the service runs. A hook never stops the agent: a value it cannot read takes the
default, and the hook says so on stderr.
"""

from __future__ import annotations

import os
import sys

# `typing` costs ~4 ms of start-up; annotations are strings here, so only mypy needs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TypeVar

    T = TypeVar("T")

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
DEFAULT_URL = "http://127.0.0.1:3111"
OUTPUT_MAX = 8000
CONTEXT_MAX = 8000  # Claude Code cuts hook output at 10,000 characters

DECLARED: tuple[tuple[str, str, object, str, str], ...] = (
    # (variable, kind, default, unit or "", what it does)
    ("AGENTMEMORY_URL", "str", DEFAULT_URL, "", "The server the hooks send to."),
    ("AGENTMEMORY_SECRET", "str", "", "", "The REST bearer secret (else ~/.agentmemory/secret)."),
    (
        "AGENTMEMORY_HOOK_TIMEOUT_MS",
        "duration",
        800,
        "milliseconds",
        "How long a hook waits for the server before it spools the event.",
    ),
    (
        "AGENTMEMORY_CAPTURE_OUTPUT_MAX",
        "int",
        OUTPUT_MAX,
        "",
        "Characters of a tool's input and output a hook keeps.",
    ),
    (
        "AGENTMEMORY_CONTEXT_MAX_CHARS",
        "int",
        CONTEXT_MAX,
        "",
        "Characters of context a hook prints (at most 9000).",
    ),
    (
        "AGENTMEMORY_INJECT_CONTEXT",
        "bool",
        False,
        "",
        "The hooks write recalled context into the agent's conversation.",
    ),
    (
        "AGENTMEMORY_CAPTURE_ALLOW",
        "list",
        (),
        "",
        "Globs of tool names or file paths captured (none: all).",
    ),
    (
        "AGENTMEMORY_CAPTURE_DENY",
        "list",
        (),
        "",
        "Globs of tool names or file paths never captured (deny wins over allow).",
    ),
    (
        "AGENTMEMORY_PROJECT_NAME",
        "str",
        "",
        "",
        "The project events are recorded under (else the repository's: the main worktree's "
        "folder name, shared by every worktree and subfolder; outside one, the folder's).",
    ),
    (
        "AGENTMEMORY_SPOOL_DIR",
        "path",
        None,
        "",
        "Where events wait while the server is down (else ~/.agentmemory/spool).",
    ),
    (
        "AGENTMEMORY_SPOOL_MAX_BYTES",
        "int",
        5_000_000,
        "",
        "Bytes the spool holds at most (the oldest events go first).",
    ),
    (
        "AGENTMEMORY_SPOOL_MAX_AGE_HOURS",
        "duration",
        168.0,
        "hours",
        "Spooled events older than this are dropped.",
    ),
    ("AGENTMEMORY_HOOKS_DISABLED", "bool", False, "", "The hooks do nothing."),
)


def flag(raw: str) -> bool | None:
    """`raw` as a boolean, engine.settings' way; None when it is none of the spellings."""
    low = raw.strip().lower()
    if low in TRUE:
        return True
    if low in FALSE:
        return False
    return None


def _number(raw: str, whole: bool) -> float | None:
    value = raw.strip()
    try:
        n = float(int(value)) if whole else float(value)
    except ValueError:
        return None
    return n if n == n and abs(n) != float("inf") and n >= 0 else None


class Settings:
    """The hook's view of its environment, read once per process."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        e = _Reader(os.environ if env is None else env)
        self.url = e.text("AGENTMEMORY_URL", DEFAULT_URL).rstrip("/")
        self.secret = e.text("AGENTMEMORY_SECRET", "") or _read_secret(e.env)
        self.timeout = e.number("AGENTMEMORY_HOOK_TIMEOUT_MS", 800.0) / 1000.0
        self.output_max = int(e.number("AGENTMEMORY_CAPTURE_OUTPUT_MAX", OUTPUT_MAX, True))
        self.context_max = min(
            int(e.number("AGENTMEMORY_CONTEXT_MAX_CHARS", CONTEXT_MAX, True)), 9000
        )
        self.inject = e.boolean("AGENTMEMORY_INJECT_CONTEXT", False)
        self.allow = e.globs("AGENTMEMORY_CAPTURE_ALLOW")
        self.deny = e.globs("AGENTMEMORY_CAPTURE_DENY")
        self.project = e.text("AGENTMEMORY_PROJECT_NAME", "")
        self.spool_dir = e.text("AGENTMEMORY_SPOOL_DIR", "") or os.path.join(_home(e.env), "spool")
        self.spool_max_bytes = int(e.number("AGENTMEMORY_SPOOL_MAX_BYTES", 5_000_000, True))
        self.spool_max_age = e.number("AGENTMEMORY_SPOOL_MAX_AGE_HOURS", 168.0) * 3600
        self.disabled = e.boolean("AGENTMEMORY_HOOKS_DISABLED", False)


class _Reader:
    """One variable at a time, as engine.settings parses it."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env

    def raw(self, name: str) -> str:
        return (self.env.get(name) or "").strip()

    def text(self, name: str, default: str) -> str:
        raw = self.raw(name)
        return os.path.expanduser(raw) if raw and name.endswith("_DIR") else raw or default

    def boolean(self, name: str, default: bool) -> bool:
        raw = self.raw(name)
        if not raw:
            return default
        value = flag(raw)
        if value is None:
            return _refused(name, raw, "true or false (1/true/yes/on, 0/false/no/off)", default)
        return value

    def number(self, name: str, default: float, whole: bool = False) -> float:
        raw = self.raw(name)
        if not raw:
            return default
        value = _number(raw, whole)
        if value is None:
            what = "a whole number" if whole else "a number"
            return _refused(name, raw, f"{what} of 0 or more", default)
        return value

    def globs(self, name: str) -> list[str]:
        return [g.strip() for g in self.raw(name).split(",") if g.strip()]


def _refused(name: str, raw: str, accepted: str, default: T) -> T:
    sys.stderr.write(f"agentmemory hook: {name}={raw!r} is not valid: expected {accepted}\n")
    return default


def _home(e: Mapping[str, str]) -> str:
    return os.path.join(e.get("HOME") or os.path.expanduser("~"), ".agentmemory")


def _read_secret(e: Mapping[str, str]) -> str:
    try:
        with open(os.path.join(_home(e), "secret")) as f:
            return f.read().strip()
    except OSError:
        return ""
