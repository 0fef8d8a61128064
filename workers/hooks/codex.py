"""Codex hook: `python3 -S codex.py` reads the event JSON on stdin.

Standard library only; always exits 0; spools when the server is away.
"""

from __future__ import annotations

# Imported as workers.hooks.* (CLI, tests) or run as a script, whose folder is sys.path[0]:
# the script never imports the package (its __init__ would load pathlib and more).
if __package__:
    from workers.hooks import _events
else:
    import _events  # type: ignore[no-redef]

HOST = "codex"
EVENTS = frozenset(
    {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Stop"}
)

if __name__ == "__main__":
    _events.main(HOST, EVENTS)
