"""The engine's public API: what a worker author imports.

from engine import Worker, Context, FunctionError

worker = Worker("example")

@worker.function("example::echo")
async def echo(req: EchoIn, ctx: Context) -> EchoOut:
    return EchoOut(text=req.text)

if __name__ == "__main__":
    worker.run()

Names are imported on first use (PEP 562), so a command-line tool that only needs paths or
errors does not pay for loading nats-py.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine import tracing
    from engine._bus_errors import BUS_ERRORS, BusError, WrongLastSequence
    from engine._client import Client
    from engine._connect import connect, reconnected_event
    from engine._context import Context
    from engine._discovery import FunctionInfo, discover, service_infos
    from engine._errors import ErrorCode, FunctionError, invalid_request
    from engine._jetstream_api import PubAck, StreamInfo
    from engine._kv import Bucket, CasConflict, Change, Entry, Presence
    from engine._objects import Objects
    from engine._operations import Http, NoArgs, Tool, operation
    from engine._reconcile import ConfigDrift
    from engine._scan import StreamMessage
    from engine._streams import Follower, Source, SourceStatus, Stream
    from engine._triggers import TRIGGERS_BUCKET, HttpRequest, HttpResponse, TriggerSpec
    from engine._watch import SnapshotEnd, Watch
    from engine._worker import FunctionSpec, Worker
    from engine._worker_process import still_starting
    from engine.protocol import subject_for

_WHERE = {
    "Client": "engine._client",
    "connect": "engine._connect",
    "reconnected_event": "engine._connect",
    "Context": "engine._context",
    "FunctionInfo": "engine._discovery",
    "discover": "engine._discovery",
    "service_infos": "engine._discovery",
    "ErrorCode": "engine._errors",
    "FunctionError": "engine._errors",
    "invalid_request": "engine._errors",
    "Http": "engine._operations",
    "NoArgs": "engine._operations",
    "Tool": "engine._operations",
    "operation": "engine._operations",
    "subject_for": "engine.protocol",
    "CasConflict": "engine._kv",
    "Change": "engine._kv",
    "Entry": "engine._kv",
    "Bucket": "engine._kv",
    "TRIGGERS_BUCKET": "engine._triggers",
    "HttpRequest": "engine._triggers",
    "HttpResponse": "engine._triggers",
    "TriggerSpec": "engine._triggers",
    "FunctionSpec": "engine._worker",
    "Worker": "engine._worker",
    "still_starting": "engine._worker_process",
    # bus: streams, object stores, KV scans and watches
    "BUS_ERRORS": "engine._bus_errors",
    "BusError": "engine._bus_errors",
    "WrongLastSequence": "engine._bus_errors",
    "PubAck": "engine._jetstream_api",
    "StreamInfo": "engine._jetstream_api",
    "Objects": "engine._objects",
    "ConfigDrift": "engine._reconcile",
    "StreamMessage": "engine._scan",
    "Presence": "engine._kv",
    "Follower": "engine._streams",
    "Stream": "engine._streams",
    "Source": "engine._streams",
    "SourceStatus": "engine._streams",
    "SnapshotEnd": "engine._watch",
    "Watch": "engine._watch",
}


def __getattr__(name: str) -> Any:
    if name == "tracing":
        return importlib.import_module("engine.tracing")
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


__all__ = [
    "BUS_ERRORS",
    "TRIGGERS_BUCKET",
    "Bucket",
    "BusError",
    "CasConflict",
    "Change",
    "Client",
    "ConfigDrift",
    "Context",
    "Entry",
    "ErrorCode",
    "Follower",
    "FunctionError",
    "FunctionInfo",
    "FunctionSpec",
    "Http",
    "HttpRequest",
    "HttpResponse",
    "NoArgs",
    "Objects",
    "Presence",
    "PubAck",
    "SnapshotEnd",
    "Source",
    "SourceStatus",
    "Stream",
    "StreamInfo",
    "StreamMessage",
    "Tool",
    "TriggerSpec",
    "Watch",
    "Worker",
    "WrongLastSequence",
    "connect",
    "discover",
    "invalid_request",
    "operation",
    "reconnected_event",
    "service_infos",
    "still_starting",
    "subject_for",
    "tracing",
]
