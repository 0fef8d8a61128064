"""What crosses coordination's REST, bus and MCP boundaries, in the parts every concept's
wire (`<concept>/wire.py`) is made of: requests as upstream's clients send them (camelCase;
its MCP tools send lists as comma-separated strings and flags as "true"), replies in
upstream's shapes (`{success, action}`, `{success: false, error, heldBy, expiresAt}`),
records as their camelCase views. Here: the constrained field types the requests share,
upstream's lenient readings of a flag or a JSON value, and the event state triggers deliver."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import msgspec

from engine import FunctionError
from functions.kernel.names import NONBLANK

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=500, pattern=NONBLANK)]
Text = Annotated[str, msgspec.Meta(max_length=20_000)]
Priority = Annotated[int, msgspec.Meta(ge=1, le=10)]
Limit = Annotated[int, msgspec.Meta(ge=1, le=1000)]
Millis = Annotated[float, msgspec.Meta(gt=0, le=365 * 86_400_000)]
"""Milliseconds, up to a year (a TTL or deadline past it is a mistake, not a plan)."""
AgentId = Annotated[str, msgspec.Meta(max_length=256)]


def flag(value: bool | str) -> bool:
    """A boolean as JSON sends it, or as upstream's tools do ("true")."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return value


def json_value(value: Any, field: str) -> Any:
    """An object sent as itself, or as a JSON string (upstream's tools send `config` and
    `result` as JSON text)."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            raise FunctionError(
                "UNPROCESSABLE", f"{field} is not valid JSON", field=field
            ) from None
    return value


# ---- what triggers deliver -----------------------------------------------------------
class StateChange(msgspec.Struct, kw_only=True):
    """A state trigger's event (triggers/state.py)."""

    bucket: str
    key: str
    op: Literal["created", "updated", "deleted"]
    revision: int
    old: Any = None
    new: Any = None
