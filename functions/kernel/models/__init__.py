"""The model provider layer: every model call of the memory service goes through a
`ModelClient` from here (docs/MODELS.md).

`client(engine_client)` is the process's client for the environment's settings (one per
process: breakers and usage are the process's); a caller with its own settings (a test, a
config object) gets its own client for them. Keyless when no provider is configured:
`enabled` is False and every `ask` answers None, so the caller's keyless path runs.
"""

from __future__ import annotations

from engine import Client
from functions.kernel.models.client import ModelClient, ModelError
from functions.kernel.models.settings import ModelSettings, Provider
from functions.kernel.models.usage import MODELS_BUCKET, UsageOut, UsageSink, read
from functions.kernel.scrub import scrub

__all__ = [
    "MODELS_BUCKET",
    "ModelClient",
    "ModelError",
    "ModelSettings",
    "Provider",
    "UsageOut",
    "client",
    "close_all",
    "read",
]

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


async def close_all() -> None:
    """Flush usage and close connections (a worker's stop)."""
    for mc, sink in list(_clients.values()):
        if sink is not None:
            await sink.close()
        await mc.close()
    _clients.clear()
