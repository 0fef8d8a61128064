"""Tracing for trigger and worker authors: spans around work the engine does not see
(an HTTP request, a cron firing, a console action). Calls, executions and KV writes are
traced by the engine itself."""

from engine._tracing import (
    TRACES_STREAM,
    TRACES_SUBJECT,
    LeanSpan,
    SpanContext,
    SpanKind,
    SpanRecord,
    attach,
    current_context,
    detach,
    enabled,
    extract,
    fail,
    inject,
    scrub_payload,
    set_enabled,
    setup,
    shutdown,
    start,
    untraced,
)

__all__ = [
    "TRACES_STREAM",
    "TRACES_SUBJECT",
    "LeanSpan",
    "SpanContext",
    "SpanKind",
    "SpanRecord",
    "attach",
    "current_context",
    "detach",
    "enabled",
    "extract",
    "fail",
    "inject",
    "scrub_payload",
    "set_enabled",
    "setup",
    "shutdown",
    "start",
    "untraced",
]
