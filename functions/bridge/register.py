"""The MEMORY.md bridge's operations."""

from __future__ import annotations

from engine import Worker
from functions.bridge.service import BridgeService


def register(worker: Worker, service: BridgeService | None = None) -> BridgeService:
    svc = service or BridgeService()
    worker.on_start(svc.start)
    worker.serve(svc)
    return svc
