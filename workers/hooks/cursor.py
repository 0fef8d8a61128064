"""Cursor hook: `python3 -S cursor.py <cursorEvent>` reads the event JSON on stdin.

Cursor names its events in camelCase and keys its payloads its own way (`conversation_id`,
`workspace_roots`, a shell call's `command` and `output`); this turns each into Claude
Code's shape for the shared handlers. Cursor reads every hook's stdout as JSON, so the
script always prints an object. Standard library only; always exits 0; spools when the
server is away.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~4 ms of start-up)
if TYPE_CHECKING:
    from typing import Any

# Imported as workers.hooks.* (CLI, tests) or run as a script, whose folder is sys.path[0]:
# the script never imports the package (its __init__ would load pathlib and more). mypy
# reads the package form; at run time TYPE_CHECKING is False and `__package__` decides.
if TYPE_CHECKING or __package__:
    from workers.hooks import _events, _hostshape, _wire
else:
    import _events
    import _hostshape
    import _wire

HOST = "cursor"
EVENT_ORDER = (
    # What `connect cursor --with-hooks` installs (upstream's set, less preToolUse: Cursor
    # takes no context before a tool call).
    "sessionStart",
    "beforeSubmitPrompt",
    "postToolUse",
    "postToolUseFailure",
    "preCompact",
    "stop",
    "sessionEnd",
)
CANONICAL = {
    "sessionStart": "SessionStart",
    "beforeSubmitPrompt": "UserPromptSubmit",
    "postToolUse": "PostToolUse",
    "postToolUseFailure": "PostToolUseFailure",
    "preCompact": "PreCompact",
    "subagentStart": "SubagentStart",
    "subagentStop": "SubagentStop",
    "stop": "Stop",
    "sessionEnd": "SessionEnd",
    # Cursor's first hook set, still documented: each is a tool call done.
    "afterShellExecution": "PostToolUse",
    "afterMCPExecution": "PostToolUse",
    "afterFileEdit": "PostToolUse",
}
EVENTS = frozenset(CANONICAL.values())


def normalise(p: dict[str, Any], event: str) -> dict[str, Any] | None:
    canonical = CANONICAL.get(event or str(p.get("hook_event_name") or ""))
    if canonical is None:
        return None
    out = {**p, "hook_event_name": canonical}
    # Cursor's `cwd` may be `.cursor` or the editor's own folder: the workspace wins.
    roots = p.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str) and roots[0]:
        out["cwd"] = roots[0]
    if event == "afterShellExecution":
        out["tool_name"] = "Shell"
        out["tool_input"] = {"command": p.get("command") or ""}
        out["tool_output"] = p.get("output") or ""
    elif event == "afterMCPExecution":
        out["tool_input"] = _hostshape.json_arg(p.get("tool_input"))
        out["tool_output"] = p.get("result_json") or ""
    elif event == "afterFileEdit":
        out["tool_name"] = "Edit"
        out["tool_input"] = {"file_path": p.get("file_path") or "", "edits": p.get("edits") or []}
        out["tool_output"] = ""
    elif canonical in ("PostToolUse", "PostToolUseFailure"):
        out["tool_input"] = _hostshape.json_arg(p.get("tool_input"))
    if canonical == "Stop":
        said = p.get("text") or p.get("last_assistant_message")
        if isinstance(said, str):
            out["last_assistant_message"] = said
    return out


def render(event: str, context: str | None) -> str:
    if event == "beforeSubmitPrompt":
        return '{"continue": true}'
    if event == "sessionStart" and context:
        return _wire.dumps({"additional_context": context})
    return "{}"


if __name__ == "__main__":
    _events.main(HOST, EVENTS, normalise, render)
