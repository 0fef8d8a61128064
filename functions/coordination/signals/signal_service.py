"""Signals' operations: send and read."""

from __future__ import annotations

from engine import Tool, operation
from functions.coordination.signals import core
from functions.coordination.signals.wire import SignalOut, SignalReadIn, SignalSendIn, SignalsOut
from functions.coordination.store import ConceptService, CoordOwner, rest


class SignalService(ConceptService[CoordOwner]):
    @operation(
        "mem::signal-send",
        description="Send a message to another agent or broadcast. Supports threading, "
        "typed messages, and TTL expiration.",
        http=rest("POST", "signals/send", status=201),
        tool=Tool("memory_signal_send"),
    )
    async def signal_send(self, req: SignalSendIn) -> SignalOut:
        return await core.send(self.cs, req)

    @operation(
        "mem::signal-read",
        description="Read messages for an agent. Marks delivered messages as read.",
        http=rest("GET", "signals"),
        tool=Tool("memory_signal_read"),
    )
    async def signal_read(self, req: SignalReadIn) -> SignalsOut:
        return await core.read(self.cs, req)
