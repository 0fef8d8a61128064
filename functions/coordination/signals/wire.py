"""Signals' wire: sending and reading messages between agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from functions.coordination.inputs import AgentId, Limit, Millis
from functions.coordination.records import Signal, SignalType
from functions.kernel.names import NONBLANK
from functions.kernel.views import view

# To the type checker a view is its record (the same attributes); at run time it is the
# camelCase type `view` makes (functions.kernel.views).
if TYPE_CHECKING:
    SignalView = Signal
else:
    SignalView = view(Signal)


class SignalSendIn(msgspec.Struct, rename="camel", kw_only=True):
    from_: Annotated[str, msgspec.Meta(min_length=1, max_length=256, pattern=NONBLANK)]
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=20_000, pattern=NONBLANK)]
    to: AgentId = ""
    type: SignalType = "info"
    reply_to: str = ""
    thread_id: str = ""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    expires_in_ms: Millis | None = None


class SignalOut(msgspec.Struct):
    success: bool
    signal: SignalView


class SignalReadIn(msgspec.Struct, rename="camel", kw_only=True):
    agent_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
    unread_only: bool | str = False
    thread_id: str = ""
    type: SignalType | None = None
    limit: Limit = 50


class SignalsOut(msgspec.Struct):
    success: bool
    signals: list[SignalView]
