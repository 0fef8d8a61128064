"""Claude Code hook: `python3 -S claude_code.py` reads the event JSON on stdin.

Standard library only, so it starts in milliseconds without the project's venv. Always
exits 0; when the server is away the event waits in the private spool.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of start-up)
# Imported as workers.hooks.* (CLI, tests) or run as a script, whose folder is sys.path[0]:
# the script never imports the package (its __init__ would load pathlib and more). mypy
# reads the package form; at run time TYPE_CHECKING is False and `__package__` decides.
if TYPE_CHECKING or __package__:
    from workers.hooks import _events
else:
    import _events

HOST = "claude-code"
EVENT_ORDER = (
    # Every Claude Code event upstream's hooks handle, in the order hooks files list them
    # (the plugin's hooks/hooks.json and what `connect` writes: workers/cli/agents.py).
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "SubagentStart",
    "SubagentStop",
    "Notification",
    "TaskCompleted",
    "Stop",
    "SessionEnd",
)
EVENTS = frozenset(EVENT_ORDER)

if __name__ == "__main__":
    _events.main(HOST, EVENTS)
