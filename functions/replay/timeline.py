"""A session as a timeline of discrete events (prompts, tool calls, their results or errors,
responses) for the replay player, in upstream's shape (`mem::replay::load`).

A stored observation holds one hook's event; a tool's `post_tool_use` carries both the
call and its result, so it becomes two events. Each event says how long it takes to read
(`durationMs`, from its length), which is what a player waits before the next one: real
gaps between events may be hours."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from functions.kernel import clock
from functions.kernel.records import Observation

Kind = Literal[
    "prompt", "response", "tool_call", "tool_result", "tool_error", "session_start",
    "session_end", "hook",
]  # fmt: skip

CHARS_PER_SECOND = 40
"""Reading speed behind `durationMs`."""
MIN_MS = 300
MAX_MS = 20_000
LABEL_MAX = 80


class TimelineEvent(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    id: str
    observation_id: str
    session_id: str
    ts: str
    offset_ms: int
    """Since the session's first event (synthetic, by reading time, when the timestamps
    do not tell)."""
    duration_ms: int
    kind: Kind
    label: str
    type: str = ""
    """The observation's type (file_edit, command, prompt…)."""
    body: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_output: str | None = None


class Timeline(msgspec.Struct, rename="camel", kw_only=True):
    session_id: str
    started_at: str
    ended_at: str
    total_duration_ms: int
    event_count: int
    events: list[TimelineEvent]


def _cut(text: str, limit: int = LABEL_MAX) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def split_tool_text(raw: str) -> tuple[Any, str]:
    """A tool observation's stored text as (input, output). The input comes first, as one
    line of JSON when it was an object (JSON escapes its newlines), then the output."""
    head, _, rest = raw.partition("\n")
    stripped = head.strip()
    if stripped[:1] in ("{", "["):
        try:
            return msgspec.json.decode(stripped), rest
        except msgspec.DecodeError:
            pass
    return head, rest


def _reading_ms(*texts: Any) -> int:
    chars = sum(len(t) if isinstance(t, str) else len(msgspec.json.encode(t)) for t in texts if t)
    if not chars:
        return MIN_MS
    return max(MIN_MS, min(MAX_MS, round(chars * 1000 / CHARS_PER_SECOND)))


def events_of(o: Observation) -> list[TimelineEvent]:
    """The discrete events of one observation (offsets filled in by `project`)."""
    base: dict[str, Any] = {
        "observation_id": o.id, "session_id": o.session_id, "ts": o.timestamp, "offset_ms": 0,
        "type": o.type,
    }  # fmt: skip
    hook, tool = o.hook_type, o.tool_name or None

    def ev(suffix: str, kind: Kind, label: str, **kw: Any) -> TimelineEvent:
        body = kw.get("body")
        dur = _reading_ms(body, kw.get("tool_input"), kw.get("tool_output"))
        return TimelineEvent(
            id=o.id + suffix, kind=kind, label=label, duration_ms=dur, **base, **kw
        )

    if hook == "prompt_submit":
        text = o.raw or o.title.removeprefix("Prompt: ")
        return [ev("", "prompt", _cut(text) or "Prompt", body=text)]
    if hook in ("pre_tool_use", "post_tool_use", "post_tool_failure") and (tool or o.raw):
        given, out = split_tool_text(o.raw)
        name = tool or "tool"
        call = ev(":call", "tool_call", f"{name} ▸ call", tool_name=tool, tool_input=given)
        if hook == "pre_tool_use":
            return [call]
        if hook == "post_tool_failure":
            return [call, ev(":error", "tool_error", f"{name} ▸ error", tool_name=tool,
                             tool_output=out or o.narrative)]  # fmt: skip
        return [call, ev(":result", "tool_result", f"{name} ▸ result", tool_name=tool,
                         tool_output=out)]  # fmt: skip
    if hook == "stop" and o.raw:
        return [ev("", "response", _cut(o.raw) or "Response", body=o.raw)]
    if hook == "session_start":
        return [ev("", "session_start", "Session start")]
    if hook == "session_end":
        return [ev("", "session_end", "Session end")]
    return [ev("", "hook", _cut(o.title or hook.replace("_", " ")), body=o.narrative or None)]


def project(session_id: str, observations: list[Observation]) -> Timeline:
    """The timeline of a session's observations, oldest first."""
    obs = sorted(observations, key=lambda o: (o.timestamp, o.id))
    events = [e for o in obs for e in events_of(o)]
    if not events:
        now = clock.iso(clock.now())
        return Timeline(
            session_id=session_id, started_at=now, ended_at=now, total_duration_ms=0,
            event_count=0, events=[],
        )  # fmt: skip
    start = clock.parse(events[0].ts)
    real = len({e.ts for e in events}) > 1 and start != clock.EPOCH
    synthetic = 0
    for e in events:
        at = clock.parse(e.ts)
        if real and at != clock.EPOCH:
            # Events of one observation share its timestamp: the later ones follow the
            # earlier ones by their reading time.
            e.offset_ms = max(int((at - start).total_seconds() * 1000), synthetic)
        else:
            e.offset_ms = synthetic
        synthetic = e.offset_ms + e.duration_ms
    last = events[-1]
    return Timeline(
        session_id=session_id,
        started_at=events[0].ts,
        ended_at=last.ts,
        total_duration_ms=last.offset_ms + last.duration_ms,
        event_count=len(events),
        events=events,
    )
