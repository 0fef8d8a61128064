"""The camelCase views of stored records: what the REST API, the bus and MCP tools return.

Records are stored snake_case (`functions.kernel.records`); clients read camelCase with every
field present (upstream's shape). `view(Record)` is a Struct type of the same fields
renamed camelCase, nested records replaced by their views, so a response type declares
exactly what goes on the wire and its JSON Schema is the API's. `as_view` converts."""

from __future__ import annotations

import functools
import types
import typing
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from functions.kernel.records import (
    AuditEntry,
    Lesson,
    Memory,
    Observation,
    Session,
    SessionSummary,
)

T = TypeVar("T")


def _viewed(tp: Any) -> Any:
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return view(tp)
    origin = typing.get_origin(tp)
    if origin is None:
        return tp
    args = tuple(_viewed(a) for a in typing.get_args(tp))
    if origin in (types.UnionType, typing.Union):
        return functools.reduce(lambda a, b: a | b, args)
    if origin is typing.Annotated:
        return typing.Annotated[(args[0], *typing.get_args(tp)[1:])]
    if origin is typing.Literal:
        return tp
    return origin[args]


@functools.cache
def view(record: type[msgspec.Struct]) -> Any:
    """The camelCase view type of a record type (cached: one class per record)."""
    info = msgspec.inspect.type_info(record)
    assert isinstance(info, msgspec.inspect.StructType)
    hints = typing.get_type_hints(record, include_extras=True)
    fields: list[tuple[str, Any, Any] | tuple[str, Any]] = []
    for f in msgspec.structs.fields(record):
        tp = _viewed(hints[f.name])
        if f.default is not msgspec.NODEFAULT:
            fields.append((f.name, tp, f.default))
        elif f.default_factory is not msgspec.NODEFAULT:
            fields.append((f.name, tp, msgspec.field(default_factory=f.default_factory)))
        else:
            fields.append((f.name, tp))
    tag = record.__struct_config__.tag
    return msgspec.defstruct(
        record.__name__,
        fields,
        rename="camel",
        kw_only=True,
        tag=tag,
        tag_field=record.__struct_config__.tag_field if tag else None,
        module=__name__,
    )


def as_view(value: Any, type_: Any) -> Any:
    """`value` (records, lists and dicts of them) as `type_` built from views."""
    return msgspec.convert(value, type_, from_attributes=True)


def wire_of(record: msgspec.Struct) -> dict[str, Any]:
    """A record of any type as the JSON object its view is on the wire."""
    out: dict[str, Any] = msgspec.to_builtins(as_view(record, view(type(record))))
    return out


# The views of the kernel's records. To the type checker a view is its record: the same
# attributes under the same names (only the names on the wire differ), so code that builds
# or reads a view type-checks; at run time it is the camelCase type `view` makes.
if TYPE_CHECKING:
    SessionView = Session
    ObservationView = Observation
    MemoryView = Memory
    AuditEntryView = AuditEntry
    SummaryView = SessionSummary
    LessonView = Lesson
else:
    SessionView = view(Session)
    ObservationView = view(Observation)
    MemoryView = view(Memory)
    AuditEntryView = view(AuditEntry)
    SummaryView = view(SessionSummary)
    LessonView = view(Lesson)
