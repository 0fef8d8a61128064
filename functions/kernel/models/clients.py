"""The process's model clients: `client(engine)` is the one for the environment's settings
(one per process, so breakers and usage are the process's); a caller with its own settings
(a test, a config object) gets its own client for them, its usage recorded under its own
key."""

from __future__ import annotations

from engine import Client
from functions.kernel.models.client import ModelClient
from functions.kernel.models.settings import ModelSettings
from functions.kernel.models.usage import UsageSink
from functions.kernel.scrub import scrub

_clients: dict[ModelSettings, tuple[ModelClient, UsageSink | None]] = {}


def client(engine: Client | None = None, settings: ModelSettings | None = None) -> ModelClient:
    """The client for `settings` (default: the environment's), its usage recorded through
    `engine` once one is given."""
    s = settings if settings is not None else ModelSettings.from_env()
    mc, sink = _clients.get(s, (None, None))
    if mc is None:
        mc = ModelClient(s, scrub)
    if sink is None and engine is not None:
        sink = UsageSink(mc, engine, suffix=str(len(_clients)) if _clients else "")
        mc.on_usage = sink.changed
    _clients[s] = (mc, sink)
    return mc
