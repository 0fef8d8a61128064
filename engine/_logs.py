"""Structured logs: a copy of each record on the bus (bounded ENGINE_LOGS stream) for the
console, carrying the trace and span ids of the current call."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import msgspec

from engine import _tracing

LOGS_STREAM = "ENGINE_LOGS"
LOGS_SUBJECT = "engine.logs"  # engine.logs.<service>


class LogRecord(msgspec.Struct, omit_defaults=True):
    ts: float
    level: str
    logger: str
    message: str
    service: str = ""
    trace_id: str = ""
    span_id: str = ""
    exc: str = ""


def _record(rec: logging.LogRecord, service: str, fmt: logging.Formatter) -> LogRecord:
    ctx = _tracing.current_context()
    out = LogRecord(
        ts=rec.created,
        level=rec.levelname,
        logger=rec.name,
        message=rec.getMessage(),
        service=service,
    )
    if ctx is not None and ctx.is_valid:
        out.trace_id = ctx.trace_id
        out.span_id = ctx.span_id
    if rec.exc_info:
        out.exc = fmt.formatException(rec.exc_info)
    return out


class BusLogHandler(logging.Handler):
    """Publishes records (INFO and above) on engine.logs.<service>; never blocks the caller."""

    def __init__(self, nc: Any, loop: asyncio.AbstractEventLoop, service: str) -> None:
        super().__init__(logging.INFO)
        self.nc = nc
        self.loop = loop
        self.service = service
        self.subject = f"{LOGS_SUBJECT}.{re.sub(r'[^A-Za-z0-9_-]', '_', service)}"
        self._fmt = logging.Formatter()
        self._tasks: set[asyncio.Future[None]] = set()

    def _schedule(self, data: bytes) -> None:
        t = asyncio.ensure_future(self.nc.publish(self.subject, data))
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    def emit(self, record: logging.LogRecord) -> None:
        if self.nc.is_closed or record.name.startswith("nats"):
            return
        try:
            data = msgspec.json.encode(_record(record, self.service, self._fmt))
            self.loop.call_soon_threadsafe(self._schedule, data)
        except RuntimeError:
            pass  # the loop is closed: the record stays in the file log only


def attach_log_stream(nc: Any, loop: asyncio.AbstractEventLoop, service: str) -> None:
    logging.getLogger().addHandler(BusLogHandler(nc, loop, service))
