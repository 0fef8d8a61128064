"""Host hook event → agentmemory REST call. The handlers read Claude Code's payload shape
(Codex sends the same); every other host's script first turns its own payloads into it
(its `normalise`), and prints what its host expects on stdout (its `render`)."""

from __future__ import annotations

import os
import sys

# `typing` costs ~4 ms of start-up; annotations are strings here, so only mypy needs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    Context: TypeAlias = str | None
    """What a handler gives the agent to read: context text, or None."""
    Normalise: TypeAlias = Callable[[dict[str, Any], str], dict[str, Any] | None]
    """A host's payload and event name → Claude Code's payload shape (None: ignore it)."""
    Render: TypeAlias = Callable[[str, str | None], str]
    """The host's event name and the context to give → what the hook prints."""

# Imported as workers.hooks.* (CLI, tests) or run as a script, whose folder is sys.path[0]:
# the script never imports the package (its __init__ would load pathlib and more). mypy
# reads the package form; at run time TYPE_CHECKING is False and `__package__` decides.
if TYPE_CHECKING or __package__:
    from workers.hooks import _delivery as delivery
    from workers.hooks import _hookcore as core
    from workers.hooks import _wire
else:
    import _delivery as delivery
    import _hookcore as core
    import _wire

OBSERVE = "/agentmemory/observe"
AGENT_KEY = "agentmemory_agent"
"""Set by a host's `normalise` when the payload says which agent sent it (one hooks file
read by two agents: Copilot CLI and VS Code)."""
END_TIMEOUT = 1.5  # upstream gives Stop/SessionEnd longer: the session is closing anyway
STOP_MESSAGE_MAX = 4000  # upstream keeps this much of the turn's last answer


def handle(
    host: str, events: frozenset[str], payload: dict[str, Any], argv_event: str
) -> tuple[str, str] | None:
    """Send what the event says; returns (event, context to show the agent) when the event
    has context to give, for the host script to print in its host's format."""
    settings = core.Settings()
    if settings.disabled:
        return None
    event = str(payload.get("hook_event_name") or argv_event)
    if event not in events:
        return None
    cwd = str(payload.get("cwd") or os.getcwd())
    base = {
        "sessionId": session_of(payload),
        "project": core.project_of(settings, cwd),
        "cwd": cwd,
        "agentId": str(payload.get(AGENT_KEY) or host),
    }
    handler = _HANDLERS.get(event)
    context = handler(settings, base, payload) if handler is not None else None
    return (event, context) if context else None


def session_of(payload: dict[str, Any]) -> str:
    """The host's session id, under whichever key the host names it (upstream's order)."""
    for key in ("session_id", "sessionId", "conversation_id", "conversationId"):
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return "unknown"


def _observe(
    settings: core.Settings, base: dict[str, Any], hook: str, data: dict[str, Any], event_id: str
) -> None:
    ts = core.now_iso()
    eid = event_id or core.stable_id(base["sessionId"], hook, ts, data)
    body = {**base, "hookType": hook, "timestamp": ts, "data": data, "eventId": eid}
    delivery.deliver(settings, "POST", OBSERVE, body)


def _tool_id(payload: dict[str, Any]) -> str:
    return str(payload.get("tool_use_id") or payload.get("call_id") or "")


def session_start(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    body = {**base, "source": p.get("source") or "startup", "model": p.get("model") or ""}
    reply = delivery.deliver(settings, "POST", "/agentmemory/session/start", body)
    if reply is None or reply.status >= 300 or not settings.inject:
        return None
    data = reply.json()
    return _text(data.get("context") if isinstance(data, dict) else None, settings)


def _text(value: Any, settings: core.Settings) -> Context:
    if isinstance(value, str) and value.strip():
        return value[: settings.context_max]
    return None


def prompt_submit(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    prompt = p.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        data = {"prompt": core.truncate(prompt, settings.output_max)}
        _observe(settings, base, "prompt_submit", data, "")
    return None


def pre_tool_use(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    # The call itself is recorded once, by PostToolUse; before it we only offer context.
    tool, tool_input = str(p.get("tool_name") or ""), p.get("tool_input")
    if not settings.inject or not core.captured(settings, tool, tool_input):
        return None
    files = core.tool_paths(tool_input)
    if not files:
        return None
    body = {**base, "files": files, "terms": [], "toolName": tool}
    reply = core.request(settings, "POST", "/agentmemory/enrich", body)
    data = reply.json() if reply is not None and reply.status < 300 else None
    return _text(data.get("context") if isinstance(data, dict) else None, settings)


def tool_output(p: dict[str, Any]) -> Any:
    """What the tool gave back, as the host names it (upstream's order: Copilot's
    VS-Code-compatible `tool_result`, then `tool_response`, then `tool_output`)."""
    result = p.get("tool_result")
    if isinstance(result, dict) and "text_result_for_llm" in result:
        return result["text_result_for_llm"]
    if "tool_response" in p:
        return p["tool_response"]
    return p.get("tool_output", "")


def post_tool_use(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    tool, tool_input = str(p.get("tool_name") or "unknown"), p.get("tool_input")
    if not core.captured(settings, tool, tool_input):
        return None
    data = {
        "tool_name": tool,
        "tool_input": core.cap(tool_input, settings.output_max) if tool_input is not None else {},
        "tool_output": core.truncate(tool_output(p), settings.output_max),
    }
    _observe(settings, base, "post_tool_use", data, _tool_id(p))
    return None


def post_tool_failure(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    tool, tool_input = str(p.get("tool_name") or "unknown"), p.get("tool_input")
    if not core.captured(settings, tool, tool_input):
        return None
    data = {
        "tool_name": tool,
        "tool_input": core.truncate(
            tool_input if tool_input is not None else "", settings.output_max
        ),
        "error": core.truncate(p.get("error") or "failed", settings.output_max),
        "is_interrupt": bool(p.get("is_interrupt")),
    }
    _observe(settings, base, "post_tool_failure", data, _tool_id(p))
    return None


def pre_compact(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    data = {
        "trigger": str(p.get("trigger") or "auto"),
        "custom_instructions": str(p.get("custom_instructions") or ""),
    }
    _observe(settings, base, "pre_compact", data, "")
    if not settings.inject:
        return None
    body = {"sessionId": base["sessionId"], "project": base["project"], "budget": 1500}
    reply = core.request(settings, "POST", "/agentmemory/context", body)
    data_out = reply.json() if reply is not None and reply.status < 300 else None
    return _text(data_out.get("context") if isinstance(data_out, dict) else None, settings)


def subagent_start(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    data = {"agent_id": str(p.get("agent_id") or ""), "agent_type": str(p.get("agent_type") or "")}
    _observe(settings, base, "subagent_start", data, "")
    return None


def subagent_stop(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    data = {
        "agent_id": str(p.get("agent_id") or ""),
        "agent_type": str(p.get("agent_type") or ""),
        "last_message": core.truncate(
            p.get("last_assistant_message") or p.get("last_message") or "", settings.output_max
        ),
    }
    _observe(settings, base, "subagent_stop", data, "")
    return None


def notification(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    data = {
        "notification_type": str(p.get("notification_type") or ""),
        "title": str(p.get("title") or ""),
        "message": str(p.get("message") or ""),
    }
    if data["message"]:
        _observe(settings, base, "notification", data, "")
    return None


def task_completed(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    data = {
        "task_id": str(p.get("task_id") or ""),
        "task_subject": str(p.get("task_subject") or ""),
        "task_description": core.truncate(p.get("task_description") or "", 2000),
        "teammate_name": str(p.get("teammate_name") or ""),
        "team_name": str(p.get("team_name") or ""),
    }
    if data["task_subject"] or data["task_description"] or data["task_id"]:
        _observe(settings, base, "task_completed", data, "")
    return None


def stop(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    """The end of a turn, not of the session (`final: false`): the server keeps the session
    open and closes it after AGENTMEMORY_FINALIZE_IDLE_MS of silence. The assistant's last
    message, when the host gives it, is the turn's answer: worth keeping."""
    said = p.get("last_assistant_message")
    if isinstance(said, str) and said.strip():
        data = {"last_assistant_message": core.truncate(said, STOP_MESSAGE_MAX)}
        _observe(settings, base, "stop", data, "")
    body = {"sessionId": base["sessionId"], "project": base["project"], "final": False}
    delivery.deliver(settings, "POST", "/agentmemory/session/end", body, END_TIMEOUT)
    return None


def session_end(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> Context:
    body = {
        "sessionId": base["sessionId"],
        "project": base["project"],
        "reason": str(p.get("reason") or "other"),
        "final": True,
    }
    delivery.deliver(settings, "POST", "/agentmemory/session/end", body, END_TIMEOUT)
    return None


_HANDLERS = {
    "SessionStart": session_start,
    "UserPromptSubmit": prompt_submit,
    "PreToolUse": pre_tool_use,
    "PostToolUse": post_tool_use,
    "PostToolUseFailure": post_tool_failure,
    "PreCompact": pre_compact,
    "SubagentStart": subagent_start,
    "SubagentStop": subagent_stop,
    "Notification": notification,
    "TaskCompleted": task_completed,
    "Stop": stop,
    "SessionEnd": session_end,
}


def claude_output(host_event: str, context: str | None) -> str:
    """Claude Code's (and Codex's) stdout: context as plain text, before a tool call as
    hookSpecificOutput JSON."""
    if not context:
        return ""
    if host_event == "PreToolUse":
        out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": context}}
        return _wire.dumps(out)
    return context


def main(
    host: str,
    events: frozenset[str],
    normalise: Normalise | None = None,
    render: Render = claude_output,
) -> None:
    """Entry point of a host script. Whatever happens, the agent sees exit 0 promptly, and
    what `render` makes of the outcome on stdout (some hosts read every hook's stdout as
    JSON). `normalise` turns the host's payload and event name into Claude Code's shape, the
    one the handlers read (None: nothing to record)."""
    host_event, context = "", None
    try:
        if sys.argv[1:2] == ["--drain"]:
            done, kept = delivery.drain(core.Settings())
            sys.stdout.write(_wire.dumps({"delivered": done, "kept": kept}) + "\n")
            return
        args = sys.argv[1:]
        # `--agent=droid`: an agent that runs Claude Code's hook format records as itself.
        named = [a.removeprefix("--agent=") for a in args if a.startswith("--agent=")]
        rest = [a for a in args if not a.startswith("--agent=")]
        payload = core.read_stdin()
        host_event = rest[0] if rest else str(payload.get("hook_event_name") or "")
        canonical = normalise(payload, host_event) if normalise is not None else payload
        if canonical is not None:
            given = handle(named[0] if named else host, events, canonical, host_event)
            context = given[1] if given else None
    except BaseException:  # a hook must never fail the agent
        pass
    finally:
        try:
            text = render(host_event, context)
            if text:
                sys.stdout.write(text)
            sys.stdout.flush()
        except BaseException:
            pass
        os._exit(0)
