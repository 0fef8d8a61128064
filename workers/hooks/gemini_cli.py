"""Gemini CLI hook: `python3 -S gemini_cli.py <Event>` reads the event JSON on stdin.

Gemini CLI's events (its docs/hooks/reference.md) map onto Claude Code's: BeforeAgent is
the prompt, AfterTool a tool call done (its `tool_response` an object with `llmContent`,
`returnDisplay` and `error`), PreCompress a compaction, AfterAgent the end of a turn.
Gemini CLI parses the stdout of a hook that exits 0 as JSON, so the script always prints
an object. Standard library only; always exits 0; spools when the server is away.
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

HOST = "gemini-cli"
CANONICAL = {
    "SessionStart": "SessionStart",
    "BeforeAgent": "UserPromptSubmit",
    "AfterTool": "PostToolUse",
    "PreCompress": "PreCompact",
    "AfterAgent": "Stop",
    "SessionEnd": "SessionEnd",
}
EVENT_ORDER = tuple(CANONICAL)
EVENTS = frozenset({*CANONICAL.values(), "PostToolUseFailure"})  # an AfterTool with an error


def _said(response: Any) -> tuple[Any, str]:
    """(what the tool gave back, its error text): `llmContent` (a string or a list of
    parts) or `returnDisplay`; a plain string in older builds."""
    if not isinstance(response, dict):
        return response, ""
    error = response.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    content = _hostshape.pick(response, "llmContent", "returnDisplay", "output")
    if isinstance(content, list):
        content = "\n".join(
            str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content
        ).strip()
    return (response if content is None else content), error if isinstance(error, str) else ""


def normalise(p: dict[str, Any], event: str) -> dict[str, Any] | None:
    canonical = CANONICAL.get(str(p.get("hook_event_name") or event))
    if canonical is None:
        return None
    out = {**p, "hook_event_name": canonical}
    if canonical == "PostToolUse":
        output, error = _said(p.get("tool_response"))
        out["tool_input"] = _hostshape.json_arg(p.get("tool_input"))
        if error:
            out["hook_event_name"] = "PostToolUseFailure"
            out["error"] = error
        else:
            out["tool_response"] = output
    elif canonical == "Stop":
        said = p.get("prompt_response")
        if isinstance(said, str):
            out["last_assistant_message"] = said
    return out


def render(event: str, context: str | None) -> str:
    if event == "SessionStart" and context:
        out = {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
        }
        return _wire.dumps(out)
    return "{}"


if __name__ == "__main__":
    _events.main(HOST, EVENTS, normalise, render)
