"""Trigger declarations: a binding of an event source to a function, stored durably in KV.

Workers declare triggers when they start (and config/engine.yaml may declare more); the
trigger workers (triggers/) watch the bucket and apply changes live.
"""

from __future__ import annotations

import functools
import hashlib
import re
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import msgspec

from engine.protocol import validate_function_id

TRIGGERS_BUCKET = "engine_triggers"
PLUGIN_GROUP = "engine.triggers"
"""The entry-point group of trigger plug-ins: `<kind> = "<module>:<class>"` (pyproject.toml).
The one list of kinds: declarations are checked against it, processes host from it."""
_KIND_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@functools.cache
def plugins() -> dict[str, EntryPoint]:
    """The installed trigger plug-ins by kind."""
    return {ep.name: ep for ep in entry_points(group=PLUGIN_GROUP)}


def check_kind(kind: str) -> str:
    if not _KIND_RE.match(kind):
        raise ValueError(f"trigger kind {kind!r} must be a short lower-case name")
    known = plugins()
    if known and kind not in known:
        raise ValueError(
            f"unknown trigger kind {kind!r}; installed plug-ins: {', '.join(sorted(known))}"
        )
    return kind


class TriggerSpec(msgspec.Struct, omit_defaults=True, kw_only=True):
    kind: str
    function_id: str
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str = ""
    """Stable identity; derived from kind, function and config when left empty."""
    worker: str = ""

    def __post_init__(self) -> None:
        validate_function_id(self.function_id)
        if not self.id:
            digest = hashlib.sha256(
                msgspec.json.encode([self.kind, self.function_id, self.config], order="sorted")
            ).hexdigest()[:16]
            self.id = digest

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.id}"


class HttpRequest(msgspec.Struct, omit_defaults=True, kw_only=True):
    """What an `http` trigger hands its function."""

    method: str
    path: str
    path_params: dict[str, str] = msgspec.field(default_factory=dict)
    query: dict[str, str] = msgspec.field(default_factory=dict)
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    """Lower-cased names. Authorization is removed once the trigger has checked it."""
    body: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    """The JSON body as raw bytes, already checked to be valid JSON by the trigger; UNSET
    when the request had none (msgspec cannot decode `Raw | None`: it drops the Raw)."""

    def json(self, type: Any = Any) -> Any:
        if not isinstance(self.body, msgspec.Raw):
            return msgspec.json.decode(b"{}", type=type)
        return msgspec.json.decode(self.body, type=type)


class HttpResponse(msgspec.Struct, omit_defaults=True, kw_only=True):
    """What the function returns to the `http` trigger."""

    status: int = 200
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    body: Any = None
    """Encoded as JSON unless `content_type` says otherwise (then a str)."""
    content_type: str = "application/json"


def trigger_spec(kind: str, function_id: str, **config: Any) -> TriggerSpec:
    check_kind(kind)
    tid = str(config.pop("id", ""))
    return TriggerSpec(kind=kind, function_id=function_id, config=config, id=tid)
