"""What crosses the REST and bus boundaries: request Structs (camelCase on the wire, as the
upstream clients send them) and the camelCase view of our snake_case stored records."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from functions.records import HookType

NonEmpty = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
Strategy = Literal["merge", "replace", "skip"]

_CAMEL = re.compile(r"_([a-z0-9])")
_SNAKE = re.compile(r"(?<=[a-z0-9])([A-Z])")


def camel(name: str) -> str:
    return _CAMEL.sub(lambda m: m.group(1).upper(), name)


def snake(name: str) -> str:
    return _SNAKE.sub(lambda m: "_" + m.group(1).lower(), name)


def to_wire(value: Any) -> Any:
    """A record (or list/dict of records) as upstream-style camelCase JSON builtins, with
    every field present (stored records omit defaults; clients should not have to know
    them)."""
    if isinstance(value, msgspec.Struct):
        return {
            camel(f): to_wire(getattr(value, f))
            for f in value.__struct_fields__
            if getattr(value, f) is not msgspec.UNSET
        }
    if isinstance(value, dict):
        return {camel(str(k)): to_wire(x) for k, x in value.items()}
    if isinstance(value, list | tuple):
        return [to_wire(x) for x in value]
    return msgspec.to_builtins(value)


def from_wire(value: Any, type_: Any) -> Any:
    """Accept camelCase or snake_case keys (imports of our own or upstream exports)."""
    if isinstance(value, dict):
        value = {snake(k): x for k, x in value.items()}
    return msgspec.convert(value, type_)


def wire_schema(type_: Any) -> dict[str, Any]:
    """JSON Schema of a snake_case record, with property names as `to_wire` emits them.

    Definitions are renamed `Wire<Name>`: the OpenAPI document merges every worker's
    definitions into one namespace, where another worker may describe the snake_case
    record under its plain name.
    """
    schema: dict[str, Any] = _camel_schema(msgspec.json.schema(type_))
    text = msgspec.json.encode(schema).decode().replace('"#/$defs/', '"#/$defs/Wire')
    out: dict[str, Any] = msgspec.json.decode(text)
    out["$defs"] = {f"Wire{k}": v for k, v in out.get("$defs", {}).items()}
    return out


def _camel_schema(s: Any) -> Any:
    if isinstance(s, dict):
        out: dict[str, Any] = {}
        for k, v in s.items():
            if k == "properties" and isinstance(v, dict):
                out[k] = {camel(p): _camel_schema(x) for p, x in v.items()}
            elif k == "required" and isinstance(v, list):
                out[k] = [camel(p) for p in v]
            else:
                out[k] = _camel_schema(v)
        return out
    if isinstance(s, list):
        return [_camel_schema(x) for x in s]
    return s


# ---- requests ------------------------------------------------------------------------
class ObserveIn(msgspec.Struct, rename="camel", kw_only=True):
    hook_type: HookType
    session_id: NonEmpty
    timestamp: NonEmpty
    data: dict[str, Any]
    project: str = ""
    cwd: str = ""
    event_id: str | None = None
    agent_id: str = ""


class ObserveOut(msgspec.Struct, rename="camel", kw_only=True):
    status: Literal["accepted", "duplicate", "retrying"]
    observation_id: str
    boot_id: str
    accepted_at: str
    durable_after_ms: int


class SessionStartIn(msgspec.Struct, rename="camel", kw_only=True):
    session_id: NonEmpty
    project: str = ""
    cwd: str = ""
    agent_id: str = ""


class SessionEndIn(msgspec.Struct, rename="camel", kw_only=True):
    session_id: NonEmpty


class RememberIn(msgspec.Struct, rename="camel", kw_only=True):
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=100_000)]
    type: str = "fact"
    title: str = ""
    concepts: list[str] = msgspec.field(default_factory=list)
    files: list[str] = msgspec.field(default_factory=list)
    project: str = ""
    agent_id: str = ""
    ttl_days: Annotated[float, msgspec.Meta(gt=0)] | None = None
    session_id: str = ""


class ForgetIn(msgspec.Struct, rename="camel", kw_only=True):
    memory_id: str | None = None
    memory_ids: list[str] = msgspec.field(default_factory=list)
    observation_ids: list[str] = msgspec.field(default_factory=list)
    session_id: str | None = None
    reason: str = ""
    agent_id: str = ""


class ListIn(msgspec.Struct, rename="camel", kw_only=True):
    """Query of the list routes (`?limit=&sessionId=&project=&agentId=`)."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 100
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0
    session_id: str = ""
    project: str = ""
    agent_id: str = ""


class ExportIn(msgspec.Struct, rename="camel", kw_only=True):
    max_sessions: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 1000
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0
    project: str = ""
    agent_id: str = ""


class ImportIn(msgspec.Struct, rename="camel", kw_only=True):
    strategy: Strategy = "merge"
    data: dict[str, Any] | None = None
    export_data: dict[str, Any] | None = None
    """Upstream clients send the export document under `exportData`."""
    agent_id: str = ""


class CaptureRetryIn(msgspec.Struct, rename="camel", kw_only=True):
    ids: list[str] = msgspec.field(default_factory=list)
    """Observation ids to replay; empty replays every dead letter and the inbox."""


class GetIn(msgspec.Struct, rename="camel", kw_only=True):
    id: NonEmpty
    agent_id: str = ""
