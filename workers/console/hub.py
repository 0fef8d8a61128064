"""What every console handler reaches: the bus client, settings and the in-memory tails."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from starlette.requests import Request

from engine import Client
from workers.console.inventory import Inventory
from workers.console.logs import LogStore
from workers.console.settings import ConsoleSettings
from workers.console.traces import TraceStore


@dataclass
class Hub:
    client: Client
    settings: ConsoleSettings
    inventory: Inventory
    traces: TraceStore
    logs: LogStore
    http: httpx.AsyncClient


def hub(request: Request) -> Hub:
    h: Hub = request.app.state.hub
    return h
