"""GitHub Copilot hook (Copilot CLI, and VS Code's Copilot agent, which reads the same
`~/.copilot/hooks/*.json`): `python3 -S copilot.py <Event>` reads the event JSON on stdin.
An event whose payload names it `hookEventName` is VS Code's and records as `vscode`.

Copilot sends camelCase payloads (`sessionId`, `toolName`, `toolArgs` as JSON text,
`toolResult.textResultForLlm`) to camelCase events, and Claude-Code-like snake_case ones
(`session_id`, `tool_input`, `tool_result.text_result_for_llm`) to PascalCase events,
which VS Code reads too; both are read here. Standard library only; always exits 0; spools
when the server is away.
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

HOST = "copilot-cli"
VSCODE = "vscode"
EVENT_ORDER = (
    # PascalCase: Copilot CLI then sends VS-Code-compatible payloads, and VS Code's agent
    # hooks (which know no camelCase `agentStop`) read the same file.
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "Stop",
    "SessionEnd",
)
CANONICAL = {
    **{e: e for e in EVENT_ORDER},
    "sessionStart": "SessionStart",
    "userPromptSubmitted": "UserPromptSubmit",
    "postToolUse": "PostToolUse",
    "postToolUseFailure": "PostToolUseFailure",
    "preCompact": "PreCompact",
    "agentStop": "Stop",
    "sessionEnd": "SessionEnd",
}
EVENTS = frozenset(CANONICAL.values())


def normalise(p: dict[str, Any], event: str) -> dict[str, Any] | None:
    canonical = CANONICAL.get(str(p.get("hook_event_name") or p.get("hookEventName") or event))
    if canonical is None:
        return None
    out = {**p, "hook_event_name": canonical}
    if "hookEventName" in p:
        # VS Code's agent names its event so (Copilot CLI says hook_event_name, or nothing)
        out[_events.AGENT_KEY] = VSCODE
    if canonical in ("PostToolUse", "PostToolUseFailure"):
        out["tool_name"] = _hostshape.first_text(p.get("tool_name"), p.get("toolName"))
        out["tool_input"] = _hostshape.json_arg(_hostshape.pick(p, "tool_input", "toolArgs"))
        result = _hostshape.pick(p, "tool_result", "toolResult")
        if isinstance(result, dict):
            kind = _hostshape.first_text(result.get("result_type"), result.get("resultType"))
            text = _hostshape.pick(result, "text_result_for_llm", "textResultForLlm")
            out.pop("tool_result", None)
            if kind in ("failure", "denied"):
                out["hook_event_name"] = "PostToolUseFailure"
                out["error"] = text or kind
            else:
                out["tool_response"] = "" if text is None else text
        elif canonical == "PostToolUseFailure":
            error = p.get("error")
            out["error"] = error.get("message") if isinstance(error, dict) else error
    elif canonical == "SessionStart":
        out["source"] = p.get("source") or "startup"
    elif canonical == "Stop":
        said = _hostshape.pick(p, "last_assistant_message", "response")
        if isinstance(said, str):
            out["last_assistant_message"] = said
    return out


def render(event: str, context: str | None) -> str:
    # The PascalCase events we install take VS Code's (Claude Code's) output shape.
    if event in ("SessionStart", "sessionStart") and context:
        out = {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
        }
        return _wire.dumps(out)
    return ""


if __name__ == "__main__":
    _events.main(HOST, EVENTS, normalise, render)
