"""Codex hook: `python3 -S codex.py` reads the event JSON on stdin.

Standard library only; always exits 0; spools when the server is away.
"""

from __future__ import annotations

try:
    from workers.hooks import _events
except ImportError:
    import _events  # type: ignore[no-redef]

HOST = "codex"
EVENTS = frozenset(
    {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Stop"}
)

if __name__ == "__main__":
    _events.main(HOST, EVENTS)
