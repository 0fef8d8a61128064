"""Host hook event → agentmemory REST call. Claude Code and Codex share these shapes."""

from __future__ import annotations

import os
import sys

# `typing` costs ~4 ms of start-up; annotations are strings here, so only mypy needs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
END_TIMEOUT = 1.5  # upstream gives Stop/SessionEnd longer: the session is closing anyway


def handle(host: str, events: frozenset[str], payload: dict[str, Any], argv_event: str) -> None:
    settings = core.Settings()
    if settings.disabled:
        return
    event = str(payload.get("hook_event_name") or argv_event)
    if event not in events:
        return
    session = str(payload.get("session_id") or payload.get("conversation_id") or "unknown")
    cwd = str(payload.get("cwd") or os.getcwd())
    base = {
        "sessionId": session,
        "project": core.project_of(settings, cwd),
        "cwd": cwd,
        "agentId": host,
    }
    handler = _HANDLERS.get(event)
    if handler is not None:
        handler(settings, base, payload)


def _observe(
    settings: core.Settings, base: dict[str, Any], hook: str, data: dict[str, Any], event_id: str
) -> None:
    ts = core.now_iso()
    eid = event_id or core.stable_id(base["sessionId"], hook, ts, data)
    body = {**base, "hookType": hook, "timestamp": ts, "data": data, "eventId": eid}
    delivery.deliver(settings, "POST", OBSERVE, body)


def _tool_id(payload: dict[str, Any]) -> str:
    return str(payload.get("tool_use_id") or payload.get("call_id") or "")


def session_start(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    body = {**base, "source": p.get("source") or "startup", "model": p.get("model") or ""}
    reply = delivery.deliver(settings, "POST", "/agentmemory/session/start", body)
    if reply is not None and reply.status < 300:
        data = reply.json()
        core.emit_context(settings, data.get("context") if isinstance(data, dict) else None)


def prompt_submit(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    prompt = p.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        data = {"prompt": core.truncate(prompt, settings.output_max)}
        _observe(settings, base, "prompt_submit", data, "")


def pre_tool_use(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    # The call itself is recorded once, by PostToolUse; before it we only offer context.
    tool, tool_input = str(p.get("tool_name") or ""), p.get("tool_input")
    if not settings.inject or not core.captured(settings, tool, tool_input):
        return
    files = core.tool_paths(tool_input)
    if not files:
        return
    body = {**base, "files": files, "terms": [], "toolName": tool}
    reply = core.request(settings, "POST", "/agentmemory/enrich", body)
    data = reply.json() if reply is not None and reply.status < 300 else None
    text = data.get("context") if isinstance(data, dict) else None
    if isinstance(text, str) and text.strip():
        out = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "additionalContext": text[: settings.context_max],
            }
        }
        sys.stdout.write(_wire.dumps(out))


def post_tool_use(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    tool, tool_input = str(p.get("tool_name") or "unknown"), p.get("tool_input")
    if not core.captured(settings, tool, tool_input):
        return
    output = p.get("tool_response", p.get("tool_output", ""))
    data = {
        "tool_name": tool,
        "tool_input": core.cap(tool_input, settings.output_max) if tool_input is not None else {},
        "tool_output": core.truncate(output, settings.output_max),
    }
    _observe(settings, base, "post_tool_use", data, _tool_id(p))


def post_tool_failure(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    tool, tool_input = str(p.get("tool_name") or "unknown"), p.get("tool_input")
    if not core.captured(settings, tool, tool_input):
        return
    data = {
        "tool_name": tool,
        "tool_input": core.truncate(
            tool_input if tool_input is not None else "", settings.output_max
        ),
        "error": core.truncate(p.get("error") or "failed", settings.output_max),
        "is_interrupt": bool(p.get("is_interrupt")),
    }
    _observe(settings, base, "post_tool_failure", data, _tool_id(p))


def pre_compact(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    data = {
        "trigger": str(p.get("trigger") or "auto"),
        "custom_instructions": str(p.get("custom_instructions") or ""),
    }
    _observe(settings, base, "pre_compact", data, "")
    if settings.inject:
        body = {"sessionId": base["sessionId"], "project": base["project"], "budget": 1500}
        reply = core.request(settings, "POST", "/agentmemory/context", body)
        data_out = reply.json() if reply is not None and reply.status < 300 else None
        core.emit_context(settings, data_out.get("context") if isinstance(data_out, dict) else None)


def subagent_start(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    data = {"agent_id": str(p.get("agent_id") or ""), "agent_type": str(p.get("agent_type") or "")}
    _observe(settings, base, "subagent_start", data, "")


def subagent_stop(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    data = {
        "agent_id": str(p.get("agent_id") or ""),
        "agent_type": str(p.get("agent_type") or ""),
        "last_message": core.truncate(
            p.get("last_assistant_message") or p.get("last_message") or "", settings.output_max
        ),
    }
    _observe(settings, base, "subagent_stop", data, "")


def notification(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    data = {
        "notification_type": str(p.get("notification_type") or ""),
        "title": str(p.get("title") or ""),
        "message": str(p.get("message") or ""),
    }
    if data["message"]:
        _observe(settings, base, "notification", data, "")


def task_completed(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    data = {
        "task_id": str(p.get("task_id") or ""),
        "task_subject": str(p.get("task_subject") or ""),
        "task_description": core.truncate(p.get("task_description") or "", 2000),
        "teammate_name": str(p.get("teammate_name") or ""),
        "team_name": str(p.get("team_name") or ""),
    }
    if data["task_subject"] or data["task_description"] or data["task_id"]:
        _observe(settings, base, "task_completed", data, "")


def stop(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    # Upstream ends the session after every assistant turn; the server treats it as idempotent.
    body = {"sessionId": base["sessionId"], "project": base["project"]}
    delivery.deliver(settings, "POST", "/agentmemory/session/end", body, END_TIMEOUT)


def session_end(settings: core.Settings, base: dict[str, Any], p: dict[str, Any]) -> None:
    body = {
        "sessionId": base["sessionId"],
        "project": base["project"],
        "reason": str(p.get("reason") or "other"),
    }
    delivery.deliver(settings, "POST", "/agentmemory/session/end", body, END_TIMEOUT)


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


def main(host: str, events: frozenset[str]) -> None:
    """Entry point of a host script. Whatever happens, the agent sees exit 0 promptly."""
    try:
        if sys.argv[1:2] == ["--drain"]:
            done, kept = delivery.drain(core.Settings())
            sys.stdout.write(_wire.dumps({"delivered": done, "kept": kept}) + "\n")
            return
        payload = core.read_stdin()
        args = sys.argv[1:]
        # `--agent=droid`: an agent that runs Claude Code's hook format records as itself.
        named = [a.removeprefix("--agent=") for a in args if a.startswith("--agent=")]
        rest = [a for a in args if not a.startswith("--agent=")]
        handle(named[0] if named else host, events, payload, rest[0] if rest else "")
    except BaseException:  # a hook must never fail the agent
        pass
    finally:
        try:
            sys.stdout.flush()
        except Exception:
            pass
        os._exit(0)
