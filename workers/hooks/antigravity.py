"""Antigravity CLI (`agy`) hook: `python3 -S antigravity.py <Event>` reads the event JSON
on stdin.

Antigravity has five events and none for a session's start or end or a prompt: the first
model call of a conversation (`PreInvocation` with `invocationNum` 0) starts the session,
`Stop` ends a run (a turn: the server closes the session after its idle period), and its
payloads carry no prompt text. Tool calls are nested under `toolCall` with Cascade-style
names and PascalCase arguments (upstream's antigravity bridge reads them the same way).
Antigravity reads every hook's stdout as a JSON object, and treats a PreToolUse answer
without `decision` as a denial. Standard library only; always exits 0.
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

HOST = "antigravity-cli"
EVENT_ORDER = ("PreInvocation", "PostToolUse", "Stop")
EVENTS = frozenset({"SessionStart", "PostToolUse", "PostToolUseFailure", "Stop"})
ARG_KEYS = {
    # Antigravity's argument names → the ones our capture reads (file paths, commands).
    "AbsolutePath": "file_path",
    "TargetFile": "file_path",
    "DirectoryPath": "path",
    "SearchDirectory": "path",
    "CommandLine": "command",
    "Query": "query",
    "Pattern": "pattern",
}


def _args(value: Any) -> Any:
    args = _hostshape.json_arg(value)
    if not isinstance(args, dict):
        return args
    out = dict(args)
    for theirs, ours in ARG_KEYS.items():
        if theirs in args and ours not in out:
            out[ours] = args[theirs]
    return out


def normalise(p: dict[str, Any], event: str) -> dict[str, Any] | None:
    roots = p.get("workspacePaths")
    root = roots[0] if isinstance(roots, list) and roots else ""
    out: dict[str, Any] = {
        **p,
        "session_id": _hostshape.first_text(p.get("conversationId"), p.get("session_id")),
        "cwd": _hostshape.first_text(p.get("cwd"), root),
    }
    if event == "PreInvocation":
        n = p.get("invocationNum")
        if isinstance(n, int) and n != 0:
            return None  # a later model call of the same run
        return {**out, "hook_event_name": "SessionStart", "source": "startup"}
    if event == "Stop":
        return None if p.get("fullyIdle") is False else {**out, "hook_event_name": "Stop"}
    if event != "PostToolUse":
        return None
    call = p.get("toolCall")
    call = call if isinstance(call, dict) else {}
    out["tool_name"] = _hostshape.first_text(call.get("name"), call.get("toolName"), "unknown")
    out["tool_input"] = _args(_hostshape.pick(call, "args", "toolArgs"))
    step = p.get("stepIdx")
    if "tool_use_id" not in p and isinstance(step, int) and step >= 0:
        # one tool call per step of a conversation: its replay is recognised
        out["tool_use_id"] = f"{out['session_id']}:step:{step}"
    error = p.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    if isinstance(error, str) and error:
        return {**out, "hook_event_name": "PostToolUseFailure", "error": error}
    result = _hostshape.pick(call, "result")
    if result is None:
        result = _hostshape.pick(p, "toolResult", "result")
    return {**out, "hook_event_name": "PostToolUse", "tool_response": result or ""}


def render(event: str, context: str | None) -> str:
    if event == "PreToolUse":
        return '{"decision": "allow"}'
    if event == "PreInvocation" and context:
        return _wire.dumps({"injectSteps": [{"ephemeralMessage": context}]})
    return "{}"


if __name__ == "__main__":
    _events.main(HOST, EVENTS, normalise, render)
